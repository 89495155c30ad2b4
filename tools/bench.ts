import { spawn } from "child_process";
import * as fs from "fs";
import * as yaml from "js-yaml";
import * as os from "os";
import * as path from "path";
import { generatedLvmValues } from "./benchStack";

/**
 * `npm run plan` as users run it, on generated stacks of N LVM nodes x 4 devices (one storage),
 * once printing the tree and once `--json`: wall time, peak RSS of the plan process, resources
 * and output size, and the plan process's CPU time (wall time on a busy machine measures the load).
 * `npm run bench [-- 100 1000 5000]`. Target: 5000 nodes (Kubernetes' largest
 * supported cluster) under 30 s and 2 GiB each, near-linear growth.
 */
const defaultSizes = [100, 500, 1000, 5000];
const targetS = 30;
const targetMiB = 2048;
const projectRoot = path.resolve(__dirname, "..");

/** A stack file with `nodes` nodes of 4 by-id devices each, every host key pinned. */
function generatedStack(nodes: number, devicesPerNode = 4): string {
    const values = generatedLvmValues(nodes, devicesPerNode);
    const ssh = { ...(values.ssh as Record<string, unknown>), privateKey: { secure: "v1:bench" } };
    const config = Object.fromEntries(Object.entries({ ...values, ssh }).map(([k, v]) => [`zcloud-storage:${k}`, v]));
    return yaml.dump({ config }, { lineWidth: -1 });
}

interface Measured {
    wallS: number;
    /** CPU time of the plan process: on a busy machine wall time says more about the neighbours. */
    cpuS: number;
    maxRssMiB: number;
    resources: number;
    outputMiB: number;
}

/**
 * Runs the plan CLI on a stack file, reading its stdout as a consumer would (counting bytes and
 * resources as they stream by); the plan process reports its own peak RSS when it exits.
 */
function measurePlan(file: string, json: boolean, usageFile: string): Promise<Measured> {
    const args = ["--require", path.join(__dirname, "bench-usage.cjs"), "--import", "tsx", path.join(__dirname, "plan.ts"), file, ...(json ? ["--json"] : [])];
    const start = performance.now();
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, args, {
            cwd: projectRoot,
            env: { ...process.env, ZCLOUD_BENCH_USAGE_FILE: usageFile },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let bytes = 0;
        let resources = 0;
        let header = "";
        let carry = "";
        let stderr = "";
        // A resource of the JSON starts with its urn at this indent; the tree's header counts them.
        const urnKey = '\n      "urn": ';
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
            bytes += Buffer.byteLength(chunk);
            if (json) {
                const text = carry + chunk;
                for (let i = text.indexOf(urnKey); i >= 0; i = text.indexOf(urnKey, i + 1)) {
                    resources++;
                }
                carry = text.slice(-(urnKey.length - 1));
            } else if (header.length < 4096) {
                header += chunk;
            }
        });
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.on("error", reject);
        child.on("close", (code) => {
            const wallS = (performance.now() - start) / 1000;
            if (code !== 0) {
                reject(new Error(`plan ${json ? "--json " : ""}exited with ${code}:\n${stderr.slice(-2000)}`));
                return;
            }
            if (!json) {
                resources = Number(/: (\d+) resources\n/.exec(header)?.[1] ?? NaN);
            }
            const usage = JSON.parse(fs.readFileSync(usageFile, "utf8")) as { maxRssKiB: number; cpuS: number };
            resolve({ wallS, cpuS: usage.cpuS, maxRssMiB: Math.round(usage.maxRssKiB / 1024), resources, outputMiB: bytes / 2 ** 20 });
        });
    });
}

async function main(): Promise<void> {
    const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-bench-"));
    let over = false;
    try {
        const rows: Array<{ nodes: number; mode: string } & Measured> = [];
        for (const nodes of sizes.length ? sizes : defaultSizes) {
            const file = path.join(dir, `Pulumi.bench-${nodes}.yaml`);
            fs.writeFileSync(file, generatedStack(nodes));
            for (const json of [false, true]) {
                const m = await measurePlan(file, json, path.join(dir, "usage.json"));
                const mode = json ? "--json" : "tree";
                rows.push({ nodes, mode, ...m });
                const within = m.wallS < targetS && m.maxRssMiB < targetMiB;
                over ||= nodes === 5000 && !within;
                console.log(
                    `${String(nodes).padStart(5)} nodes x 4 devices, ${mode.padEnd(6)}: ${String(m.resources).padStart(5)} resources, ` +
                        `${m.wallS.toFixed(1).padStart(5)} s (CPU ${m.cpuS.toFixed(1)} s), peak RSS ${String(m.maxRssMiB).padStart(4)} MiB, output ${m.outputMiB.toFixed(1)} MiB` +
                        (nodes === 5000 ? (within ? "  (within 30 s, 2 GiB)" : "  (OVER 30 s or 2 GiB)") : ""),
                );
            }
        }
        for (const mode of ["tree", "--json"]) {
            const [a, b] = [1000, 5000].map((n) => rows.find((r) => r.nodes === n && r.mode === mode));
            if (a && b) {
                console.log(`growth 1000 -> 5000 nodes, ${mode}: time ${(b.wallS / a.wallS).toFixed(1)} x, memory ${(b.maxRssMiB / a.maxRssMiB).toFixed(1)} x (linear: 5 x)`);
            }
        }
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
    process.exitCode = over ? 1 : 0;
}

main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
