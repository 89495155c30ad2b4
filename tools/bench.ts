import { planConfig } from "./plan/runner";
import { PlanConfig } from "./plan/model";
import { generatedLvmValues } from "./benchStack";
import { engineBench } from "../test/engine/bench";

/**
 * Plan time and peak memory for generated stacks of N LVM nodes x 4 devices (one storage).
 * `npm run bench [-- 100 500 1000]`. Targets: 500 nodes < 10 s and < 1 GB, near-linear growth.
 * `npm run bench -- --engine [10 100 500]`: the real Pulumi CLI against a sandbox instead
 * (test/engine/bench.ts; root and the engine binaries).
 */
function generatedStack(nodes: number, devicesPerNode = 4): PlanConfig {
    const values = generatedLvmValues(nodes, devicesPerNode);
    const ssh = values.ssh as Record<string, unknown>;
    return {
        stack: `bench-${nodes}`,
        secretKeys: ["zcloud-storage:ssh"],
        values: Object.fromEntries(
            Object.entries({ ...values, ssh: { ...ssh, privateKey: "offline-secret(bench)" } }).map(([k, v]) => [`zcloud-storage:${k}`, v]),
        ),
    };
}

async function main(): Promise<void> {
    const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
    if (process.argv.includes("--engine")) {
        await engineBench(sizes.length ? sizes : [10, 100, 500]);
        return;
    }
    const results: Array<{ nodes: number; resources: number; wallS: number; programS: number; maxRssMb: number }> = [];
    for (const nodes of sizes.length ? sizes : [100, 500, 1000]) {
        const start = performance.now();
        const run = await planConfig(generatedStack(nodes));
        const wallS = (performance.now() - start) / 1000;
        if (run.error || !run.stats) {
            throw new Error(`plan of ${nodes} nodes failed: ${run.error?.message}`);
        }
        const row = { nodes, resources: run.resources.length, wallS, programS: run.stats.programMs / 1000, maxRssMb: run.stats.maxRssMb };
        results.push(row);
        console.log(
            `${String(nodes).padStart(5)} nodes x 4 devices: ${String(row.resources).padStart(5)} resources, ` +
                `plan ${row.wallS.toFixed(1)} s (program ${row.programS.toFixed(1)} s), peak ${row.maxRssMb} MB`,
        );
    }
    const at = (n: number) => results.find((r) => r.nodes === n);
    const r500 = at(500);
    const r1000 = at(1000);
    if (r500 && r1000) {
        console.log(`growth 500 -> 1000 nodes: ${(r1000.wallS / r500.wallS).toFixed(2)} x (target <= 2.3)`);
        console.log(`500 nodes: ${r500.wallS < 10 ? "within" : "OVER"} 10 s, ${r500.maxRssMb < 1024 ? "within" : "OVER"} 1 GB`);
    }
}

main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
