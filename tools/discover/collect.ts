/**
 * Runs components/node/discover.sh on nodes over read-only SSH, in parallel with a bound, and
 * parses each answer. A node that cannot be reached or fails is a result, never a throw.
 */
import { StackModel } from "../../components/config/model";
import { renderInlineNodeCommand } from "../../components/node/script";
import { declaredDevices } from "./stack";
import { NodeReport, parseNodeReport } from "./inventory";
import { Progress } from "../progress";
import { SshClient, SshOptions, mapBounded, remoteFailure, unpinnedRefusal } from "./ssh";

export type NodeAnswer = { node: string; report: NodeReport; learnedHostKey?: string } | { node: string; error: string };

/** Non-root SSH users run node scripts through `sudo -n`, as the disk commands do. */
export function needsSudo(model: StackModel, node: string): boolean {
    return (model.nodes[node]?.user ?? model.ssh?.user ?? "root") !== "root";
}

/**
 * The inventory command for a node: lib.sh + discover.sh, the declared paths as arguments.
 * Without guards (status) the node skips the per-device verdicts, the slow part.
 */
export function inventoryCommand(model: StackModel, node: string, guards = true): string {
    return renderInlineNodeCommand({
        files: ["lib.sh", "discover.sh"],
        name: "discover.sh",
        args: [...(guards ? [] : ["--no-guards"]), ...declaredDevices(model, node).map((d) => d.path)],
        sudo: needsSudo(model, node),
    });
}

/** One command per item over SSH, bounded; each answer parsed, or the reason it failed. `progress` hears of each answer. */
export async function collectFromNodes<I extends { node: string }, T>(
    model: StackModel,
    items: I[],
    ssh: SshOptions,
    concurrency: number,
    command: (item: I) => string,
    parse: (stdout: string, item: I, client: SshClient) => T,
    progress?: Progress,
): Promise<Array<{ item: I; value: T } | { item: I; error: string }>> {
    if (items.length === 0) {
        return [];
    }
    const client = new SshClient(model, ssh);
    const ask = async (item: I): Promise<{ item: I; value: T } | { item: I; error: string }> => {
        const refusal = unpinnedRefusal(model, item.node, ssh);
        if (refusal) {
            return { item, error: refusal };
        }
        const r = await client.run(item.node, command(item));
        if (r.code !== 0) {
            return { item, error: remoteFailure(r) };
        }
        try {
            return { item, value: parse(r.stdout, item, client) };
        } catch (e) {
            return { item, error: `unreadable answer: ${(e as Error).message}` };
        }
    };
    let answered = 0;
    try {
        return await mapBounded(items, concurrency, async (item) => {
            const a = await ask(item);
            progress?.(++answered, items.length);
            return a;
        });
    } finally {
        client.close();
    }
}

export async function collectInventories(model: StackModel, nodes: string[], ssh: SshOptions, concurrency: number, guards = true, progress?: Progress): Promise<NodeAnswer[]> {
    const answers = await collectFromNodes(
        model,
        nodes.map((node) => ({ node })),
        ssh,
        concurrency,
        ({ node }) => inventoryCommand(model, node, guards),
        (stdout, { node }, client) => {
            const learned = model.ssh?.hostKeys[node] ? undefined : client.learnedHostKey(node);
            return { report: parseNodeReport(stdout), ...(learned ? { learnedHostKey: learned } : {}) };
        },
        progress,
    );
    return answers.map((a): NodeAnswer => ("error" in a ? { node: a.item.node, error: a.error } : { node: a.item.node, ...a.value }));
}
