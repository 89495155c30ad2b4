import { spawn } from "child_process";
import * as fs from "fs";
import * as yaml from "js-yaml";
import * as os from "os";
import * as path from "path";
import { inputFigureLines, inputFigures } from "./benchFigures";
import { generatedLvmValues } from "./benchStack";

/**
 * `npm run plan` as users run it, on generated stacks of N LVM nodes x 4 devices (one storage),
 * printing the tree, `--json`, and the tree with `--diff` against the same stack less its last
 * node (two plans: this one and the base's): wall time, peak RSS of the plan's whole process tree
 * (sampled every 50 ms; the workers of a plan in pieces count) and of its largest process,
 * resources and output size, the plan processes' CPU time (wall time on a busy machine measures
 * the load) and the load average. First the plan inputs per LVM node and of a 3-host CephFS
 * (tools/benchFigures.ts). `npm run bench [-- [--verbose] [--program <index.ts>] [100 1000 5000 | 0]]`:
 * `--verbose` lists the largest resources' inputs, `--program` measures the inputs of another
 * checkout's program, size 0 only the inputs. Targets at 5000 nodes (Kubernetes' largest
 * supported cluster): 30 s each, peak RSS 1.2 GiB for the tree and `--json`, 1.6 GiB for `--diff`.
 * After each size, the SDK's floor (tools/benchSdkFloor.ts): the peak RSS of the node's resource
 * types alone, trivial inputs, under the SDK's own mocks.
 */
const defaultSizes = [100, 500, 1000, 5000];
const targetS = 30;
const targetMiB: Record<Mode, number> = { tree: 1229, "--json": 1229, "--diff": 1638 };
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
    /** CPU time of the plan processes: on a busy machine wall time says more about the neighbours. */
    cpuS: number;
    /** Peak RSS of the whole plan: the sum over the process tree (the plan and its workers), sampled. */
    treeRssMiB: number;
    /** Peak RSS of the largest plan process. */
    maxRssMiB: number;
    /** Resources planned; for `--diff`, changes listed. */
    resources: number;
    outputMiB: number;
    /** How the plan of the stack was made in pieces (its stderr line), if it was. */
    pieces?: string;
}

type Mode = "tree" | "--json" | "--diff";

/** `pid` and its descendants, from /proc (Linux). */
function processTree(pid: number): number[] {
    const children = new Map<number, number[]>();
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) {
            continue;
        }
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
            const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
            children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
        } catch {
            // gone meanwhile
        }
    }
    const all = [pid];
    for (let i = 0; i < all.length; i++) {
        all.push(...(children.get(all[i]) ?? []));
    }
    return all;
}

/** RSS of `pid` and its descendants now, in KiB (0 for processes gone meanwhile). */
function treeRssKiB(pid: number): number {
    return processTree(pid).reduce((sum, p) => {
        try {
            return sum + Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
        } catch {
            return sum;
        }
    }, 0);
}

/** Samples a process tree's RSS every `everyMs` until stopped; the peak in KiB. */
function sampleTreeRss(pid: number, everyMs = 50): () => number {
    let peak = 0;
    const sample = () => (peak = Math.max(peak, treeRssKiB(pid)));
    const timer = setInterval(sample, everyMs);
    return () => {
        clearInterval(timer);
        return peak;
    };
}

/**
 * Runs the plan CLI on a stack file, reading its stdout as a consumer would (counting bytes and
 * resources as they stream by); each plan process reports its own peak RSS when it exits.
 */
function measurePlan(file: string, mode: Mode, base: string, usageDir: string): Promise<Measured> {
    const json = mode === "--json";
    const args = ["--import", "tsx", path.join(__dirname, "plan.ts"), file, "--over-config-limit", ...(mode === "tree" ? [] : mode === "--json" ? ["--json"] : ["--diff", base])];
    const env = usageEnv(usageDir);
    const start = performance.now();
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, args, {
            cwd: projectRoot,
            env,
            stdio: ["ignore", "pipe", "pipe"],
        });
        let bytes = 0;
        let resources = 0;
        let header = "";
        let carry = "";
        let stderr = "";
        const treePeak = sampleTreeRss(child.pid!);
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
            } else if (header.length < 4096 || mode === "--diff") {
                header += chunk;
            }
        });
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.on("error", reject);
        child.on("close", (code) => {
            const wallS = (performance.now() - start) / 1000;
            const treeRssMiB = Math.round(treePeak() / 1024);
            if (code !== 0) {
                reject(new Error(`plan (${mode}) exited with ${code}:\n${stderr.slice(-2000)}`));
                return;
            }
            if (mode === "tree") {
                resources = Number(/: (\d+) resources\n/.exec(header)?.[1] ?? NaN);
            } else if (mode === "--diff") {
                // The diff's summary lines: "2 to create", "1 to replace", ...
                resources = [...header.matchAll(/^(\d+) to \w+/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
            }
            resolve({ wallS, ...readUsage(usageDir), treeRssMiB, resources, outputMiB: bytes / 2 ** 20, pieces: /: (\d+ pieces of \d+)/.exec(stderr)?.[1] });
        });
    });
}

