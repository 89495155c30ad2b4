import * as fs from "fs";
import * as path from "path";
import { PackConfig, evaluatePolicies, formatViolations, hasMandatoryViolations } from "../policy/policies";
import { diffPlans } from "./plan/diff";
import { monLeaveRefusals, replicaRefusals } from "./plan/cephShrink";
import { checkStackFileConfigSize } from "./plan/configSize";
import { loopbackAdvisories } from "./plan/loopback";
import { checkOutContents, outFiles, readBundle, writeOutDir } from "./plan/outDir";
import { PlanConfig, PlanRun } from "./plan/model";
import { renderChanges, renderTree } from "./plan/render";
import { renderRollOrder, rollAdvisories } from "./plan/roll";
import { defaultNodesPerPiece, defaultNodesPerPieceWithBase, lvmNodesInConfig, planInPieces, Slots } from "./plan/pieces";
import { writeJsonStreaming } from "./plan/jsonOut";
import { defaultProgram, planConfig } from "./plan/runner";
import { readStackArg } from "./plan/stackFile";
import { placeholderAdvisories } from "./plan/placeholders";
import { projectOfProgram } from "./plan/project";
import { readStackAtRevision } from "./plan/gitRevision";
import { CliInputError, checkOutDir, readPolicyPackConfig } from "./plan/cliInputs";
import { parseSavedPlan, readSavedPlanText, savedAsBase } from "./plan/savedPlan";
import { renderScriptSetChanges } from "./plan/scriptSets";
import { printableLines } from "../components/config/printable";
import { flagsNpmTook, npmTookMessage } from "./npmArgs";
import { versionText } from "./version";

const usage = `usage: npm run plan -- <stack|file> [--json] [--diff <stack|file> | --diff-ref <git rev> | --diff-plan old.json] [--out dir [--force]] [--policy-pack-config file] [--program file [--project name]] [--over-config-limit] | --version | --help

  <stack|file>   a stack name (stacks/Pulumi.<stack>.yaml; lower-case letters, digits, "-")
                 or the path of an existing stack file (it has a "/" or ends in .yaml)
  --json         print { resources, violations } as JSON (secrets as "[secret]")
  --diff OTHER   show what changes going from OTHER (the current config) to <stack|file>
  --diff-ref REV              the same from <stack|file> as it was at git revision REV, with the
                              config files it listed as they were there (a pull request's base)
  --diff-plan OLD.json        the same against a plan saved with --json, also by another version
                              of this program (what an upgrade of zcloud-storage does to the stack)
  --out DIR      write the plan for review to DIR (new or empty): manifests/<namespace>/<kind>-<name>.yaml,
                 node-commands/<resource>.<phase>.sh with a header (node, address, devices, what it
                 does), node-scripts/ (the script bundles they run), index.txt in apply order
  --force        with --out: replace what an earlier --out wrote in DIR (only that; other files refuse)
  --policy-pack-config FILE   policy levels and parameters, as for pulumi preview
  --program FILE              plan your own Pulumi program (a module that uses the components)
                              with the stack's config, instead of this project's index.ts, as the
                              project named in the first Pulumi.yaml of its directory or above
  --project NAME              plan the program as Pulumi project NAME instead (the program's own
                              config reads NAME:... keys; a stack file key without a namespace is NAME's)
  --over-config-limit         plan a config too big for Pulumi to pass to the program (over 128 KiB:
                              pulumi preview/up cannot start it) anyway: to measure, or before a split
  --version      print this version, every image it deploys and the Pulumi packages and plugins
                 it pins (what an air-gapped site mirrors), and exit 0

A stack of more than ${defaultNodesPerPiece} LVM nodes (${defaultNodesPerPieceWithBase} with --diff) is planned in even pieces of at most
that many nodes, each in its own process, two at a time (the output is the same;
ZCLOUD_PLAN_NODES_PER_PIECE sets the most).

Exit codes: 0 ok, 1 config errors or mandatory policy violations, 2 usage or program errors.`;

interface Options {
    target: string;
    json: boolean;
    diff?: string;
    diffRef?: string;
    diffPlan?: string;
    out?: string;
    force: boolean;
    overConfigLimit: boolean;
    policyConfig?: string;
    program?: string;
    project?: string;
}

