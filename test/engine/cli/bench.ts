/**
 * The real-CLI benchmark (`node --import tsx test/engine/cli/bench.ts [sizes]`): the real CLI against a sandbox (needs root and the engine
 * binaries). Real `pulumi preview --policy-pack` of generated LVM stacks (N nodes x 4 devices, their
 * inventory in a config file; the nodes are made up, preview contacts none), and `pulumi up` of 1 and of 8 sandbox nodes: t(8)/t(1) shows
 * per-node independence in practice, the checkpoint's growth from 1 to 8 nodes its size per node,
 * split by resource type (what each of a node's resources costs). Each figure is printed with the
 * load average at its end: the machine is shared, so times are upper bounds. With
 * ZCLOUD_BENCH_EXPORT_DIR set, the `stack export` of each `up` is written there (export-1.json, export-8.json).
 *
 * `bench.ts --checkpoint 10,100 [--before <commit> | --before none]`: the checkpoint per LVM node at those sizes,
 * with `ssh.agent: true` (a real ssh-agent holds the sandbox key: no key in state), applied by the
 * program of <commit> (default: the last one that labelled nodes by NodePatch) and by this one;
 * `--before none` applies this program alone (half the time: the old program's figures are in
 * docs/splitting-stacks.md).
 * Per size and program: `pulumi up` of N sandbox nodes x 1 device, then the export's bytes,
 * indented (as `pulumi stack export` and the file backend write it) and compact; per node is the
 * growth from 1 node to N, divided by N - 1.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { generatedLvmValues } from "../../../tools/benchStack";
import { nodePatchLabelsCommit, oldProgram } from "../../helpers/oldProgram";
import { EngineStack, exportedResources, ok, repoRoot, sandboxValues, splitInventory, startSandbox } from "./engine";

const load = (): string => `load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`;

/** Bytes of the export's resources by type (the type without its parents', `a$b$command:remote:Command` -> `command:remote:Command`). */
export function bytesByType(exported: string): Map<string, number> {
    const by = new Map<string, number>();
    for (const r of exportedResources(exported)) {
        const type = r.type.split("$").pop() as string;
        by.set(type, (by.get(type) ?? 0) + JSON.stringify(r, null, 4).length);
    }
    return by;
}

/**
 * One node's resources in an export (URNs naming `-<node>-`), each split into its top-level fields and
 * the fields of its inputs and outputs, largest first: where a node's checkpoint bytes go.
 */
export function nodeFieldBytes(exported: string, node: string): string[] {
    const lines: string[] = [];
    const size = (v: unknown): number => JSON.stringify(v, null, 4).length;
    for (const r of exportedResources(exported).filter((x) => x.urn.includes(`-${node}-`)) as Array<Record<string, unknown> & { urn: string; type: string }>) {
        const parts: Array<[string, number]> = [];
        for (const [k, v] of Object.entries(r)) {
            if ((k === "inputs" || k === "outputs") && v && typeof v === "object") {
                for (const [f, fv] of Object.entries(v as Record<string, unknown>)) {
                    parts.push([`${k}.${f}`, size(fv)]);
                }
            } else {
                parts.push([k, size(v)]);
            }
        }
        parts.sort((a, b) => b[1] - a[1]);
        lines.push(`  ${r.urn.split("::").pop()} (${r.type.split("$").pop()}): ${(size(r) / 1024).toFixed(1)} KiB: ${parts.filter(([, n]) => n >= 100).map(([k, n]) => `${k} ${n}`).join(", ")}`);
    }
    return lines;
}

