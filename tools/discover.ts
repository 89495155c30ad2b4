import { StackModel } from "../components/config/model";
import { CommonOptions, UsageError, commonUsage, parseCommonArgs, runCli } from "./discover/args";
import { NodeAnswer, collectInventories } from "./discover/collect";
import { NodeDiscovery, discoverNode, proposalYaml, renderNodeDevices } from "./discover/devices";
import { gib, parseSize } from "./discover/inventory";
import { Day2ConfigError, declaredDevices, loadDay2Stack } from "./discover/stack";
import { jsonText, printable } from "./discover/printable";
import { keySourceProblem } from "./discover/ssh";

const usage = `usage: npm run discover -- <stack|file> [--node NAME]... [--identity FILE] [--json]

Read-only inventory of every block device on the stack's nodes (or the --node ones), with the
verdict of the disk scripts' own guards, and a hosts: proposal of the clean ones.

  <stack|file>       a stack name (stacks/Pulumi.<stack>.yaml) or the path of a stack file
  --node NAME        only this node (repeatable)
  --min-size SIZE    smaller devices are "too small" (default 1GiB)
${commonUsage}

Exit codes: 0 every node answered, 2 a node could not be reached or its inventory failed
(the others are still listed), 3 usage or config error (nothing contacted).`;

interface Options extends CommonOptions {
    nodes: string[];
    minSize: number;
}

function parseArgs(argv: string[]): Options {
    const nodes: string[] = [];
    let minSize = gib;
    const common = parseCommonArgs(argv, {
        "--node": { value: true, set: (v) => nodes.push(v) },
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
    return { ...common, nodes, minSize };
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
    const answers = await collectInventories(stack.model, nodes, opts.ssh, opts.concurrency);
    const outcomes = answers.map((a) => outcomeOf(stack.model, a, opts.minSize));
    const proposal = proposalYaml(outcomes.flatMap((o) => ("found" in o ? [[o.node, o.found] as [string, NodeDiscovery]] : [])));
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
        console.log("Proposal (clean devices by stable name; paste into an lvm or cephfs entry):\n");
        console.log(proposal.replace(/^/gm, "  ").trimEnd());
    }
    return outcomes.some((o) => "error" in o) ? 2 : 0;
}

runCli(main, usage);
