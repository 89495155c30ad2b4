/**
 * Plans a stack config with the real program under Pulumi's mock runtime (tools/plan), for tests
 * that assert the resource graph. Each call runs in a fresh process, like `npm run plan`.
 */
import assert from "node:assert/strict";
import { before } from "node:test";
import * as yaml from "js-yaml";
import { PlanRun, PlannedResource } from "../../tools/plan/model";
import { planConfig } from "../../tools/plan/runner";
import { parseStackYaml } from "../../tools/plan/stackFile";

export { PlanRun, PlannedResource };

/** Plans stack-file text (`config:` with `zcloud-storage:` keys, `secure:` leaves allowed). */
export function planYaml(text: string, program?: string): Promise<PlanRun> {
    return planConfig(parseStackYaml(text, "test"), program);
}

/** Plans `zcloud-storage:` keys given without prefix, as a stack file would hold them. */
export function planValues(values: Record<string, unknown>, program?: string): Promise<PlanRun> {
    const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v]));
    return planYaml(yaml.dump({ config }), program);
}

/**
 * Registers the test file's `before`: `config` planned by this program (it must plan without
 * error); the getter gives the plan once `before` ran.
 */
export function planBefore(config: Record<string, unknown>): () => PlanRun {
    let run: PlanRun | undefined;
    before(async () => {
        run = await planValues(config);
        assert.equal(run.error, undefined, run.error?.message);
    });
    return () => run!;
}

/** Resource types as plans name them. */
export const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
export const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
export const JOB = "kubernetes:batch/v1:Job";
export const CONFIG_MAP = "kubernetes:core/v1:ConfigMap";
export const SECRET = "kubernetes:core/v1:Secret";
export const NODE_PATCH = "kubernetes:core/v1:NodePatch";
export const STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass";
export const CSI_DRIVER = "kubernetes:storage.k8s.io/v1:CSIDriver";
export const CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole";
/** A node's command over SSH, and the file copy it runs. */
export const COMMAND = "command:remote:Command";
export const COPY = "command:remote:CopyToRemote";
/** A command on the machine running Pulumi. */
export const LOCAL = "command:local:Command";

export function resourcesOfType(run: PlanRun, type: string): PlannedResource[] {
    return run.resources.filter((r) => r.type === type);
}

export function resourceNamed(run: PlanRun, name: string, type?: string): PlannedResource {
    const found = run.resources.filter((r) => r.name === name && (!type || r.type === type));
    if (found.length !== 1) {
        throw new Error(`expected one resource named ${name}${type ? ` of type ${type}` : ""}, found ${found.length}: ${run.resources.map((r) => r.name).join(", ")}`);
    }
    return found[0];
}

/** A base config most graph tests start from: SSH key as a secret, three nodes. */
export const baseConfig = {
    ssh: { user: "root", privateKey: { secure: "v1:test-ciphertext" }, hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1" } },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13", port: 2222, user: "ops" } },
};

/** baseConfig's nodes and node4 .. node<last> (addresses 10.0.0.14 ..). */
export function nodesThrough(last: number): Record<string, { address: string; port?: number; user?: string }> {
    const more = Array.from({ length: last - 3 }, (_, k) => [`node${k + 4}`, { address: `10.0.0.${k + 14}` }]);
    return { ...baseConfig.nodes, ...Object.fromEntries(more) };
}

/**
 * baseConfig with node4 .. node6 and one CephFS storage `shared-fs` on them (node6 with two
 * devices), through the kube context `prod-admin`: the Ceph upgrade tests' stack.
 */
export const sharedFsConfig = {
    ...baseConfig,
    nodes: nodesThrough(6),
    "kubernetes:context": "prod-admin",
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
};

/** baseConfig with one iSCSI storage `san` (CHAP, initiators node1 and node2): the iSCSI upgrade tests' stack. */
export const sanIscsiConfig = {
    ...baseConfig,
    iscsi: [
        {
            name: "san",
            portals: ["10.0.0.50:3260"],
            iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
            lun: 1,
            chap: { username: "k8s", password: { secure: "v1:chap-ciphertext" } },
            initiators: ["node1", "node2"],
        },
    ],
};