export async function engineBench(previewSizes: number[]): Promise<void> {
    const sandbox = startSandbox({ nodes: 8, devices: 4 });
    try {
        for (const n of previewSizes) {
            // The inventory in a config file, as a fleet keeps it: the stack file alone stays far under
            // the 128 KiB Pulumi can pass to the program and the policy pack (docs/splitting-stacks.md).
            const stack = new EngineStack(sandbox, `bench-preview-${n}`);
            const split = splitInventory(generatedLvmValues(n, 4), `bench-preview-${n}/inventory.yaml`);
            await stack.init(split.stack);
            stack.writeConfigFile(`bench-preview-${n}/inventory.yaml`, split.inventory);
            const r = ok(await stack.pulumi(["preview", "--json", "--policy-pack", path.join(repoRoot, "policy")]), `pulumi preview of ${n} nodes`);
            console.log(`engine preview ${String(n).padStart(4)} nodes x 4 devices (inventory in a config file, with the policy pack): ${r.seconds.toFixed(1)} s, preview JSON ${Math.round(r.stdout.length / n)} bytes per node, ${load()}`);
        }
        const sizes: Record<number, { seconds: number; bytes: number; gzipped: number; exported: string; byType: Map<string, number> }> = {};
        for (const n of [1, 8]) {
            const stack = new EngineStack(sandbox, `bench-up-${n}`);
            const names = Object.keys(sandbox.nodes).slice(0, n);
            await stack.init(sandboxValues(sandbox, { lvm: [{ name: "local-fast", default: true, hosts: Object.fromEntries(names.map((x) => [x, sandbox.nodes[x].devices])) }] }));
            const up = ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), `pulumi up of ${n} nodes`);
            const exported = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
            const commands = exportedResources(exported).filter((r) => r.type === "command:remote:Command");
            sizes[n] = { seconds: up.seconds, bytes: exported.length, gzipped: zlib.gzipSync(exported).length, exported, byType: bytesByType(exported) };
            if (process.env.ZCLOUD_BENCH_EXPORT_DIR) {
                fs.writeFileSync(path.join(process.env.ZCLOUD_BENCH_EXPORT_DIR, `export-${n}.json`), exported);
            }
            console.log(
                `engine up ${n} node(s) x 4 devices: ${up.seconds.toFixed(1)} s, checkpoint ${Math.round(exported.length / 1024)} KiB ` +
                    `(disk commands ${Math.round(commands.reduce((s, r) => s + JSON.stringify(r).length, 0) / commands.length / 1024)} KiB each), ${load()}`,
            );
            ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), `pulumi destroy of ${n} nodes`);
        }
        const ratio = sizes[8].seconds / sizes[1].seconds;
        console.log(`engine up t(8)/t(1) = ${ratio.toFixed(2)} (goal <= 1.5): ${ratio <= 1.5 ? "within" : "OVER"}`);
        const perNode = (sizes[8].bytes - sizes[1].bytes) / 7 / 1024;
        console.log(`checkpoint per node: ${perNode.toFixed(1)} KiB (goal <= 16 KiB): ${perNode <= 16 ? "within" : "OVER"}`);
        console.log(`checkpoint per node gzipped (what PULUMI_DIY_BACKEND_GZIP=true writes, estimated on the export): ${((sizes[8].gzipped - sizes[1].gzipped) / 7 / 1024).toFixed(1)} KiB`);
        for (const [type, bytes] of sizes[8].byType) {
            const grew = (bytes - (sizes[1].byType.get(type) ?? 0)) / 7 / 1024;
            if (grew > 0.05) {
                console.log(`  per node ${type}: ${grew.toFixed(1)} KiB`);
            }
        }
        console.log("node1's resources by field (bytes of indented JSON):");
        for (const line of nodeFieldBytes(sizes[8].exported, "node1")) {
            console.log(line);
        }
    } finally {
        sandbox.stop();
    }
}

/** Bytes of an export as written (indented) and compact. */
export function exportBytes(exported: string): { indented: number; compact: number } {
    return { indented: exported.length, compact: JSON.stringify(JSON.parse(exported)).length };
}