/** Peak RSS of the largest process and CPU time of all that wrote their usage to `usageDir`. */
function readUsage(usageDir: string): { cpuS: number; maxRssMiB: number } {
    const usages = fs.readdirSync(usageDir).map((f) => JSON.parse(fs.readFileSync(path.join(usageDir, f), "utf8")) as { maxRssKiB: number; cpuS: number });
    const maxRssKiB = Math.max(...usages.map((u) => u.maxRssKiB));
    return { cpuS: usages.reduce((sum, u) => sum + u.cpuS, 0), maxRssMiB: Math.round(maxRssKiB / 1024) };
}

/** The process environment that makes a child write its usage to `usageDir` on exit. */
function usageEnv(usageDir: string): NodeJS.ProcessEnv {
    fs.rmSync(usageDir, { recursive: true, force: true });
    fs.mkdirSync(usageDir);
    const preload = `--require ${path.join(__dirname, "bench-usage.cjs")}`;
    return { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(" "), ZCLOUD_BENCH_USAGE_DIR: usageDir };
}

/**
 * The SDK's floor at `nodes` (tools/benchSdkFloor.ts): an LVM node's three resource types with
 * trivial inputs under the SDK's own mocks. Peak RSS and CPU time.
 */
function measureSdkFloor(nodes: number, usageDir: string): Promise<{ cpuS: number; maxRssMiB: number }> {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", path.join(__dirname, "benchSdkFloor.ts"), String(nodes)], {
            cwd: projectRoot,
            env: usageEnv(usageDir),
            stdio: ["ignore", "ignore", "pipe"],
        });
        let stderr = "";
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.on("error", reject);
        child.on("close", (code) => (code === 0 ? resolve(readUsage(usageDir)) : reject(new Error(`SDK floor (${nodes} nodes) exited with ${code}:\n${stderr.slice(-2000)}`))));
    });
}

async function main(): Promise<void> {
    const args = process.argv.slice(2);
    const at = args.indexOf("--program");
    const program = at >= 0 ? args.splice(at, 2)[1] : undefined;
    const verbose = args.includes("--verbose");
    const given = args.filter((a) => a !== "--verbose").map(Number);
    if (given.some((n) => !Number.isInteger(n) || n < 0) || (at >= 0 && !program)) {
        throw new Error("usage: npm run bench -- [--verbose] [--program <index.ts>] [node counts, 0 for the inputs only]");
    }
    const sizes = given.length ? given.filter((n) => n > 0) : defaultSizes;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-bench-"));
    let over = false;
    try {
        for (const line of inputFigureLines(await inputFigures(program), verbose)) {
            console.log(line);
        }
        const rows: Array<{ nodes: number; mode: string } & Measured> = [];
        for (const nodes of sizes) {
            const file = path.join(dir, `Pulumi.bench-${nodes}.yaml`);
            const base = path.join(dir, `Pulumi.bench-${nodes}-base.yaml`);
            fs.writeFileSync(file, generatedStack(nodes));
            fs.writeFileSync(base, generatedStack(nodes - 1));
            for (const mode of ["tree", "--json", "--diff"] as const) {
                const m = await measurePlan(file, mode, base, path.join(dir, "usage"));
                rows.push({ nodes, mode, ...m });
                const within = m.wallS < targetS && m.treeRssMiB < targetMiB[mode];
                const bound = nodes === 5000;
                over ||= bound && !within;
                console.log(
                    `${String(nodes).padStart(5)} nodes x 4 devices, ${mode.padEnd(6)}: ${String(m.resources).padStart(5)} ${(mode === "--diff" ? "changes," : "resources,").padEnd(10)} ` +
                        `${m.wallS.toFixed(1).padStart(5)} s (CPU ${m.cpuS.toFixed(1)} s), peak RSS ${String(m.treeRssMiB).padStart(4)} MiB (largest process ${m.maxRssMiB}), ` +
                        `output ${m.outputMiB.toFixed(1)} MiB, load ${os.loadavg()[0].toFixed(1)}${m.pieces ? `, ${m.pieces}` : ""}` +
                        (bound ? `  (${within ? "within" : "OVER"} ${targetS} s, ${(targetMiB[mode] / 1024).toFixed(1)} GiB)` : ""),
                );
            }
            const floor = await measureSdkFloor(nodes, path.join(dir, "usage"));
            console.log(
                `${String(nodes).padStart(5)} nodes, SDK floor (copy, command, label per node; trivial inputs; the SDK's own mocks): ` +
                    `peak RSS ${String(floor.maxRssMiB).padStart(4)} MiB (CPU ${floor.cpuS.toFixed(1)} s)`,
            );
        }
        for (const mode of ["tree", "--json"]) {
            const [a, b] = [1000, 5000].map((n) => rows.find((r) => r.nodes === n && r.mode === mode));
            if (a && b) {
                console.log(`growth 1000 -> 5000 nodes, ${mode}: time ${(b.wallS / a.wallS).toFixed(1)} x, memory ${(b.treeRssMiB / a.treeRssMiB).toFixed(1)} x (linear: 5 x)`);
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
