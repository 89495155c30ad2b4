/**
 * CephFS script sets: every in-cluster user of a Ceph script (mon/mgr/mds init steps, OSD
 * workloads, the filesystem Job, the OSD drains) reads it from one immutable ConfigMap per set,
 * named by the set's hash, after the storage's shared library (lib.sh + ceph-lib.sh, one
 * immutable ConfigMap per storage); and what `pulumi up` does to a stack made by the program before this
 * shape (commit b2e6236, scripts inline): step kinds from the old program's plan to this one's.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { upgradeDiff } from "../helpers/labelMove";
import { cephLibraryBundle, cephLibraryName, cephScriptBundle } from "../../components/cephfs/scripts";
import { configHash } from "../../components/cephfs/gates";
import { CONFIG_MAP, DEPLOYMENT, LOCAL, PlanRun, PlannedResource, baseConfig, nodesThrough, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";
import { inlineScriptsCommit, oldProgram } from "../helpers/oldProgram";
import { readNodeScript } from "../../components/node/script";
import { scriptArgv } from "../helpers/cephScripts";

/** The last commit whose program shipped the Ceph scripts inline. */

const nodes = nodesThrough(5);
const values = {
    ...baseConfig,
    nodes,
    "kubernetes:context": "prod-admin",
    cephfs: [{ name: "shared-fs", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x6"] } }],
};

let run: PlanRun;
let old: PlanRun;
let cleanup = () => undefined as void;
before(async () => {
    const o = oldProgram(inlineScriptsCommit);
    cleanup = o.cleanup;
    [run, old] = await Promise.all([planValues(values), planValues(values, o.program)]);
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(old.error, undefined, old.error?.message);
});
after(() => cleanup());

const named = (name: string, type?: string) => resourceNamed(run, name, type);
const template = (r: PlannedResource) => (r.inputs as any).spec.template;
const setName = (short: string, script: Parameters<typeof cephScriptBundle>[0]) => `ceph-shared-fs-scripts-${short}-${cephScriptBundle(script).id}`;

describe("CephFS script sets", () => {
    test("one immutable ConfigMap per script set, named by its id, holding the script alone (cephfs-kube.sh + the script: the local sets); the library once", () => {
        const sets = resourcesOfType(run, CONFIG_MAP).filter((r) => r.name.includes("-scripts-"));
        assert.deepEqual(sets.map((r) => r.name).sort(), [
            cephLibraryName("shared-fs"),
            setName("cephfs-gate", "cephfs-gate.sh"),
            setName("cephfs-mon-remove", "cephfs-mon-remove.sh"),
            setName("cephfs-osd-remove", "cephfs-osd-remove.sh"),
            setName("fs", "ceph-fs.sh"),
            setName("gate", "ceph-gate.sh"),
            setName("keyring", "ceph-keyring.sh"),
            setName("mon-init", "ceph-mon-init.sh"),
            setName("mon-remove", "ceph-mon-remove.sh"),
            setName("osd", "ceph-osd.sh"),
            setName("osd-drain", "ceph-osd-drain.sh"),
        ].sort());
        const osd = named(setName("osd", "ceph-osd.sh"), CONFIG_MAP).inputs as any;
        assert.equal(osd.immutable, true);
        assert.equal(osd.metadata.name, setName("osd", "ceph-osd.sh"));
        assert.deepEqual(Object.keys(osd.data), ["ceph-osd.sh"]);
        assert.deepEqual(osd.data, { "ceph-osd.sh": readNodeScript("ceph/ceph-osd.sh") });
        const library = named(cephLibraryName("shared-fs"), CONFIG_MAP).inputs as any;
        assert.equal(library.immutable, true);
        assert.deepEqual(library.data, { "ceph-library.sh": ["lib.sh", "ceph/ceph-lib.sh"].map(readNodeScript).join("\n") });
        // lib.sh travels once per storage: in the library, in no set
        const lib = readNodeScript("lib.sh");
        assert.deepEqual(sets.filter((r) => Object.values((r.inputs as any).data).some((t) => String(t).includes(lib))).map((r) => r.name), [cephLibraryName("shared-fs")]);
        assert.match(cephScriptBundle("ceph-osd.sh").id, /^[0-9a-f]{12}$/);
        // the gates' and drains' local sets: cephfs-kube.sh + the script, read by their stub
        const gate = named(setName("cephfs-gate", "cephfs-gate.sh"), CONFIG_MAP).inputs as any;
        assert.equal(gate.immutable, true);
        assert.deepEqual(gate.data, { "cephfs-gate.sh": ["cephfs-kube.sh", "cephfs-gate.sh"].map(readNodeScript).join("\n") });
    });

    test("an OSD pod runs its set after the library, both from mounted ConfigMaps, and carries both hashes", () => {
        const osd = named("ceph-shared-fs-osd-node5-wwn-0x6", DEPLOYMENT);
        const t = template(osd);
        // The set's hash, ceph.conf's hash (the conf as planned) and the hash of the one key it mounts.
        const conf = (named("shared-fs-ceph-conf", CONFIG_MAP).inputs as any).data["ceph.conf"];
        assert.deepEqual(t.metadata.annotations, {
            "storage.zcloud.io/script-sets": `ceph-library.sh=${cephLibraryBundle().sha256},ceph-osd.sh=${cephScriptBundle("ceph-osd.sh").sha256}`,
            "storage.zcloud.io/ceph-conf": configHash(conf),
            "storage.zcloud.io/ceph-keys": t.metadata.annotations["storage.zcloud.io/ceph-keys"],
        });
        assert.match(t.metadata.annotations["storage.zcloud.io/ceph-keys"], /^[0-9a-f]{64}$/);
        // The mon mounts other keys than the OSD: another keys hash; the same ceph.conf.
        const mon = template(named("ceph-shared-fs-mon-a", DEPLOYMENT)).metadata.annotations;
        assert.notEqual(mon["storage.zcloud.io/ceph-keys"], t.metadata.annotations["storage.zcloud.io/ceph-keys"]);
        assert.equal(mon["storage.zcloud.io/ceph-conf"], configHash(conf));
        assert.deepEqual(scriptArgv(t.spec.containers[0].command), ["/etc/zcloud/scripts/ceph-osd.sh", "run", "--device", "/dev/disk/by-id/wwn-0x6", "--host", "node5"]);
        assert.deepEqual(t.spec.containers[0].volumeMounts.find((m: any) => m.name === "scripts"), { name: "scripts", mountPath: "/etc/zcloud/scripts", readOnly: true });
        assert.deepEqual(t.spec.volumes.find((v: any) => v.name === "scripts"), {
            name: "scripts",
            projected: {
                defaultMode: 0o555,
                sources: [
                    { configMap: { name: cephLibraryName("shared-fs"), items: [{ key: "ceph-library.sh", path: "ceph-library.sh" }] } },
                    { configMap: { name: setName("osd", "ceph-osd.sh"), items: [{ key: "ceph-osd.sh", path: "ceph-osd.sh" }] } },
                ],
            },
        });
        assert.ok(osd.dependencies.includes(named(setName("osd", "ceph-osd.sh"), CONFIG_MAP).urn));
        assert.ok(osd.dependencies.includes(named(cephLibraryName("shared-fs"), CONFIG_MAP).urn));
    });

    test("the filesystem Job mounts the library and both its sets; mon and mgr init steps theirs; the admin pods none", () => {
        const job = template(named("shared-fs-filesystem"));
        assert.equal(
            job.metadata.annotations["storage.zcloud.io/script-sets"],
            `ceph-library.sh=${cephLibraryBundle().sha256},ceph-fs.sh=${cephScriptBundle("ceph-fs.sh").sha256},ceph-keyring.sh=${cephScriptBundle("ceph-keyring.sh").sha256}`,
        );
        assert.deepEqual(job.spec.volumes.find((v: any) => v.name === "scripts").projected.sources.map((s: any) => s.configMap.name), [cephLibraryName("shared-fs"), setName("fs", "ceph-fs.sh"), setName("keyring", "ceph-keyring.sh")]);
        assert.deepEqual(scriptArgv(job.spec.initContainers[0].command).slice(0, 2), ["/etc/zcloud/scripts/ceph-fs.sh", "apply"]);
        assert.deepEqual(scriptArgv(job.spec.containers[0].command).slice(0, 2), ["/etc/zcloud/scripts/ceph-keyring.sh", "import"]);
        assert.deepEqual(scriptArgv(template(named("ceph-shared-fs-mon-b", DEPLOYMENT)).spec.initContainers[0].command).slice(0, 1), ["/etc/zcloud/scripts/ceph-mon-init.sh"]);
        assert.deepEqual(scriptArgv(template(named("ceph-shared-fs-mgr-a", DEPLOYMENT)).spec.initContainers[0].command), ["/etc/zcloud/scripts/ceph-keyring.sh", "daemon", "mgr", "a"]);
        const admin = template(named("ceph-shared-fs-admin", "kubernetes:apps/v1:DaemonSet"));
        assert.equal(admin.metadata.annotations, undefined);
        assert.equal(admin.spec.volumes.find((v: any) => v.name === "scripts"), undefined);
    });

    test("a drain names its set's and the library's ConfigMaps and depends on them (deleted after the drain), no script text in its environment", () => {
        const drain = named("shared-fs-node5-osd-wwn-0x6-drain", LOCAL);
        const cm = named(setName("osd-drain", "ceph-osd-drain.sh"), CONFIG_MAP);
        assert.ok(drain.dependencies.includes(cm.urn));
        assert.ok(drain.dependencies.includes(named(cephLibraryName("shared-fs"), CONFIG_MAP).urn));
        assert.match(String((drain.inputs as any).delete), new RegExp(` --script-configmap ${setName("osd-drain", "ceph-osd-drain.sh")} --library-configmap ${cephLibraryName("shared-fs")} --context prod-admin$`));
        assert.equal((drain.inputs as any).environment, undefined);
    });
});

describe("an existing stack made by the program with inline scripts", () => {
    test("pulumi up: the sets' ConfigMaps created, daemons and drains updated in place, the Job replaced as on any script change; nothing deleted, no drain replaced", () => {
        const changes = upgradeDiff(old.resources, run.resources);
        const by = (kind: string) => changes.filter((c) => c.kind === kind).map((c) => c.resource.name).sort();
        // New: the script sets' ConfigMaps, and each node's disk-script copy (test/plan/bundle-upgrade.test.ts).
        const diskCopies = ["node3", "node4", "node5"].map((n) => `shared-fs-${n}-disks-scripts`);
        // And the roll's gates (test/plan/ceph-roll.test.ts) and the OSD prepare Jobs (test/plan/ceph-osd-prepare.test.ts).
        const gates = resourcesOfType(run, LOCAL).filter((r) => r.name.startsWith("shared-fs-gate-")).map((r) => r.name);
        const prepares = ["node3-osd-wwn-0x3", "node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node5-osd-wwn-0x6"].map((d) => `shared-fs-${d}-prepare`);
        assert.equal(gates.length, 1 + 3 + 2 + 2 + 2 * 3 + 2 * 2);
        // (The mons' leave resources and their sets are left to test/plan/ceph-shrink.test.ts, as upgradeDiff does.)
        const sets = resourcesOfType(run, CONFIG_MAP).filter((r) => r.name.includes("-scripts-") && !/-mon-remove-/.test(r.name));
        assert.deepEqual(by("create"), [...sets.map((r) => r.name), ...diskCopies, ...gates, ...prepares].sort());
        assert.deepEqual(by("delete"), []);
        assert.deepEqual(by("replace"), ["shared-fs-filesystem"], "a Job's template is immutable: replaced (delete first) as a script change does today");
        const daemons = ["mon-a", "mon-b", "mon-c", "mgr-a", "mgr-b", "mds-a", "mds-b", "osd-node3-wwn-0x3", "osd-node4-wwn-0x4", "osd-node5-wwn-0x5", "osd-node5-wwn-0x6"].map((d) => `ceph-shared-fs-${d}`);
        const drains = ["node3-osd-wwn-0x3", "node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node5-osd-wwn-0x6"].map((d) => `shared-fs-${d}-drain`);
        const diskCommands = ["node3", "node4", "node5"].map((n) => `shared-fs-${n}-disks`);
        // The admin pods: only their image (Squid -> Tentacle, test/plan/ceph-release-upgrade.test.ts).
        const admin = "ceph-shared-fs-admin";
        // The ceph-csi provisioner: its plugin's --setmetadata (test/plan/cephcsi-setmetadata-upgrade.test.ts).
        const csiProvisioner = "ceph-csi-cephfs-provisioner";
        assert.deepEqual(by("update"), [...daemons, ...drains, ...diskCommands, admin, csiProvisioner].sort());
        assert.deepEqual(changes.find((c) => c.resource.name === admin)!.fields, ["spec.template.spec"]);
        assert.deepEqual(changes.find((c) => c.resource.name === csiProvisioner)!.fields, ["spec.template.spec"]);
        for (const c of changes.filter((c) => c.kind === "update" && !diskCommands.includes(c.resource.name) && c.resource.name !== admin && c.resource.name !== csiProvisioner)) {
            const fields = c.resource.type === LOCAL ? ["delete", "environment"] : ["spec.template.metadata", "spec.template.spec"];
            assert.deepEqual(c.fields, fields, c.resource.name);
            assert.deepEqual(c.replaceBecause, [], c.resource.name);
        }
        // The labels stay as they are.
        for (const name of ["shared-fs-node3-label", "shared-fs-node5-label"]) {
            assert.equal(changes.find((c) => c.resource.name === name), undefined, name);
        }
    });
});
