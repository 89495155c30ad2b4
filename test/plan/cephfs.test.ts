import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { evaluatePolicies } from "../../policy/policies";
import { PlanRun, PlannedResource, baseConfig, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";

const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const CONFIG_MAP = "kubernetes:core/v1:ConfigMap";
const SECRET = "kubernetes:core/v1:Secret";
const REMOTE = "command:remote:Command";
const LOCAL = "command:local:Command";
const KEY_LIKE = /AQ[A-Za-z0-9+/]{36}==/;

const nodes = { ...baseConfig.nodes, node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" }, node6: { address: "10.0.0.16" } };
const hostKeys = Object.fromEntries(["node3", "node4", "node5", "node6"].map((n) => [n, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ${n}`]));
const ssh = { ...baseConfig.ssh, hostKeys: { ...baseConfig.ssh.hostKeys, ...hostKeys } };
const cephfs = (hosts: Record<string, string[]>) => ({ ...baseConfig, ssh, nodes, cephfs: [{ name: "shared-fs", hosts }] });
const threeHosts = { node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x6"] };

let run: PlanRun;
let grown: PlanRun;
before(async () => {
    [run, grown] = await Promise.all([planValues(cephfs(threeHosts)), planValues(cephfs({ ...threeHosts, node6: ["/dev/disk/by-id/wwn-0x7"] }))]);
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(grown.error, undefined, grown.error?.message);
});

const named = (name: string, type?: string) => resourceNamed(run, name, type);
const dependsOn = (r: PlannedResource, on: PlannedResource) => r.dependencies.includes(on.urn);
const podSpec = (r: PlannedResource) => (r.inputs as any).spec.template.spec;

describe("CephFS graph", () => {
    test("one storage component, its identity, one shared ceph-csi driver", () => {
        assert.deepEqual(resourcesOfType(run, "zcloud:storage:CephFsStorage").map((r) => r.name), ["shared-fs"]);
        assert.deepEqual(resourcesOfType(run, "zcloud:storage:CephFsIdentity").map((r) => r.name), ["shared-fs-identity"]);
        assert.equal(resourcesOfType(run, "zcloud:storage:CephCsiDriver").length, 1);
        assert.equal((named("ceph-csi-cephfs-csidriver").inputs as any).metadata.name, "cephfs.csi.ceph.com");
    });

    test("order: mon -> mgr -> osd -> mds -> filesystem -> CSI secret -> StorageClass", () => {
        const monA = named("ceph-shared-fs-mon-a", DEPLOYMENT);
        const mgrA = named("ceph-shared-fs-mgr-a", DEPLOYMENT);
        const osd = named("ceph-shared-fs-osd-node3-wwn-0x3", DEPLOYMENT);
        const mds = named("ceph-shared-fs-mds-a", DEPLOYMENT);
        const fs = named("shared-fs-filesystem");
        const csi = named("shared-fs-csi-secret");
        const sc = named("shared-fs-storageclass");
        assert.ok(dependsOn(mgrA, monA));
        assert.ok(dependsOn(osd, mgrA));
        assert.ok(dependsOn(mds, osd));
        assert.ok(dependsOn(fs, mds));
        assert.ok(dependsOn(csi, fs));
        assert.ok(dependsOn(sc, csi));
        assert.ok(dependsOn(sc, named("ceph-csi-cephfs-provisioner", DEPLOYMENT)));
        assert.equal(sc.deleteBeforeReplace, true);
        assert.equal(fs.deleteBeforeReplace, true);
    });

    test("per node independence: an OSD depends on its own node's disk command and label only", () => {
        const osd = named("ceph-shared-fs-osd-node5-wwn-0x6", DEPLOYMENT);
        for (const node of ["node3", "node4", "node5"]) {
            const disks = named(`shared-fs-${node}-disks`, REMOTE);
            const label = named(`shared-fs-${node}-label`);
            assert.equal(dependsOn(osd, disks), node === "node5", node);
            assert.equal(dependsOn(osd, label), node === "node5", node);
            assert.ok(dependsOn(label, disks));
            assert.equal(disks.deleteBeforeReplace, true);
        }
    });

    test("removal order: drain depends on the OSD workload, which depends on the disk command", () => {
        const drain = named("shared-fs-node5-osd-wwn-0x6-drain", LOCAL);
        const osd = named("ceph-shared-fs-osd-node5-wwn-0x6", DEPLOYMENT);
        const disks = named("shared-fs-node5-disks", REMOTE);
        const label = named("shared-fs-node5-label");
        assert.ok(dependsOn(drain, osd));
        assert.ok(dependsOn(drain, label), "the admin pod on the node (selected by the label) outlives the drain");
        assert.ok(dependsOn(drain, named("ceph-shared-fs-admin", "kubernetes:apps/v1:DaemonSet")));
        assert.ok(dependsOn(osd, disks));
        const del = String((drain.inputs as any).delete);
        assert.match(del, /cephfs-osd-remove --namespace zcloud-storage --node node5 --device \/dev\/disk\/by-id\/wwn-0x6 /);
        assert.match(del, /--osd-deployment ceph-shared-fs-osd-node5-wwn-0x6 /);
        assert.equal((drain.inputs as any).create, undefined, "nothing runs on create");
        assert.match(String((drain.inputs as any).environment.ZCLOUD_CEPH_DRAIN_SCRIPT), /ceph-osd-drain\.sh drain\|purge/);
    });

    test("mons and OSDs are pinned to their nodes; mons by name order, OSDs also need the label", () => {
        const mons = ["a", "b", "c"].map((id) => podSpec(named(`ceph-shared-fs-mon-${id}`, DEPLOYMENT)).nodeSelector);
        assert.deepEqual(mons, [{ "kubernetes.io/hostname": "node3" }, { "kubernetes.io/hostname": "node4" }, { "kubernetes.io/hostname": "node5" }]);
        const osd = named("ceph-shared-fs-osd-node4-wwn-0x4", DEPLOYMENT);
        assert.deepEqual(podSpec(osd).nodeSelector, { "kubernetes.io/hostname": "node4", "storage.zcloud.io/cephfs": "shared-fs" });
        assert.deepEqual(podSpec(osd).containers[0].command.slice(3), ["ceph-osd", "run", "--device", "/dev/disk/by-id/wwn-0x4", "--host", "node4"]);
        assert.equal((osd.inputs as any).spec.strategy.type, "Recreate");
        assert.equal((osd.inputs as any).spec.replicas, 1);
        const store = podSpec(named("ceph-shared-fs-mon-a", DEPLOYMENT)).volumes.find((v: any) => v.name === "mon-store");
        assert.equal(store.hostPath.path, "/var/lib/zcloud/ceph/shared-fs/mon");
    });

    test("mon addresses come from the mon Services into ceph.conf, mon-init and the ceph-csi config", () => {
        const svcs = ["a", "b", "c"].map((id) => named(`shared-fs-mon-${id}-service`));
        const identityOutputs = svcs.map((s) => (s.inputs as any).spec.ports.map((p: any) => p.port));
        assert.deepEqual(identityOutputs[0], [3300, 6789]);
        const conf = named("shared-fs-ceph-conf", CONFIG_MAP);
        const text = String((conf.inputs as any).data["ceph.conf"]);
        const ips = [...text.matchAll(/\[v2:([0-9.]+):3300,v1:\1:6789\]/g)].map((m) => m[1]);
        assert.equal(ips.length, 3, text);
        for (const s of svcs) {
            assert.ok(dependsOn(conf, s), `ceph.conf depends on ${s.name}`);
        }
        const fsid = /fsid = ([0-9a-f-]{36})/.exec(text)![1];
        const csi = JSON.parse(String((named("ceph-csi-cephfs-config", CONFIG_MAP).inputs as any).data["config.json"]));
        assert.deepEqual(csi, [{ clusterID: fsid, monitors: ips.map((ip) => `${ip}:6789`), cephFS: { subvolumeGroup: "csi" } }]);
        // every mon's init lists every mon of the config; only a, the first placed, is initial
        for (const id of ["a", "b", "c"]) {
            const init = podSpec(named(`ceph-shared-fs-mon-${id}`, DEPLOYMENT)).initContainers[0].command;
            assert.deepEqual(init.slice(3), ["ceph-mon-init", "--id", id, ...ips.flatMap((ip, i) => ["--mon", `${"abc"[i]}=${ip}`]), "--initial", "a"]);
        }
        // mons of different nodes never wait on each other's rollout (b and c wait for a quorum
        // in their init step instead)
        for (const [x, y] of [["b", "a"], ["c", "a"], ["c", "b"], ["a", "b"]]) {
            assert.ok(!dependsOn(named(`ceph-shared-fs-mon-${x}`, DEPLOYMENT), named(`ceph-shared-fs-mon-${y}`, DEPLOYMENT)), `mon ${x} does not depend on mon ${y}`);
        }
        const sc = (named("shared-fs-storageclass").inputs as any).parameters;
        assert.equal(sc.clusterID, fsid);
        assert.equal(sc.fsName, "shared-fs");
        assert.equal(sc.pool, "shared-fs-data");
        assert.equal(sc["csi.storage.k8s.io/provisioner-secret-name"], "ceph-shared-fs-csi");
    });

    test("keys live only in Secrets: secret inputs there, no key-like value anywhere else", () => {
        // The whole stringData is secret (it holds secret values); policy inputs open it.
        for (const name of ["shared-fs-ceph-keys", "shared-fs-ceph-osd-keys", "shared-fs-csi-secret"]) {
            assert.equal((named(name, SECRET).inputs as any).stringData, "[secret]", name);
        }
        const opened = (name: string) => (named(name, SECRET).policyInputs as any).stringData;
        const keyNames = (o: Record<string, string>) => Object.keys(o).filter((k) => /^AQ[A-Za-z0-9+/]{36}==$/.test(o[k])).sort();
        assert.deepEqual(keyNames(opened("shared-fs-ceph-osd-keys")), ["bootstrap-osd"]);
        assert.deepEqual(keyNames(opened("shared-fs-ceph-keys")), ["admin", "bootstrap-osd", "csi", "mon"]);
        const csi = opened("shared-fs-csi-secret");
        assert.deepEqual(keyNames(csi), ["adminKey", "userKey"]);
        assert.equal(csi.userID, "csi");
        assert.equal(csi.adminID, "csi");
        assert.equal(csi.adminKey, csi.userKey, "the least-privilege CSI user provisions and mounts");
        for (const r of run.resources.filter((r) => r.type !== SECRET)) {
            assert.doesNotMatch(JSON.stringify(r.inputs), KEY_LIKE, `${r.type} ${r.name}`);
        }
        for (const cm of resourcesOfType(run, CONFIG_MAP)) {
            assert.doesNotMatch(JSON.stringify(cm.inputs), /\[secret\]/, cm.name);
        }
    });

    test("the policy pack reports nothing for a valid cephfs stack", () => {
        assert.deepEqual(evaluatePolicies(run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }))), []);
    });

    test("adding a host adds exactly its disk command, label, OSD and drain (the filesystem Job re-checks the host count)", () => {
        const changes = diffPlans(run.resources, grown.resources);
        const created = changes.filter((c) => c.kind === "create").map((c) => c.resource.name).sort();
        assert.deepEqual(created, ["ceph-shared-fs-osd-node6-wwn-0x7", "shared-fs-node6-disks", "shared-fs-node6-label", "shared-fs-node6-osd-wwn-0x7-drain"]);
        const others = changes.filter((c) => c.kind !== "create").map((c) => `${c.kind} ${c.resource.name}`);
        // The kubernetes provider replaces a Job whose template changed (it is immutable); the new
        // Job re-runs idempotently.
        assert.deepEqual(others, ["replace shared-fs-filesystem"]);
        const fsJob = changes.find((c) => c.resource.name === "shared-fs-filesystem")!;
        assert.deepEqual(fsJob.fields, ["spec.template.spec"]);
        assert.deepEqual(fsJob.replaceBecause, ["spec.template.spec"]);
    });
});