function parseArgs(argv: string[]): Options {
    const opts: Partial<Options> = { json: false, force: false, overConfigLimit: false };
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
        else if (a === "--diff") opts.diff = value();
        else if (a === "--diff-ref") opts.diffRef = value();
        else if (a === "--diff-plan") opts.diffPlan = value();
        else if (a === "--out") opts.out = value();
        else if (a === "--force") opts.force = true;
        else if (a === "--over-config-limit") opts.overConfigLimit = true;
        else if (a === "--policy-pack-config") opts.policyConfig = value();
        else if (a === "--program") opts.program = value();
        else if (a === "--project") opts.project = value();
        else if (a === "--help" || a === "-h") throw new HelpRequested();
        else if (a === "--version") throw new VersionRequested();
        else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
        else if (opts.target === undefined) opts.target = a;
        else throw new UsageError(`unexpected argument ${a}`);
    }
    if (!opts.target) {
        throw new UsageError("give a stack name or stack file");
    }
    const bases = (["diff", "diffRef", "diffPlan"] as const).filter((k) => opts[k] !== undefined);
    if (bases.length > 1) {
        throw new UsageError(`${bases.map((k) => `--${k.replace(/[A-Z]/, (c) => `-${c.toLowerCase()}`)}`).join(" and ")}: give one base to compare with`);
    }
    if (opts.force && opts.out === undefined) {
        throw new UsageError("--force goes with --out: it replaces what an earlier --out wrote");
    }
    if (opts.project !== undefined && opts.program === undefined) {
        throw new UsageError("--project goes with --program: it names the project your program runs as");
    }
    return opts as Options;
}

/**
 * Every line the plan prints, with what came from input (config keys and values, a saved plan's
 * names, file names) shown as escapes: no terminal sequence or forged line reaches a reviewer's
 * terminal or a PR summary. The places that quote input escape their own line breaks first.
 */
const say = (text: string) => console.log(printableLines(text));
const sayErr = (text: unknown) => console.error(printableLines(String(text)));

class UsageError extends Error {}
/** `--help`: the usage on stdout, exit 0. */
class HelpRequested extends Error {}
/** `--version`: the version and what it pins on stdout, exit 0. */
class VersionRequested extends Error {}

/**
 * The pack's parameters come from its own config file only, as with `pulumi preview
 * --policy-pack-config`: a stack under review cannot widen what the pack allows (its namespace).
 */
function packConfigFor(fromFile: Record<string, unknown>): PackConfig {
    return fromFile as PackConfig;
}

function failOnError(run: PlanRun, label: string): void {
    if (run.error) {
        const kind = run.error.kind === "config" ? "" : "program error: ";
        sayErr(`${label}: ${kind}${run.error.message}`);
        process.exit(run.error.kind === "config" ? 1 : 2);
    }
}

/** ZCLOUD_PLAN_NODES_PER_PIECE, or the default: at most so many LVM nodes per plan piece (tools/plan/pieces.ts). */
function nodesPerPiece(withBase: boolean): number {
    const given = process.env.ZCLOUD_PLAN_NODES_PER_PIECE;
    if (given === undefined || given === "") {
        return withBase ? defaultNodesPerPieceWithBase : defaultNodesPerPiece;
    }
    if (!/^[1-9][0-9]{0,6}$/.test(given)) {
        throw new UsageError(`ZCLOUD_PLAN_NODES_PER_PIECE=${given}: give a whole number of LVM nodes, 1 or more`);
    }
    return Number(given);
}

/** Plan processes at a time for a plan in pieces: one per core of the 2-core machines it was measured on. */
const pieceProcesses = 2;

/**
 * The plan and the --diff base's: small stacks as before (the plan in this process, the base in a
 * fresh one); when either has more LVM nodes than a piece, both in pieces, sharing the processes.
 */
