/**
 * The move from Ceph Squid 19.2.4 to Tentacle 20.2.4 on an existing CephFS stack: the stack made
 * by the program at 3aac0da (quay.io/ceph/ceph:v19.2.4, the gated roll in place) planned again
 * by this program, which ships quay.io/ceph/ceph:v20.2.4; both under the mock runtime with one
 * config, then the offline diff. Every Ceph container's image moves (mons, mgrs, OSDs, mdss,
 * the admin DaemonSet: in-place updates of the pod template; the filesystem Job is replaced, as
 * any Job whose template changes), every gate runs again (its guard hash), the mon-init script
 * set is new (ceph-mon-init.sh takes --allow-aes-keys) and the mons' init step gets
 * `--allow-aes-keys` (a new monmap's ciphers: it never touches an existing store). The keys,
 * Secrets (the CSI user's key stays AES-128), ceph.conf, disk
 * commands, labels, ceph-csi (v3.17.1) and the StorageClass do not change; nothing else is
 * replaced or deleted. The shared script library (lib.sh + ceph-lib.sh moved out of each Ceph
 * set, test/plan/ceph-library.test.ts) rides on the same update of each pod template: a user
 * moving from 3aac0da gets one gated roll, not two.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CephScript, cephLibraryName, cephScriptSetName } from "../../components/cephfs/scripts";
import { upgradeDiff } from "../helpers/labelMove";
import { movedToLibrary, onStorageHosts, withPrepareLocks } from "../helpers/cephScripts";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { PlanRun, sharedFsConfig } from "../helpers/plan";

/** main before the move (it ships quay.io/ceph/ceph:v19.2.4, with the gates and roll-start). */
const baseCommit = "3aac0da";

const plans = plansBeforeAndNow(baseCommit, sharedFsConfig);

/** Every container image of a planned resource (pod templates and Jobs). */
function imagesOf(r: PlanRun["resources"][number]): string[] {
    return JSON.stringify(r.inputs).match(/"image":"[^"]+"/g)?.map((m) => m.slice(9, -1)) ?? [];
}
const cephImages = (plan: PlanRun) => [...new Set(plan.resources.flatMap(imagesOf).filter((i) => i.startsWith("quay.io/ceph/ceph:")))];

test(`${baseCommit} shipped Squid v19.2.4, this program ships Tentacle v20.2.4 in every Ceph container; ceph-csi stays v3.17.1`, () => {
    assert.deepEqual(cephImages(plans.before()), ["quay.io/ceph/ceph:v19.2.4"]);
    assert.deepEqual(cephImages(plans.now()), ["quay.io/ceph/ceph:v20.2.4"]);
    const csi = (plan: PlanRun) => [...new Set(plan.resources.flatMap(imagesOf).filter((i) => i.startsWith("quay.io/cephcsi/")))];
    assert.deepEqual(csi(plans.before()), ["quay.io/cephcsi/cephcsi:v3.17.1"]);
    assert.deepEqual(csi(plans.now()), ["quay.io/cephcsi/cephcsi:v3.17.1"]);
});

