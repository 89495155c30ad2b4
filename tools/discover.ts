import { StackModel } from "../components/config/model";
import { CommonOptions, UsageError, commonUsage, parseCommonArgs, runCli } from "./discover/args";
import { NodeAnswer, collectInventories } from "./discover/collect";
import { NodeDiscovery, discoverNode, proposalSection, proposalYaml, renderNodeDevices } from "./discover/devices";
import { gib, parseSize } from "./discover/inventory";
import { Day2ConfigError, declaredDevices, loadDay2Stack } from "./discover/stack";
import { jsonText, printable } from "../components/config/printable";
import { keySourceProblem } from "./discover/ssh";
import { ScaffoldNode, proposedName, scaffoldText, writeNewFile, writeTargetProblem } from "./discover/scaffold";
import { terminalProgress } from "./progress";
import * as fs from "node:fs";
import * as yaml from "js-yaml";

const usage = `usage: npm run discover -- <stack|file> [--node NAME]... [--min-size SIZE] [--identity FILE] [--accept-unpinned] [--concurrency N] [--timeout SECONDS] [--json] [--write-stack FILE] | --version | --help

Read-only inventory of every block device on the stack's nodes (or the --node ones), with the
verdict of the disk scripts' own guards, and a hosts: proposal of the clean ones.

  <stack|file>       a stack name (stacks/Pulumi.<stack>.yaml) or the path of a stack file
  --node NAME        only this node (repeatable)
  --min-size SIZE    smaller devices are "too small" (default 1GiB)
  --write-stack FILE write the first stack file: the input's keys, the nodes' host keys
                     pinned, a placeholder SSH key with the command that sets it, the clean
                     devices proposed as an lvm storage (commented); never overwrites a file,
                     and writes nothing unless every node answered
${commonUsage}

Exit codes: 0 every node answered, 2 a node could not be reached or its inventory failed
(the others are still listed), 3 usage or config error (nothing contacted).`;

interface Options extends CommonOptions {
    nodes: string[];
    minSize: number;
    writeStack?: string;
}

function parseArgs(argv: string[]): Options {
    const nodes: string[] = [];
    let minSize = gib;
    let writeStack: string | undefined;
    const common = parseCommonArgs(argv, {
        "--node": { value: true, set: (v) => nodes.push(v) },
        "--write-stack": { value: true, set: (v) => (writeStack = v) },
        "--min-size": {
            value: true,
            set: (v) => {
                try {
                    minSize = parseSize(v);
                } catch (e) {
                    throw new UsageError((e as Error).message);
                }
            },
        },
    });
    if (writeStack !== undefined && nodes.length > 0) {
        throw new UsageError("--write-stack takes every node of the stack: leave out --node");
    }
    return { ...common, nodes, minSize, writeStack };
}

function selectNodes(model: StackModel, asked: string[]): string[] {
    const known = Object.keys(model.nodes);
    const unknown = asked.filter((n) => !known.includes(n));
    if (unknown.length > 0) {
        throw new Day2ConfigError(`--node ${unknown.join(", ")}: not in zcloud-storage:nodes (${known.join(", ") || "none"})`);
    }
    if (known.length === 0) {
        throw new Day2ConfigError("the stack has no zcloud-storage:nodes");
    }
    return asked.length > 0 ? [...new Set(asked)] : known;
}

type NodeOutcome = { node: string; found: NodeDiscovery; learnedHostKey?: string } | { node: string; error: string };

function outcomeOf(model: StackModel, answer: NodeAnswer, minSize: number): NodeOutcome {
    if ("error" in answer) {
        return answer;
    }
    return { node: answer.node, found: discoverNode(answer.report, declaredDevices(model, answer.node), minSize), learnedHostKey: answer.learnedHostKey };
}

