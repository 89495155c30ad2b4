import * as yaml from "js-yaml";
import { PlannedResource } from "./plan/model";
import { planConfig } from "./plan/runner";
import { parseStackYaml } from "./plan/stackFile";
import { benchHostKey } from "./benchStack";

/**
 * Plan inputs by size (the bytes of each resource's inputs as `--json` prints them, compact):
 * what a stack's checkpoint holds at least once, and as `--json` prints them (indented).
 * `npx tsx tools/benchInputs.ts [--verbose] [--program <index.ts of another checkout>]`. Stacks:
 * a 3-host CephFS with 4 OSDs (node5 has two devices), and one LVM node with 4 devices.
 */
const nodes = { node3: { address: "10.0.0.13" }, node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" } };
const ssh = { user: "root", privateKey: { secure: "v1:bench" }, hostKeys: { node3: benchHostKey } };
export const benchStacks: Record<string, Record<string, unknown>> = {
    "cephfs: 3 hosts, 4 OSDs": {
        ssh,
        nodes,
        cephfs: [{ name: "shared-fs", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x6"] } }],
    },
    "lvm: 1 node, 4 devices": {
        ssh,
        nodes: { node3: nodes.node3 },
        lvm: [{ name: "local-fast", hosts: { node3: ["/dev/disk/by-id/wwn-0x1", "/dev/disk/by-id/wwn-0x2", "/dev/disk/by-id/wwn-0x3", "/dev/disk/by-id/wwn-0x4"] } }],
    },
};

const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;

/** Each resource's input bytes, largest first. */
export function inputSizes(resources: PlannedResource[]): Array<{ name: string; type: string; bytes: number; printed: number }> {
    return resources
        .map((r) => ({ name: r.name, type: r.type, bytes: Buffer.byteLength(JSON.stringify(r.inputs)), printed: Buffer.byteLength(JSON.stringify(r.inputs, null, 2)) }))
        .sort((a, b) => b.bytes - a.bytes);
}

async function main(): Promise<void> {
    const verbose = process.argv.includes("--verbose");
    const at = process.argv.indexOf("--program");
    const program = at > 0 ? process.argv[at + 1] : undefined;
    for (const [label, values] of Object.entries(benchStacks)) {
        const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [`zcloud-storage:${k}`, v]));
        const run = await planConfig(parseStackYaml(yaml.dump({ config }), "bench"), program);
        if (run.error) {
            throw new Error(`${label}: ${run.error.message}`);
        }
        const sizes = inputSizes(run.resources);
        const total = sizes.reduce((sum, s) => sum + s.bytes, 0);
        const printed = sizes.reduce((sum, s) => sum + s.printed, 0);
        console.log(`${label}: plan inputs ${kb(total)} (${kb(printed)} as --json prints them) in ${sizes.length} resources; largest ${sizes[0].name} ${kb(sizes[0].bytes)}`);
        if (verbose) {
            for (const s of sizes.filter((s) => s.bytes >= 1000)) {
                console.log(`  ${kb(s.bytes).padStart(9)}  ${s.name} (${s.type})`);
            }
        }
    }
}

main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