test(`${baseCommit} -> now: the daemons and admin pods update in place (the image), the filesystem Job is replaced, the gates run again; keys and Secrets unchanged`, () => {
    const changes = upgradeDiff(plans.before().resources, plans.now().resources);
    const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
    // every Ceph set: a new ConfigMap (the mon-init script changed; each set now without the
    // library, which is one ConfigMap of its own), the old one deleted
    const cephSets: CephScript[] = ["ceph-fs.sh", "ceph-gate.sh", "ceph-keyring.sh", "ceph-mon-init.sh", "ceph-osd-drain.sh", "ceph-osd.sh"];
    const oldSets = plans.before().resources.filter((r) => /^ceph-shared-fs-scripts-(fs|gate|keyring|mon-init|osd-drain|osd)-[0-9a-f]{12}$/.test(r.name)).map((r) => r.name);
    assert.equal(oldSets.length, 6);
    const gates = plans.now().resources.filter((r) => r.type === "command:local:Command" && r.name.startsWith("shared-fs-gate-")).map((r) => r.name);
    assert.equal(gates.length, 1 + 3 + 2 + 2 + 3 * 2 + 2 * 2);
    const deployments = ["mon-a", "mon-b", "mon-c", "mgr-a", "mgr-b", "mds-a", "mds-b", "osd-node4-wwn-0x4", "osd-node5-wwn-0x5", "osd-node6-wwn-0x6", "osd-node6-wwn-0x7"];
    assert.deepEqual(said, [
        `create kubernetes:core/v1:ConfigMap ${cephLibraryName("shared-fs")}`,
        ...cephSets.map((f) => `create kubernetes:core/v1:ConfigMap ${cephScriptSetName("shared-fs", f)}`),
        ...oldSets.map((n) => `delete kubernetes:core/v1:ConfigMap ${n}`),
        // the OSD prepare Jobs (test/plan/ceph-osd-prepare.test.ts)
        ...["node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node6-osd-wwn-0x6", "node6-osd-wwn-0x7"].map((d) => `create kubernetes:batch/v1:Job shared-fs-${d}-prepare`),
        ...deployments.map((d) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-${d} spec.template.metadata,spec.template.spec`),
        "update kubernetes:apps/v1:DaemonSet ceph-shared-fs-admin spec.template.spec",
        // (its template's sets' annotation too: the library)
        "replace kubernetes:batch/v1:Job shared-fs-filesystem spec.template.metadata,spec.template.spec",
        // the ceph-csi provisioner's --setmetadata (test/plan/cephcsi-setmetadata-upgrade.test.ts)
        "update kubernetes:apps/v1:Deployment ceph-csi-cephfs-provisioner spec.template.spec",
        // the gates' and drains' local script sets, the gates' and drains' stubs (test/plan/ceph-roll.test.ts)
        ...["cephfs-gate.sh", "cephfs-osd-remove.sh"].map((f) => `create kubernetes:core/v1:ConfigMap ${cephScriptSetName("shared-fs", f as "cephfs-gate.sh" | "cephfs-osd-remove.sh")}`),
        ...gates.map((g) => `update command:local:Command ${g} create,environment.ZCLOUD_GATE_GUARDS,update`),
        ...["node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node6-osd-wwn-0x6", "node6-osd-wwn-0x7"].map((d) => `update command:local:Command shared-fs-${d}-drain delete`),
    ].sort());
    // Each updated workload: the old inputs with the image moved (and, for the mons, the
    // mon-init step's --allow-aes-keys) and its sets moved to the library, nothing else. The daemons' key hash annotation
    // differs only under the offline plan's mock, which makes a key's bytes from its `length`
    // input (now 32): the engine keeps an existing key's bytes (`ignoreChanges: ["length"]`,
    // test/plan/cephfs-keys.test.ts), so a real `up` leaves that annotation as it is.
    const withoutKeyHash = (inputs: any): any => {
        const copy = JSON.parse(JSON.stringify(inputs));
        delete copy.spec?.template?.metadata?.annotations?.["storage.zcloud.io/ceph-keys"];
        return copy;
    };
    for (const c of changes.filter((x) => x.kind === "update" && x.resource.type.startsWith("kubernetes:apps/"))) {
        const was = plans.before().resources.find((r) => r.urn === c.resource.urn)!;
        const released = JSON.stringify(withoutKeyHash(was.inputs))
            .replaceAll("quay.io/ceph/ceph:v19.2.4", "quay.io/ceph/ceph:v20.2.4")
            .replace(/("--initial","a")\]/, '$1,"--allow-aes-keys"]')
            .replace(/("--enableprofiling=false")\]/, c.resource.name === "ceph-csi-cephfs-provisioner" ? '$1,"--setmetadata=true"]' : "$1]");
        // ... and, in the same update, its Ceph sets run after the library (movedToLibrary)
        // (an OSD's also mounts the host's prepare locks: test/plan/ceph-osd-prepare.test.ts)
        // (a mgr's and mds's also run on the storage's hosts only: test/plan/ceph-daemons-upgrade.test.ts)
        const expected = onStorageHosts(withPrepareLocks(movedToLibrary(JSON.parse(released), "shared-fs"), c.resource.name), c.resource.name, "shared-fs");
        assert.deepEqual(withoutKeyHash(c.resource.inputs), expected, c.resource.name);
        assert.deepEqual(c.resource.replaceOnChanges, was.replaceOnChanges, c.resource.name);
    }
    // No key resource or Secret changes.
    assert.deepEqual(changes.filter((c) => c.resource.type.startsWith("random:") || c.resource.type === "kubernetes:core/v1:Secret"), []);
});