/** Checkpoint bytes per LVM node, by program and size (see the file's comment); `before` "none": this program alone. */
export async function checkpointBench(sizes: number[], before: string): Promise<void> {
    const most = Math.max(...sizes);
    const old = before === "none" ? undefined : oldProgram(before);
    const programs: Array<readonly [string, string]> = [...(old ? [[`before (${before.slice(0, 7)})`, old.dir] as const] : []), ["after (this program)", repoRoot] as const];
    let sandbox: ReturnType<typeof startSandbox>;
    try {
        sandbox = startSandbox({ nodes: most, devices: 1 });
    } catch (e) {
        old?.cleanup();
        throw e;
    }
    let agentPid: number | undefined;
    try {
        const sock = path.join(sandbox.dir, "bench-agent.sock");
        const out = execFileSync("ssh-agent", ["-s", "-a", sock], { encoding: "utf8" });
        agentPid = Number(/SSH_AGENT_PID=(\d+)/.exec(out)?.[1]);
        execFileSync("ssh-add", [sandbox.keyFile], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: "pipe" });
        sandbox.env.SSH_AUTH_SOCK = sock;
        const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
        for (const [label, root] of programs) {
            const bytes: Record<number, { indented: number; compact: number }> = {};
            const byType: Record<number, Map<string, number>> = {};
            for (const n of [1, ...sizes]) {
                const stack = new EngineStack(sandbox, `bench-checkpoint-${root === repoRoot ? "after" : "before"}-${n}`);
                stack.useProgram(root);
                const names = Object.keys(sandbox.nodes).slice(0, n);
                const values = sandboxValues(sandbox, { lvm: [{ name: "local-fast", default: true, hosts: Object.fromEntries(names.map((x) => [x, sandbox.nodes[x].devices])) }] });
                await stack.init({ ...values, ssh: { ...(values.ssh as Record<string, unknown>), agent: true } });
                const up = ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), `pulumi up of ${n} nodes (${label})`);
                const exported = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
                if (/privateKey/.test(exported)) {
                    throw new Error(`${label}, ${n} nodes: the export names a privateKey: ssh.agent did not apply`);
                }
                bytes[n] = exportBytes(exported);
                byType[n] = bytesByType(exported);
                const line = `checkpoint ${label}: up of ${String(n).padStart(3)} node(s) x 1 device ${up.seconds.toFixed(1)} s, export ${kib(bytes[n].indented)} indented, ${kib(bytes[n].compact)} compact`;
                if (n > 1) {
                    const per = (k: "indented" | "compact") => (bytes[n][k] - bytes[1][k]) / (n - 1);
                    console.log(`${line}; per node ${kib(per("indented"))} indented, ${kib(per("compact"))} compact (goal <= 16 KiB), ${load()}`);
                    // Where the growth is: the node's own resources, and anything shared that grew (a
                    // cluster-wide object the stacks adopt in turn, such as the retained CRD, grows with its history, not with N).
                    for (const [type, b] of byType[n]) {
                        const grew = (b - (byType[1].get(type) ?? 0)) / (n - 1);
                        if (Math.abs(grew) >= 50) {
                            console.log(`  per node ${type}: ${kib(grew)}`);
                        }
                    }
                } else {
                    console.log(`${line}, ${load()}`);
                }
                if (n === most) {
                    console.log(`node1's resources by field (${label}, bytes of indented JSON):`);
                    for (const l of nodeFieldBytes(exported, "node1")) {
                        console.log(l);
                    }
                }
                const destroy = ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), `pulumi destroy of ${n} nodes`);
                console.log(`checkpoint ${label}: destroy of ${String(n).padStart(3)} node(s) ${destroy.seconds.toFixed(1)} s, ${load()}`);
                ok(await stack.pulumi(["stack", "rm", "--yes"]), "pulumi stack rm");
            }
        }
    } finally {
        if (agentPid) {
            process.kill(agentPid);
        }
        old?.cleanup();
        sandbox.stop();
    }
}

if (require.main === module) {
    const args = process.argv.slice(2);
    const fail = (e: unknown) => {
        console.error(e instanceof Error ? e.message : e);
        process.exit(1);
    };
    if (args[0] === "--checkpoint") {
        const at = args.indexOf("--before");
        checkpointBench(args[1].split(",").map(Number), at > 0 ? args[at + 1] : nodePatchLabelsCommit).catch(fail);
    } else {
        // No argument: 10, 100 and 500 nodes; `0` alone: no preview, only the `up` figures.
        engineBench(args.length ? args.map(Number).filter((n) => n > 0) : [10, 100, 500]).catch(fail);
    }
}
