/**
 * Wall time of `npm run discover` and `npm run status` on N sandbox SSH nodes (sshd on
 * 127.0.0.1, two loop devices and an LVM view each, the storage's VG on the first device), with
 * the cluster view served by the stand-in kubectl. Root. Prints one line per run.
 *
 *   node --import tsx test/node/day2-bench.ts [N=20] [ROUNDS=2]
 *
 * All nodes share this machine's kernel, so every node lists every loop device of the machine
 * (its own, the other nodes' and any others): discover judges that many devices per node.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { startNodes, stopNodes } from "../engine/nodes";
import { healthyView, runTool, stackForNodes, standInKubectl } from "../helpers/day2";
import { lvmQuiet, sh } from "../helpers/sshNode";

async function main(count: number, rounds: number): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-day2-bench-"));
    try {
        const nodes = await startNodes(dir, count, 2, 64);
        const names = Object.keys(nodes);
        for (const n of names) {
            sh("vgcreate", ["-q", "zcloud-fast", nodes[n].devices[0]], { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", n, "lvm") });
        }
        const kube = standInKubectl(path.join(dir, "kube"));
        kube.serve(healthyView("fast", names));
        const stack = path.join(dir, "Pulumi.bench.yaml");
        fs.writeFileSync(stack, stackForNodes(nodes, ["  zcloud-storage:lvm:", "    - name: fast", "      default: true", "      hosts:", ...names.map((n) => `        ${n}: [${nodes[n].devices[0]}]`)]));
        const devices = sh("lsblk", ["-d", "-n", "-o", "NAME"]).trim().split("\n").length;
        for (let i = 0; i < rounds; i++) {
            for (const tool of ["discover", "status"] as const) {
                const args = [stack, "--identity", path.join(dir, "id_ed25519"), "--json", ...(tool === "discover" ? ["--min-size", "16MiB"] : [])];
                const r = await runTool(tool, args, kube.env);
                const load = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
                console.log(`${tool}: ${count} nodes, ${devices} block devices each: exit ${r.code}, ${(r.ms / 1000).toFixed(1)} s wall (load ${load})`);
            }
        }
    } finally {
        stopNodes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

main(Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 2)).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
