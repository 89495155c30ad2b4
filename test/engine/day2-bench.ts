/**
 * Wall time of `npm run discover` and `npm run status` on N nodes: the control plane with N kwok
 * nodes and N sandbox SSH nodes (two loop devices each), an LVM storage applied on all of them
 * (applied.ts). Root. Prints one line per run.
 *
 *   node --import tsx test/engine/day2-bench.ts [N=20] [ROUNDS=2]
 *
 * All nodes share this machine's kernel, so every node lists every block device of the machine
 * (its own, the other nodes' and any others): discover judges that many devices on each node.
 */
import * as fs from "node:fs";
import { applyLvmStack } from "./applied";
import { runTool } from "../helpers/day2";
import { sh } from "../helpers/sshNode";

async function main(count: number, rounds: number): Promise<void> {
    const started = Date.now();
    const stack = await applyLvmStack("fast", count, 2);
    try {
        console.log(`applied: ${count} nodes in ${((Date.now() - started) / 1000).toFixed(0)} s`);
        const devices = sh("lsblk", ["-d", "-n", "-o", "NAME"]).trim().split("\n").length;
        for (let i = 0; i < rounds; i++) {
            for (const tool of ["discover", "status"] as const) {
                const args = [stack.stackFile, "--identity", stack.keyFile, "--json", ...(tool === "discover" ? ["--min-size", "16MiB"] : [])];
                let r = await runTool(tool, args, stack.env);
                // Right after apply kwok may still be starting pods: status waits for a healthy round first.
                for (let wait = 0; tool === "status" && r.code === 1 && wait < 30 && i === 0; wait++) {
                    await new Promise((res) => setTimeout(res, 2000));
                    r = await runTool(tool, args, stack.env);
                }
                const load = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
                console.log(`${tool}: ${count} nodes, ${devices} block devices on the machine: exit ${r.code}, ${(r.ms / 1000).toFixed(1)} s wall (load ${load})`);
            }
        }
    } finally {
        stack.stop();
    }
}

main(Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 2)).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
