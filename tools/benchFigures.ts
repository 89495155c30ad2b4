/**
 * What a plan's resources carry as inputs (the engine's state holds them, and their outputs
 * again): bytes per LVM node, and a whole 3-host CephFS with 4 OSDs (node3 has two devices).
 * Inputs as the plan records them (`--json`, compact), secrets as "[secret]". `npm run bench`
 * prints them; with `--verbose` each stack's resources of 1 KB or more, largest first.
 */
import * as yaml from "js-yaml";
import { PlannedResource } from "./plan/model";
import { planConfig } from "./plan/runner";
import { parseStackYaml } from "./plan/stackFile";
import { benchHostKey, benchNodeNames, generatedLvmValues } from "./benchStack";

const inputBytes = (rs: PlannedResource[]) => rs.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r.inputs)), 0);

async function plan(values: Record<string, unknown>, program?: string): Promise<PlannedResource[]> {
    const withKey = { ...values, ssh: { ...(values.ssh as Record<string, unknown>), privateKey: { secure: "v1:bench" } } };
    const config = Object.fromEntries(Object.entries(withKey).map(([k, v]) => [`zcloud-storage:${k}`, v]));
    const run = await planConfig(parseStackYaml(yaml.dump({ config }), "figures"), program);
    if (run.error) {
        throw new Error(`figures plan: ${run.error.message}`);
    }
    return run.resources;
}

/** Each resource's input bytes (compact, and indented as `--json` prints them), largest first. */
export function inputSizes(resources: PlannedResource[]): Array<{ name: string; type: string; bytes: number; printed: number }> {
    return resources
        .map((r) => ({ name: r.name, type: r.type, bytes: Buffer.byteLength(JSON.stringify(r.inputs)), printed: Buffer.byteLength(JSON.stringify(r.inputs, null, 2)) }))
        .sort((a, b) => b.bytes - a.bytes);
}

export interface LocalCommandFigures {
    count: number;
    bytes: number;
    largest: number;
}

/** Count, input bytes in all and the largest's of some resources. */
function localCommandFigures(rs: PlannedResource[]): LocalCommandFigures {
    const sizes = rs.map((r) => Buffer.byteLength(JSON.stringify(r.inputs)));
    return { count: sizes.length, bytes: sizes.reduce((a, b) => a + b, 0), largest: Math.max(0, ...sizes) };
}

export interface InputFigures {
    /** Inputs of one LVM node's resources (script copy, disk command, label), 4 devices. */
    lvmNodeBytes: number;
    /** Inputs of every resource of a stack with one CephFS on 3 hosts and 4 OSDs. */
    cephfs3x4Bytes: number;
    /** Of those, the remote side: the disk commands and their script copies. */
    cephfs3x4RemoteBytes: number;
    /** Of those, the roll's health gates (local commands): count, bytes in all, the largest's. */
    cephfs3x4Gates: LocalCommandFigures;
    /** Of those, the OSD drains (local commands, one per OSD). */
    cephfs3x4Drains: LocalCommandFigures;
    /** The planned resources the figures come from: 10 LVM nodes, and the CephFS stack. */
    stacks: Record<"lvm: 10 nodes, 4 devices each" | "cephfs: 3 hosts, 4 OSDs", PlannedResource[]>;
}

/** The figures of this program, or of `program` (another version's index.ts, for comparison). */
export async function inputFigures(program?: string): Promise<InputFigures> {
    const nodes = 10;
    const names = benchNodeNames(nodes);
    const lvm = await plan(generatedLvmValues(nodes), program);
    const ofNodes = lvm.filter((r) => names.some((n) => r.name.startsWith(`local-fast-${n}-`)));
    const hosts = benchNodeNames(3);
    const devices = (i: number, n: number) => Array.from({ length: n }, (_, d) => `/dev/disk/by-id/wwn-0x5000c5${i}${d}`);
    const cephValues = {
        ssh: { user: "root", hostKeys: Object.fromEntries(hosts.map((n) => [n, benchHostKey])) },
        nodes: Object.fromEntries(hosts.map((n, i) => [n, { address: `10.0.0.${i + 1}` }])),
        cephfs: [{ name: "shared-fs", hosts: { [hosts[0]]: devices(0, 1), [hosts[1]]: devices(1, 1), [hosts[2]]: devices(2, 2) } }],
    };
    const ceph = await plan(cephValues, program);
    return {
        lvmNodeBytes: Math.round(inputBytes(ofNodes) / nodes),
        cephfs3x4Bytes: inputBytes(ceph),
        cephfs3x4RemoteBytes: inputBytes(ceph.filter((r) => r.type.startsWith("command:remote:"))),
        cephfs3x4Gates: localCommandFigures(ceph.filter((r) => r.type === "command:local:Command" && r.name.includes("-gate-"))),
        cephfs3x4Drains: localCommandFigures(ceph.filter((r) => r.type === "command:local:Command" && r.name.endsWith("-drain"))),
        stacks: { "lvm: 10 nodes, 4 devices each": lvm, "cephfs: 3 hosts, 4 OSDs": ceph },
    };
}

const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;

/** The input figures as lines; with `verbose`, each stack's resources of 1 KB or more. */
export function inputFigureLines(f: InputFigures, verbose: boolean): string[] {
    const lines = [
        `plan inputs per LVM node (4 devices): ${kb(f.lvmNodeBytes)} (goal <= 4 KB)`,
        `plan inputs of a 3-host CephFS with 4 OSDs: ${kb(f.cephfs3x4Bytes)} (goal <= 300 KB), of which disk commands and script copies ${kb(f.cephfs3x4RemoteBytes)}`,
        `  its ${f.cephfs3x4Gates.count} health gates: ${kb(f.cephfs3x4Gates.bytes)} (largest ${kb(f.cephfs3x4Gates.largest)}); its ${f.cephfs3x4Drains.count} OSD drains: ${kb(f.cephfs3x4Drains.bytes)} (largest ${kb(f.cephfs3x4Drains.largest)})`,
    ];
    if (verbose) {
        for (const [label, resources] of Object.entries(f.stacks)) {
            const sizes = inputSizes(resources);
            const printed = sizes.reduce((sum, s) => sum + s.printed, 0);
            lines.push(`${label}: ${sizes.length} resources, ${kb(printed)} as --json prints the inputs; of 1 KB or more:`);
            lines.push(...sizes.filter((s) => s.bytes >= 1000).map((s) => `  ${kb(s.bytes).padStart(9)}  ${s.name} (${s.type})`));
        }
    }
    return lines;
}
