/**
 * Runs components/node/discover.sh on nodes over read-only SSH, in parallel with a bound, and
 * parses each answer. A node that cannot be reached or fails is a result, never a throw.
 */
import { StackModel } from "../../components/config/model";
import { renderNodeCommand } from "../../components/node/script";
import { declaredDevices } from "./stack";
import { NodeReport, parseNodeReport } from "./inventory";
import { SshClient, SshOptions, mapBounded, remoteFailure, unpinnedRefusal } from "./ssh";

export type NodeAnswer = { node: string; report: NodeReport; learnedHostKey?: string } | { node: string; error: string };

/**
 * The inventory command for a node: lib.sh + discover.sh, the declared paths as arguments.
 * Without guards (status) the node skips the per-device verdicts, the slow part.
 */
export function inventoryCommand(model: StackModel, node: string, guards = true): string {
    const user = model.nodes[node]?.user ?? model.ssh?.user ?? "root";
    return renderNodeCommand({
        files: ["lib.sh", "discover.sh"],
        name: "discover.sh",
        args: [...(guards ? [] : ["--no-guards"]), ...declaredDevices(model, node).map((d) => d.path)],
        // Non-root users read devices through `sudo -n`, as the disk commands do.
        sudo: user !== "root",
    });
}

export async function collectInventories(model: StackModel, nodes: string[], ssh: SshOptions, concurrency: number, guards = true): Promise<NodeAnswer[]> {
    const client = new SshClient(model, ssh);
    try {
        return await mapBounded(nodes, concurrency, async (node): Promise<NodeAnswer> => {
            const refusal = unpinnedRefusal(model, node, ssh);
            if (refusal) {
                return { node, error: refusal };
            }
            const r = await client.run(node, inventoryCommand(model, node, guards));
            if (r.code !== 0) {
                return { node, error: remoteFailure(r) };
            }
            try {
                const learned = model.ssh?.hostKeys[node] ? undefined : client.learnedHostKey(node);
                return { node, report: parseNodeReport(r.stdout), ...(learned ? { learnedHostKey: learned } : {}) };
            } catch (e) {
                return { node, error: `unreadable answer: ${(e as Error).message}` };
            }
        });
    } finally {
        client.close();
    }
}