async function planBoth(target: PlanConfig, base: PlanConfig | undefined, program: string, labels: [string, string | undefined]): Promise<[PlanRun, PlanRun | undefined]> {
    const perPiece = nodesPerPiece(base !== undefined);
    if (Math.max(lvmNodesInConfig(target.values), base ? lvmNodesInConfig(base.values) : 0) <= perPiece) {
        // Loaded only here: a plan in pieces keeps the SDK out of this process.
        const { planInThisProcess } = await import("./plan/inProcess");
        return Promise.all([planInThisProcess({ config: target, program }), base ? planConfig(base, program) : undefined]);
    }
    const slots = new Slots(pieceProcesses);
    const opts = { nodesPerPiece: perPiece, slots };
    // A line per piece planned, on a terminal's stderr only: stdout, and stderr in a pipe or CI log, stay as they were.
    const progress = (label: string | undefined) => (process.stderr.isTTY ? (done: number, total: number) => sayErr(`planning ${label}: ${done} of ${total} pieces planned`) : undefined);
    return Promise.all([planInPieces(target, program, { ...opts, progress: progress(labels[0]) }), base ? planInPieces(base, program, { ...opts, progress: progress(labels[1]) }) : undefined]);
}

/**
 * `--diff OLD` reads OLD's config files from OLD's directory as they are now. When OLD lists a
 * config file the stack lists too (OLD a copy of the base's stack file put beside the head's),
 * the base would be compared with the head's inventory and a change in it would not show: refuse,
 * pointing to --diff-ref.
 */
function refuseSharedConfigFiles(arg: string, base: { file: string; config: PlanConfig }, target: { file: string; config: PlanConfig }): void {
    const resolved = (s: { file: string; config: PlanConfig }) => (s.config.configFiles ?? []).map((f) => path.resolve(path.dirname(s.file), f));
    const ours = new Set(resolved(target));
    const shared = resolved(base).filter((f) => ours.has(f));
    if (shared.length > 0) {
        throw new CliInputError(
            `--diff ${arg}: lists config files the stack lists too (${shared.map((f) => path.relative(process.cwd(), f)).join(", ")}): the base would read them as they are now, so a change in them would not show; compare with the base revision instead: --diff-ref <git rev>`,
        );
    }
}

/** Every option of the plan CLI (npm takes any of them given before `--`). */
const planFlags = ["--json", "--diff", "--diff-ref", "--diff-plan", "--out", "--force", "--over-config-limit", "--policy-pack-config", "--program", "--project"];

