/**
 * The real-CLI benchmark (`node --import tsx test/engine/cli/bench.ts [sizes]`): the real CLI against a sandbox (needs root and the engine
 * binaries). Real `pulumi preview` of generated LVM stacks (N nodes x 4 devices; the nodes are
 * made up, preview contacts none), and `pulumi up` of 1 and of 8 sandbox nodes: t(8)/t(1) shows
 * per-node independence in practice, the checkpoint's growth from 1 to 8 nodes its size per node.
 */
import { generatedLvmValues } from "../../../tools/benchStack";
import { EngineStack, exportedResources, ok, sandboxValues, startSandbox } from "./engine";

export async function engineBench(previewSizes: number[]): Promise<void> {
    const sandbox = startSandbox({ nodes: 8, devices: 4 });
    try {
        for (const n of previewSizes) {
            const stack = new EngineStack(sandbox, `bench-preview-${n}`);
            await stack.init(generatedLvmValues(n, 4));
            const r = ok(await stack.pulumi(["preview", "--json"]), `pulumi preview of ${n} nodes`);
            console.log(`engine preview ${String(n).padStart(4)} nodes x 4 devices: ${r.seconds.toFixed(1)} s, preview JSON ${Math.round(r.stdout.length / n)} bytes per node`);
        }
        const sizes: Record<number, { seconds: number; bytes: number }> = {};
        for (const n of [1, 8]) {
            const stack = new EngineStack(sandbox, `bench-up-${n}`);
            const names = Object.keys(sandbox.nodes).slice(0, n);
            await stack.init(sandboxValues(sandbox, { lvm: [{ name: "local-fast", default: true, hosts: Object.fromEntries(names.map((x) => [x, sandbox.nodes[x].devices])) }] }));
            const up = ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), `pulumi up of ${n} nodes`);
            const exported = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
            const commands = exportedResources(exported).filter((r) => r.type === "command:remote:Command");
            sizes[n] = { seconds: up.seconds, bytes: exported.length };
            console.log(
                `engine up ${n} node(s) x 4 devices: ${up.seconds.toFixed(1)} s, checkpoint ${Math.round(exported.length / 1024)} KiB ` +
                    `(disk commands ${Math.round(commands.reduce((s, r) => s + JSON.stringify(r).length, 0) / commands.length / 1024)} KiB each)`,
            );
            ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), `pulumi destroy of ${n} nodes`);
        }
        const ratio = sizes[8].seconds / sizes[1].seconds;
        console.log(`engine up t(8)/t(1) = ${ratio.toFixed(2)} (goal <= 1.5): ${ratio <= 1.5 ? "within" : "OVER"}`);
        console.log(`checkpoint per node: ${Math.round((sizes[8].bytes - sizes[1].bytes) / 7 / 1024)} KiB`);
    } finally {
        sandbox.stop();
    }
}

if (require.main === module) {
    const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
    engineBench(sizes.length ? sizes : [10, 100, 500]).catch((e) => {
        console.error(e instanceof Error ? e.message : e);
        process.exit(1);
    });
}
