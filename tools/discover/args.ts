/** Command-line handling shared by discover and status. */
import { flagsNpmTook, npmTookMessage } from "../npmArgs";
import { Day2ConfigError } from "./stack";
import { SshOptions } from "./ssh";
import { versionText } from "../version";

export class UsageError extends Error {}

export interface CommonOptions {
    target: string;
    json: boolean;
    ssh: SshOptions;
    concurrency: number;
}

/** A flag's handler: gets the flag's value when it takes one. */
export type FlagHandlers = Record<string, { value: boolean; set: (value: string) => void }>;

/** Parses argv into the common options; `own` adds a tool's flags. */
/** `--help`: the usage on stdout, exit 0 (what a tool's help does). */
export class HelpRequested extends Error {}
/** `--version`: the version and what it pins on stdout, exit 0 (tools/version.ts). */
export class VersionRequested extends Error {}

export function parseCommonArgs(argv: string[], own: FlagHandlers): CommonOptions {
    const opts: CommonOptions = { target: "", json: false, concurrency: 16, ssh: { acceptUnpinned: false, connectTimeout: 10, commandTimeout: 120 } };
    const flags: FlagHandlers = {
        "--json": { value: false, set: () => (opts.json = true) },
        "--identity": { value: true, set: (v) => (opts.ssh.identity = v) },
        "--accept-unpinned": { value: false, set: () => (opts.ssh.acceptUnpinned = true) },
        "--concurrency": { value: true, set: (v) => (opts.concurrency = positiveInt("--concurrency", v)) },
        "--timeout": { value: true, set: (v) => (opts.ssh.commandTimeout = positiveInt("--timeout", v)) },
        ...own,
    };
    const took = flagsNpmTook(Object.keys(flags));
    if (took.length > 0) {
        throw new UsageError(npmTookMessage(process.env.npm_lifecycle_event ?? "<script>", took));
    }
    const args = [...argv];
    while (args.length > 0) {
        const arg = args.shift()!;
        if (arg === "--help" || arg === "-h") {
            throw new HelpRequested();
        }
        if (arg === "--version") {
            throw new VersionRequested();
        }
        const flag = flags[arg];
        if (flag) {
            const value = flag.value ? args.shift() : "";
            if (value === undefined || value.startsWith("--")) {
                throw new UsageError(`${arg} needs a value`);
            }
            flag.set(value);
        } else if (arg.startsWith("--")) {
            throw new UsageError(`unknown option ${arg}`);
        } else if (!opts.target) {
            opts.target = arg;
        } else {
            throw new UsageError(`unexpected argument ${arg}`);
        }
    }
    if (!opts.target) {
        throw new UsageError("give a stack name or stack file");
    }
    return opts;
}

export function positiveInt(flag: string, v: string): number {
    if (!/^[1-9][0-9]*$/.test(v)) {
        throw new UsageError(`${flag} needs a positive whole number, got ${v}`);
    }
    return Number(v);
}

export const commonUsage = `  --identity FILE    SSH private key (default: the keys in ssh-agent); the stack's secure:
                     key cannot be decrypted offline
  --accept-unpinned  also connect to nodes whose host key is not pinned in ssh.hostKeys,
                     trusting the key they show (printed, to pin it)
  --concurrency N    nodes contacted at once (default 16)
  --timeout SECONDS  per node command (default 120)
  --json             one JSON object on stdout
  --version          print this version, every image it deploys and the Pulumi packages and
                     plugins it pins (what an air-gapped site mirrors), and exit 0`;

/** Runs a tool's main: its exit code, or 3 with the usage or config error on stderr. */
export function runCli(main: () => Promise<number>, usage: string): void {
    main().then(
        (code) => (process.exitCode = code),
        (e) => {
            if (e instanceof HelpRequested) {
                console.log(usage);
                process.exitCode = 0;
                return;
            }
            if (e instanceof VersionRequested) {
                console.log(versionText());
                process.exitCode = 0;
                return;
            }
            if (e instanceof UsageError) {
                console.error(e.message ? `${e.message}\n\n${usage}` : usage);
            } else if (e instanceof Day2ConfigError) {
                console.error(e.message);
            } else {
                console.error(e instanceof Error ? e.stack ?? e.message : e);
            }
            process.exitCode = 3;
        },
    );
}
