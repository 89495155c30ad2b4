import { planConfig } from "./plan/runner";
import { PlanConfig } from "./plan/model";

/**
 * Plan time and peak memory for generated stacks of N LVM nodes x 4 devices (one storage).
 * `npm run bench [-- 100 500 1000]`. Targets: 500 nodes < 10 s and < 1 GB, near-linear growth.
 */
function generatedStack(nodes: number, devicesPerNode = 4): PlanConfig {
    const names = Array.from({ length: nodes }, (_, i) => `node${String(i + 1).padStart(4, "0")}`);
    const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchBenchBenchBenchBenchBenchBenchBench";
    return {
        stack: `bench-${nodes}`,
        secretKeys: ["zcloud-storage:ssh"],
        values: {
            "zcloud-storage:ssh": { privateKey: "offline-secret(bench)", hostKeys: Object.fromEntries(names.map((n) => [n, hostKey])) },
            "zcloud-storage:nodes": Object.fromEntries(names.map((n, i) => [n, { address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }])),
            "zcloud-storage:lvm": [
                {
                    name: "local-fast",
                    default: true,
                    hosts: Object.fromEntries(
                        names.map((n, i) => [n, Array.from({ length: devicesPerNode }, (_, d) => `/dev/disk/by-id/wwn-0x5000c500${String(i * devicesPerNode + d).padStart(8, "0")}`)]),
                    ),
                },
            ],
        },
    };
}

async function main(): Promise<void> {
    const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
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