function toJson(outcomes: NodeOutcome[], proposal: string): unknown {
    const nodes: Record<string, unknown> = {};
    for (const o of outcomes) {
        nodes[o.node] =
            "error" in o
                ? { devices: [], error: o.error }
                : {
                      devices: o.found.devices.map((d) => ({
                          path: d.path,
                          byId: d.byId,
                          size: d.size,
                          verdict: d.verdict,
                          reason: d.reason,
                          model: d.model,
                          serial: d.serial,
                          rotational: d.rotational,
                          declaredBy: d.declaredBy,
                      })),
                  };
    }
    return { nodes, proposal };
}

async function main(): Promise<number> {
    const opts = parseArgs(process.argv.slice(2));
    const stack = loadDay2Stack(opts.target);
    const nodes = selectNodes(stack.model, opts.nodes);
    const keyProblem = keySourceProblem(opts.ssh, process.env);
    if (keyProblem) {
        throw new Day2ConfigError(keyProblem);
    }
    const targetProblem = opts.writeStack === undefined ? undefined : writeTargetProblem(opts.writeStack);
    if (targetProblem) {
        throw new Day2ConfigError(targetProblem);
    }
    // More nodes than are asked at once: how many answered, on a terminal's stderr only.
    const progress = nodes.length > opts.concurrency ? terminalProgress("discover: nodes answered") : undefined;
    const answers = await collectInventories(stack.model, nodes, opts.ssh, opts.concurrency, true, progress);
    const outcomes = answers.map((a) => outcomeOf(stack.model, a, opts.minSize));
    const answered = outcomes.flatMap((o) => ("found" in o ? [[o.node, o.found] as [string, NodeDiscovery]] : []));
    const proposal = proposalYaml(answered);
    const warnings: string[] = [];
    for (const o of outcomes) {
        if ("found" in o && o.learnedHostKey) {
            warnings.push(`${o.node}: host key not pinned; it showed ${o.learnedHostKey} (pin it as ssh.hostKeys.${o.node})`);
        }
    }
    if (opts.json) {
        console.log(jsonText(toJson(outcomes, proposal), 2));
        warnings.forEach((w) => console.error(printable(`warning: ${w}`)));
    } else {
        for (const o of outcomes) {
            const address = stack.model.nodes[o.node].address;
            console.log(`${o.node} (${address})`);
            console.log("error" in o ? printable(`  error: ${o.error}`) : renderNodeDevices(o.found));
            console.log("");
        }
        warnings.forEach((w) => console.log(printable(`warning: ${w}`)));
        console.log(proposalSection(answered));
    }
    const failed = outcomes.filter((o) => "error" in o).map((o) => o.node);
    if (opts.writeStack !== undefined) {
        if (failed.length > 0) {
            console.error(`--write-stack ${opts.writeStack}: not written: ${failed.join(", ")} did not answer (see above); a stack file needs every node's host key`);
        } else {
            writeScaffold(stack.file, outcomes, opts);
            console.error(`wrote ${opts.writeStack}: review the proposed devices, then set the SSH key as its comment says`);
        }
    }
    return failed.length > 0 ? 2 : 0;
}

/** Writes --write-stack FILE from the input file as written and what every node reported. */
function writeScaffold(input: string, outcomes: NodeOutcome[], opts: Options): void {
    const raw = yaml.load(fs.readFileSync(input, "utf8")) as { config: Record<string, unknown> };
    const nodes: Record<string, ScaffoldNode> = {};
    for (const o of outcomes) {
        if ("found" in o) {
            nodes[o.node] = {
                learnedHostKey: o.learnedHostKey,
                proposed: o.found.devices.flatMap((d) => {
                    const p = d.verdict === "clean" && d.declaredBy.length === 0 ? proposedName(d.stableName, d.path) : undefined;
                    return p ? [p] : [];
                }),
            };
        }
    }
    writeNewFile(opts.writeStack!, scaffoldText({ config: raw.config, nodes, source: opts.target, target: opts.writeStack! }));
}

runCli(main, usage);
