import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { diffPlans } from "../../tools/plan/diff";
import { cephLibraryName, cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";
import { evaluatePolicies } from "../../policy/policies";
import { CONFIG_MAP, DEPLOYMENT, LOCAL, PlanRun, PlannedResource, SECRET, baseConfig, nodesThrough, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";
import { scriptArgv } from "../helpers/cephScripts";

/** The gate updates a change of one host's OSDs brings: that host's gates, noout and roll-start (they guard its templates). */
const gatesAround = (node: string) => [
    `update shared-fs-gate-${node}-ok-to-stop`,
    `update shared-fs-gate-${node}-osd-up`,
    "update shared-fs-gate-noout-set",
    "update shared-fs-gate-noout-unset",
    "update shared-fs-gate-roll-start",
];

const REMOTE = "command:remote:Command";
/** A Ceph key in base64: AES-128 (`AQ...==`, 40 characters) or AES-256 (`Ag...=`, 60). */
const KEY_LIKE = /AQ[A-Za-z0-9+/]{36}==|Ag[A-Za-z0-9+/]{57}=/;

const nodes = nodesThrough(6);
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
/** r comes after `on` through a chain of dependencies (the roll's order, test/plan/ceph-roll.test.ts). */
function after(r: PlannedResource, on: PlannedResource, plan: PlanRun = run): boolean {
    const byUrn = new Map(plan.resources.map((x) => [x.urn, x]));
    const seen = new Set<string>();
    const walk = (x: PlannedResource): boolean =>
        x.dependencies.some((d) => d === on.urn || (!seen.has(d) && (seen.add(d), byUrn.has(d)) && walk(byUrn.get(d)!)));
    return walk(r);
}
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
        assert.ok(after(mgrA, monA));
        assert.ok(after(osd, mgrA));
        assert.ok(after(mds, osd));
        assert.ok(after(fs, mds));
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
        const fsid = /fsid = ([0-9a-f-]{36})/.exec(String((named("shared-fs-ceph-conf", CONFIG_MAP).inputs as any).data["ceph.conf"]))![1];
        // the stub, the local set's ConfigMap and hash, then cephfs-osd-remove.sh's arguments
        const local = cephScriptSetName("shared-fs", "cephfs-osd-remove.sh");
        assert.ok(dependsOn(drain, named(local, CONFIG_MAP)), "the local set outlives the drain that names it");
        assert.match(del, new RegExp(`^sh -c '.*' cephfs-osd-remove ${local} ${cephScriptBundle("cephfs-osd-remove.sh").sha256} --namespace zcloud-storage --fsid ${fsid} --node node5 --device /dev/disk/by-id/wwn-0x6 --devices-annotation storage\\.zcloud\\.io/cephfs-devices `, "s"));
        assert.ok(Buffer.byteLength(del) < 2500, `the delete carries no script text: ${Buffer.byteLength(del)} bytes`);
        assert.match(del, /--osd-deployment ceph-shared-fs-osd-node5-wwn-0x6 /);
        assert.equal((drain.inputs as any).create, undefined, "nothing runs on create");
        assert.match(del, / --script-configmap ceph-shared-fs-scripts-osd-drain-[0-9a-f]{12} --library-configmap ceph-shared-fs-scripts-library-[0-9a-f]{12}$/);
    });

    test("mons and OSDs are pinned to their nodes; mons by name order, OSDs also need the label", () => {
        const mons = ["a", "b", "c"].map((id) => podSpec(named(`ceph-shared-fs-mon-${id}`, DEPLOYMENT)).nodeSelector);
        assert.deepEqual(mons, [{ "kubernetes.io/hostname": "node3" }, { "kubernetes.io/hostname": "node4" }, { "kubernetes.io/hostname": "node5" }]);
        const osd = named("ceph-shared-fs-osd-node4-wwn-0x4", DEPLOYMENT);
        assert.deepEqual(podSpec(osd).nodeSelector, { "kubernetes.io/hostname": "node4", "storage.zcloud.io/cephfs": "shared-fs" });
        assert.deepEqual(scriptArgv(podSpec(osd).containers[0].command), ["/etc/zcloud/scripts/ceph-osd.sh", "run", "--device", "/dev/disk/by-id/wwn-0x4", "--host", "node4"]);
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
            assert.deepEqual(scriptArgv(init), ["/etc/zcloud/scripts/ceph-mon-init.sh", "--id", id, ...ips.flatMap((ip, i) => ["--mon", `${"abc"[i]}=${ip}`]), "--initial", "a", "--allow-aes-keys"]);
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
        const keyNames = (o: Record<string, string>) => Object.keys(o).filter((k) => new RegExp(`^(?:${KEY_LIKE.source})$`).test(o[k])).sort();
        assert.deepEqual(keyNames(opened("shared-fs-ceph-osd-keys")), ["bootstrap-osd"]);
        assert.deepEqual(keyNames(opened("shared-fs-ceph-keys")), ["admin", "bootstrap-osd", "csi", "mon"]);
        const csi = opened("shared-fs-csi-secret");
        assert.deepEqual(keyNames(csi), ["adminKey", "userKey"]);
        assert.equal(csi.userID, "csi");
        assert.equal(csi.adminID, "csi");
        assert.equal(csi.adminKey, csi.userKey, "the least-privilege CSI user provisions and mounts");
        // Per entity (Ceph 20): the daemon and admin keys AES-256, the CSI user's AES-128, the
        // type every kernel CephFS client reads (docs/cephfs.md "Keys on Ceph 20").
        const keys = opened("shared-fs-ceph-keys");
        assert.deepEqual(Object.fromEntries(["admin", "bootstrap-osd", "csi", "mon"].map((k) => [k, keys[k].slice(0, 2)])), { admin: "Ag", "bootstrap-osd": "Ag", csi: "AQ", mon: "Ag" });
        assert.equal(csi.userKey, keys.csi);
        for (const r of run.resources.filter((r) => r.type !== SECRET)) {
            assert.doesNotMatch(JSON.stringify(r.inputs), KEY_LIKE, `${r.type} ${r.name}`);
        }
        for (const cm of resourcesOfType(run, CONFIG_MAP)) {
            // a secret value would be the string "[secret]" (ceph-osd.sh's redaction holds it unquoted)
            assert.doesNotMatch(JSON.stringify(cm.inputs), /"\[secret\]"/, cm.name);
        }
    });

    test("each container mounts only the Secret keys its step uses; long-running mon, mgr and mds mount none", () => {
        const workloads = run.resources.filter((r) => /^kubernetes:(apps\/v1:(Deployment|DaemonSet)|batch\/v1:Job)$/.test(r.type) && /^(ceph-shared-fs-|shared-fs-)/.test(r.name));
        const mounted: Record<string, string> = {};
        for (const w of workloads) {
            const pod = podSpec(w);
            for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
                const keys = (c.volumeMounts ?? []).flatMap((m: any) => {
                    const secret = pod.volumes.find((v: any) => v.name === m.name)?.secret;
                    if (!secret) return [];
                    assert.ok(secret.items, `${w.name}/${c.name}: Secret ${secret.secretName} mounted whole`);
                    return secret.items.map((i: any) => `${secret.secretName}:${i.key}`);
                });
                mounted[`${w.name}/${c.name}`] = keys.sort().join(" ");
            }
        }
        const keys = (...k: string[]) => k.map((x) => `ceph-shared-fs-${x}`).join(" ");
        const expected: Record<string, string> = {
            "ceph-shared-fs-admin/admin": keys("keys:admin"),
            "shared-fs-filesystem/filesystem": keys("keys:admin", "keys:csi"),
            "shared-fs-filesystem/csi-user": keys("keys:admin", "keys:csi"),
        };
        for (const id of ["a", "b", "c"]) {
            expected[`ceph-shared-fs-mon-${id}/mon-init`] = keys("keys:admin", "keys:bootstrap-osd", "keys:mon");
            expected[`ceph-shared-fs-mon-${id}/mon`] = "";
        }
        for (const [type, ids] of [["mgr", ["a", "b"]], ["mds", ["a", "b"]]] as const) {
            for (const id of ids) {
                expected[`ceph-shared-fs-${type}-${id}/keyring`] = keys("keys:admin");
                expected[`ceph-shared-fs-${type}-${id}/${type}`] = "";
            }
        }
        for (const osd of ["node3-wwn-0x3", "node4-wwn-0x4", "node5-wwn-0x5", "node5-wwn-0x6"]) {
            expected[`ceph-shared-fs-osd-${osd}/osd`] = keys("osd-keys:bootstrap-osd");
            // its prepare Job: the same key, nothing more
            const [node, dev] = osd.split(/-(.*)/);
            expected[`shared-fs-${node}-osd-${dev}-prepare/prepare`] = keys("osd-keys:bootstrap-osd");
        }
        assert.deepEqual(mounted, expected);
    });

    test("the drain's kubectl targets the provider's cluster: kubernetes:context, kubernetes:kubeconfig, or nothing (the script refuses)", async () => {
        const drainOf = async (extra: Record<string, unknown>) => {
            const r = await planValues({ ...cephfs({ node3: ["/dev/sdb"] }), ...extra });
            assert.equal(r.error, undefined, r.error?.message);
            return resourceNamed(r, "shared-fs-node3-osd-sdb-drain", LOCAL).inputs as any;
        };
        const none = await drainOf({});
        assert.match(none.delete, / --timeout 600 --script-configmap ceph-shared-fs-scripts-osd-drain-[0-9a-f]{12} --library-configmap ceph-shared-fs-scripts-library-[0-9a-f]{12}$/, "no --context nor --kubeconfig after the last argument");
        const ctx = await drainOf({ "kubernetes:context": "prod-admin" });
        assert.match(ctx.delete, / --context prod-admin$/);
        const file = await drainOf({ "kubernetes:context": "prod-admin", "kubernetes:kubeconfig": "/srv/kube/prod.yaml" });
        assert.match(file.delete, / --context prod-admin --kubeconfig \/srv\/kube\/prod\.yaml$/);
        const content = await drainOf({ "kubernetes:kubeconfig": "apiVersion: v1\nkind: Config\n" });
        assert.match(content.delete, / --kubeconfig-from-env$/);
        assert.equal(content.environment, "[secret]", "kubeconfig content only in the environment, kept as a secret");
        assert.doesNotMatch(content.delete, /apiVersion/);
    });

    test("the policy pack reports nothing for a valid cephfs stack", () => {
        assert.deepEqual(evaluatePolicies(run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }))), []);
    });

    test("adding a host adds exactly its disk command (and its script copy), label, OSD, its prepare Job and drain (the filesystem Job re-checks the host count)", () => {
        const changes = diffPlans(run.resources, grown.resources);
        const created = changes.filter((c) => c.kind === "create").map((c) => c.resource.name).sort();
        assert.deepEqual(created, [
            "ceph-shared-fs-osd-node6-wwn-0x7",
            "shared-fs-gate-node6-ok-to-stop",
            "shared-fs-gate-node6-osd-up",
            "shared-fs-node6-disks",
            "shared-fs-node6-disks-scripts",
            "shared-fs-node6-label",
            "shared-fs-node6-osd-wwn-0x7-drain",
            "shared-fs-node6-osd-wwn-0x7-prepare",
        ]);
        const others = changes.filter((c) => c.kind !== "create").map((c) => `${c.kind} ${c.resource.name}`);
        // The kubernetes provider replaces a Job whose template changed (it is immutable); the new
        // Job re-runs idempotently. noout guards every OSD: set and cleared again around the new
        // host's first start (no daemon restarts); roll-start guards every daemon: it checks the
        // cluster before the new OSD starts.
        assert.deepEqual(others, ["update shared-fs-gate-roll-start", "update shared-fs-gate-noout-set", "update shared-fs-gate-noout-unset", "replace shared-fs-filesystem"]);
        const fsJob = changes.find((c) => c.resource.name === "shared-fs-filesystem")!;
        assert.deepEqual(fsJob.fields, ["spec.template.spec"]);
        assert.deepEqual(fsJob.replaceBecause, ["spec.template.spec"]);
    });

    /** `npm run plan -- <new> --diff <old> --json` on two stack files: `<kind> <name>` per change, and the old plan. */
    async function planDiff(oldHosts: Record<string, string[]>, newHosts: Record<string, string[]>): Promise<{ changes: string[]; old: PlanRun }> {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-cephfs-diff-"));
        try {
            const file = (name: string, hosts: Record<string, string[]>) => {
                const f = path.join(dir, `Pulumi.${name}.yaml`);
                fs.writeFileSync(f, yaml.dump({ config: Object.fromEntries(Object.entries(cephfs(hosts)).map(([k, v]) => [`zcloud-storage:${k}`, v])) }));
                return f;
            };
            const [oldFile, newFile] = [file("old", oldHosts), file("new", newHosts)];
            const out = await new Promise<string>((resolve, reject) =>
                execFile(process.execPath, ["--import", "tsx", "tools/plan.ts", newFile, "--diff", oldFile, "--json"], { maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
                    err ? reject(new Error(stderr)) : resolve(stdout),
                ),
            );
            const changes = (JSON.parse(out).changes as Array<{ kind: string; urn: string }>).map((c) => `${c.kind} ${c.urn.split("::").pop()}`).sort();
            const old = await planValues(cephfs(oldHosts));
            assert.equal(old.error, undefined, old.error?.message);
            return { changes, old };
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }

    test("renaming a device path (kernel name to by-id) creates the new path's OSD, prepare Job and drain and deletes the old ones; the old drain's delete carries what the rename check needs", async () => {
        const { changes, old } = await planDiff({ ...threeHosts, node5: ["/dev/sdb", "/dev/sdc"] }, { ...threeHosts, node5: ["/dev/disk/by-id/wwn-0x5", "/dev/sdc"] });
        assert.deepEqual(changes, [
            "create ceph-shared-fs-osd-node5-wwn-0x5",
            "create shared-fs-node5-osd-wwn-0x5-drain",
            "create shared-fs-node5-osd-wwn-0x5-prepare",
            "delete ceph-shared-fs-osd-node5-sdb",
            "delete shared-fs-node5-osd-sdb-drain",
            "delete shared-fs-node5-osd-sdb-prepare",
            // node5's gates guard its OSDs' templates: they run again (nothing else of the roll).
            ...gatesAround("node5"),
            "update shared-fs-node5-disks",
            "update shared-fs-node5-label",
        ]);
        // Deletes run after the label update: the old drain reads the new list from this
        // annotation (same key) and keeps the OSD when a declared path is the same disk.
        const label = JSON.parse(String(resourceNamed(old, "shared-fs-node5-label").inputs.stdin));
        assert.equal(label.metadata.annotations["storage.zcloud.io/cephfs-devices"], "/dev/sdb,/dev/sdc");
        const drain = resourceNamed(old, "shared-fs-node5-osd-sdb-drain", LOCAL);
        const del = String((drain.inputs as any).delete);
        const fsid = /fsid = ([0-9a-f-]{36})/.exec(String((resourceNamed(old, "shared-fs-ceph-conf", CONFIG_MAP).inputs as any).data["ceph.conf"]))![1];
        const sorted = (selector: string) => selector.split(",").sort().join(",");
        const adminSelector = Object.entries((resourceNamed(old, "ceph-shared-fs-admin", "kubernetes:apps/v1:DaemonSet").inputs as any).spec.selector.matchLabels).map(([k, v]) => `${k}=${v}`);
        const args = del.slice(del.indexOf(" cephfs-osd-remove ") + 1).split(" ");
        args[args.indexOf("--admin-selector") + 1] = sorted(args[args.indexOf("--admin-selector") + 1]);
        assert.deepEqual(args, [
            ...["cephfs-osd-remove", cephScriptSetName("shared-fs", "cephfs-osd-remove.sh"), cephScriptBundle("cephfs-osd-remove.sh").sha256, "--namespace", "zcloud-storage", "--fsid", fsid, "--node", "node5", "--device", "/dev/sdb"],
            ...["--devices-annotation", "storage.zcloud.io/cephfs-devices", "--admin-selector", sorted(adminSelector.join(","))],
            ...["--osd-deployment", "ceph-shared-fs-osd-node5-sdb", "--osd-selector", "storage.zcloud.io/ceph-osd=ceph-shared-fs-osd-node5-sdb", "--timeout", "600"],
            ...["--script-configmap", cephScriptSetName("shared-fs", "ceph-osd-drain.sh"), "--library-configmap", cephLibraryName("shared-fs")],
        ]);
        assert.ok(dependsOn(drain, resourceNamed(old, "shared-fs-node5-label")), "the drain goes before the label it reads");
    });

    test("removing a device in the middle of a node's list deletes exactly that device's OSD, prepare Job and drain; the others do not change", async () => {
        const devs = ["/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x8"];
        const { changes } = await planDiff({ ...threeHosts, node5: devs }, { ...threeHosts, node5: [devs[0], devs[2]] });
        assert.deepEqual(changes, [
            "delete ceph-shared-fs-osd-node5-wwn-0x6",
            "delete shared-fs-node5-osd-wwn-0x6-drain",
            "delete shared-fs-node5-osd-wwn-0x6-prepare",
            ...gatesAround("node5"),
            "update shared-fs-node5-disks",
            "update shared-fs-node5-label",
        ]);
    });

    test("OSD workloads and drains are named by device path, as in earlier releases (no rename, no alias); an OSD is replaced delete-first", () => {
        const osd = named("ceph-shared-fs-osd-node5-wwn-0x6", DEPLOYMENT);
        assert.equal(osd.deleteBeforeReplace, true, "never two OSD daemons on one store through a replace");
        assert.deepEqual(
            run.resources.filter((r) => r.type === DEPLOYMENT && r.name.startsWith("ceph-shared-fs-osd-")).map((r) => r.name).sort(),
            ["ceph-shared-fs-osd-node3-wwn-0x3", "ceph-shared-fs-osd-node4-wwn-0x4", "ceph-shared-fs-osd-node5-wwn-0x5", "ceph-shared-fs-osd-node5-wwn-0x6"],
        );
        assert.deepEqual(
            run.resources.filter((r) => r.type === LOCAL && r.name.endsWith("-drain")).map((r) => r.name).sort(),
            ["shared-fs-node3-osd-wwn-0x3-drain", "shared-fs-node4-osd-wwn-0x4-drain", "shared-fs-node5-osd-wwn-0x5-drain", "shared-fs-node5-osd-wwn-0x6-drain"],
        );
    });
});
