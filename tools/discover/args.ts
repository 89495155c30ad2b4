/** Command-line options shared by discover and status. */
import { SshOptions } from "./ssh";

export class UsageError extends Error {}

export interface CommonOptions {
    target: string;
    json: boolean;
    ssh: SshOptions;
    concurrency: number;
}

/**
 * Parses argv; `extra(flag, value)` handles a tool's own flags and returns true when it took the
 * flag's value (false: a flag without value), or undefined when the flag is not its own.
 */
export function parseCommonArgs(argv: string[], extra: (flag: string, value: () => string) => boolean | undefined): CommonOptions {
    const opts: Partial<CommonOptions> = { json: false, concurrency: 16 };
    const ssh: SshOptions = { acceptUnpinned: false, connectTimeout: 10, commandTimeout: 120 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const value = () => {
            const v = argv[++i];
            if (v === undefined || v.startsWith("--")) {
                throw new UsageError(`${a} needs a value`);
            }
            return v;
        };
        if (a === "--json") opts.json = true;
        else if (a === "--identity") ssh.identity = value();
        else if (a === "--accept-unpinned") ssh.acceptUnpinned = true;
        else if (a === "--concurrency") opts.concurrency = positiveInt(a, value());
        else if (a === "--timeout") ssh.commandTimeout = positiveInt(a, value());
        else if (a === "--help" || a === "-h") throw new UsageError("");
        else if (extra(a, value) !== undefined) continue;
        else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
        else if (opts.target === undefined) opts.target = a;
        else throw new UsageError(`unexpected argument ${a}`);
    }
    if (!opts.target) {
        throw new UsageError("give a stack name or stack file");
    }
    return { ...(opts as CommonOptions), ssh };
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
  --json             one JSON object on stdout`;