async function main(): Promise<void> {
    const took = flagsNpmTook(planFlags);
    if (took.length > 0) {
        throw new CliInputError(npmTookMessage("plan", took));
    }
    const opts = parseArgs(process.argv.slice(2));
    const program = opts.program ? path.resolve(opts.program) : defaultProgram;
    if (!fs.existsSync(program)) {
        throw new UsageError(`no program ${opts.program}`);
    }
    // The project the program runs as: its config keys (and the stack's keys without one) are its.
    const project = projectOfProgram(program, opts.project, opts.program).name;
    // Every file argument is checked before the plan runs: a bad one fails at once.
    const target = readStackArg(opts.target, "stack", project);
    // Pulumi passes the whole config in one environment variable: past Linux's limit for one,
    // pulumi preview and up cannot start the program (tools/plan/configSize.ts).
    const configSize = checkStackFileConfigSize(target);
    if (configSize.error && !opts.overConfigLimit) {
        throw new CliInputError(`${configSize.error} (--over-config-limit plans it anyway)`);
    }
    const other = opts.diff !== undefined ? readStackArg(opts.diff, "--diff stack", project) : undefined;
    if (opts.diff !== undefined && other) {
        refuseSharedConfigFiles(opts.diff, other, target);
    }
    const base = other ? { label: path.relative(process.cwd(), other.file), config: other.config } : opts.diffRef !== undefined ? readStackAtRevision(target.file, opts.diffRef, project) : undefined;
    const baseLabel = base?.label;
    const savedPlan = opts.diffPlan !== undefined ? parseSavedPlan(readSavedPlanText(opts.diffPlan), opts.diffPlan) : undefined;
    const packConfigFile = opts.policyConfig ? readPolicyPackConfig(opts.policyConfig) : {};
    const previousOut = opts.out !== undefined ? (checkOutDir(opts.out), checkOutContents(opts.out, opts.force)) : [];
    // Both sides plan as the same stack, so URNs match and only real changes show.
    const baseConfig = base && { ...base.config, stack: target.config.stack };
    // The main plan runs in this process, or in pieces; a second one (the diff base) in fresh processes.
    const [run, baseRun] = await planBoth(target.config, baseConfig, program, [path.relative(process.cwd(), target.file), baseLabel]);
    // A plan in pieces says so on stderr (stdout is the same either way).
    for (const [r, label] of [[run, path.relative(process.cwd(), target.file)], [baseRun, baseLabel]] as const) {
        if (r && "how" in r) {
            sayErr(`planned ${label}: ${r.how}`);
        }
    }
    failOnError(run, path.relative(process.cwd(), target.file));
    if (baseLabel && baseRun) {
        failOnError(baseRun, baseLabel);
    }
    // The base to compare with: the other config's plan, or a saved plan (maybe of another version).
    const before = baseRun?.resources ?? (savedPlan && savedAsBase(savedPlan, run.resources));
    const beforeLabel = baseLabel ?? `${opts.diffPlan} (saved plan)`;
    const policyInput = run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }));
    const violations = evaluatePolicies(policyInput, packConfigFor(packConfigFile));

    const advisories = [...[configSize.error ?? configSize.advisory].filter((a): a is string => a !== undefined), ...placeholderAdvisories(target.config), ...loopbackAdvisories(run.resources), ...rollAdvisories(run.resources)];

    if (opts.out) {
        writeOutDir(opts.out, outFiles(run.resources, readBundle), previousOut);
    }
    // Changes the diff refuses (exit 1, as a mandatory policy): a CephFS storage losing copies by default.
    let refusals: string[] = [];
    if (opts.json) {
        const diffed = before ? diffPlans(before, run.resources) : undefined;
        refusals = diffed ? [...replicaRefusals(diffed), ...monLeaveRefusals(diffed)] : [];
        const changes = diffed?.map((c) => ({ kind: c.kind, urn: c.resource.urn, fields: c.fields, replaceBecause: c.replaceBecause, ...(c.connection ? { connection: c.connection } : {}) }));
        const resources = run.resources.map(({ urn, type, name, parent, dependencies, inputs }) => ({ urn, type, name, parent, dependencies, inputs }));
        run.resources = [];
        await writeJsonStreaming(process.stdout, "resources", resources, { violations, changes, refusals: refusals.length ? refusals : undefined, advisories: advisories.length ? advisories : undefined });
    } else {
        for (const w of run.warnings) {
            say(`warning: ${w}`);
        }
        for (const a of advisories) {
            say(`advisory: ${a}`);
        }
        if (before) {
            say(`Changes from ${beforeLabel} to ${path.relative(process.cwd(), target.file)}:\n`);
            const changes = diffPlans(before, run.resources);
            say(renderChanges(changes));
            const roll = renderRollOrder(changes, run.resources);
            if (roll) {
                say(`\n${roll}`);
            }
            const scripts = renderScriptSetChanges(before, run.resources);
            if (scripts) {
                say(`\n${scripts}`);
            }
            refusals = [...replicaRefusals(changes), ...monLeaveRefusals(changes)];
            for (const r of refusals) {
                say(`\nrefused: ${r}`);
            }
        } else {
            say(`Plan of stack ${target.config.stack} (${path.relative(process.cwd(), target.file)}): ${run.resources.length} resources\n`);
            say(renderTree(run.resources));
        }
        say("");
        say(violations.length ? formatViolations(violations) : "Policies: no violations");
        if (opts.out) {
            say(`\nwrote the plan to ${opts.out} (index.txt lists its files in apply order)`);
        }
    }
    process.exitCode = hasMandatoryViolations(violations) || refusals.length ? 1 : 0;
}

main().catch((e) => {
    if (e instanceof HelpRequested) {
        console.log(usage);
        process.exit(0);
    }
    if (e instanceof VersionRequested) {
        console.log(versionText());
        process.exit(0);
    }
    if (e instanceof CliInputError) {
        sayErr(e.message);
        process.exit(2);
    }
    if (e instanceof UsageError) {
        sayErr(e.message ? `${e.message}\n\n${usage}` : usage);
        process.exit(2);
    }
    sayErr(e instanceof Error ? e.message : e);
    process.exit(2);
});
