import { poolMinSize } from "../../components/cephfs/cluster";
import { cephScriptCall } from "../../components/cephfs/scripts";
import type { Change } from "./diff";
import type { PlannedResource } from "./model";

/** What a CephFS storage's filesystem Job asks of ceph-fs.sh: its storage, pool size, and whether the config set it. */
export interface FsReplicas {
    fs: string;
    replicas: number;
    configured: boolean;
}

type Container = { name?: string; command?: string[] };
type JobInputs = { spec?: { template?: { spec?: { initContainers?: Container[] } } } };

/** The filesystem Job's `ceph-fs.sh apply` arguments read back, or undefined for any other resource. */
export function fsReplicas(r: PlannedResource): FsReplicas | undefined {
    if (r.type !== "kubernetes:batch/v1:Job") {
        return undefined;
    }
    const init = (r.inputs as JobInputs).spec?.template?.spec?.initContainers ?? [];
    for (const c of init) {
        const call = c.command && cephScriptCall(c.command);
        if (!call || !call.path.endsWith("/ceph-fs.sh") || call.args[0] !== "apply") {
            continue;
        }
        const value = (flag: string) => call.args[call.args.indexOf(flag) + 1];
        const replicas = Number(value("--replicas"));
        if (call.args.includes("--replicas") && Number.isInteger(replicas)) {
            return { fs: value("--fs"), replicas, configured: call.args.includes("--replicas-configured") };
        }
    }
    return undefined;
}

/**
 * Changes that would lower a CephFS storage's copies (pool size, and with it min_size) without
 * the stack config saying so: `replicas` left to its default, min(3, hosts), which falls when
 * hosts are removed. `pulumi up` refuses them on the cluster (ceph-fs.sh, after the daemons'
 * roll); the offline diff refuses them before anything runs. One message per storage.
 */
export function replicaRefusals(changes: Change[]): string[] {
    return changes.flatMap((c) => {
        const before = c.before && fsReplicas(c.before);
        const after = fsReplicas(c.resource);
        if (c.kind === "delete" || !before || !after || after.configured || after.replicas >= before.replicas) {
            return [];
        }
        const copies = (n: number) => `${n} cop${n === 1 ? "y" : "ies"} (min_size ${poolMinSize(n)})`;
        return [
            `cephfs ${after.fs}: its pools would keep ${copies(after.replicas)} instead of ${copies(before.replicas)}: replicas is not set, and its default, min(3, hosts), falls with the hosts removed. Set replicas: ${after.replicas} on this storage in the stack config to lower it on purpose, or keep the hosts; pulumi up refuses this change too (ceph-fs.sh, before any pool changes).`,
        ];
    });
}

/**
 * Mon workloads deleted without their leave (a stack made before mons had leave resources, or
 * one whose leave is gone from state): the monmap would keep listing the mon while its daemon is
 * gone, and the mons left could lose their quorum. Only a base planned by an older version (a
 * saved plan) shows this; `pulumi up` would do the same, so the diff refuses it.
 */
export function monLeaveRefusals(changes: Change[]): string[] {
    const leaving = new Set(changes.filter((c) => c.kind === "delete" && c.resource.type === "command:local:Command" && /-mon-[a-z]+-leave$/.test(c.resource.name)).map((c) => c.resource.name));
    return changes.flatMap((c) => {
        const m = /^ceph-(.+)-mon-([a-z]+)$/.exec(c.resource.name);
        if (c.kind !== "delete" || c.resource.type !== "kubernetes:apps/v1:Deployment" || !m || m[2] === "a" || leaving.has(`${m[1]}-mon-${m[2]}-leave`)) {
            return [];
        }
        return [
            `cephfs ${m[1]}: mon.${m[2]}'s workload would be deleted while the monmap still lists it (the stack has no leave resource for it: made by a version before mons left the monmap), so the mons left could lose their quorum. Run pulumi up once with this version and the current hosts (it creates the leave resources and changes nothing else), then remove the hosts.`,
        ];
    });
}
