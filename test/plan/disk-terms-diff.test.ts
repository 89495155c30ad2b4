/**
 * `npm run plan -- <stack> --diff <current>` in disk terms: per node the devices that leave
 * (released, their data gone), nodes that leave a storage, OSD drains, iSCSI LUN moves and logouts,
 * storages removed; a node command's change told in these words shows no raw "create changed".
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import * as yaml from "js-yaml";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "disk-terms-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const id = (n: number) => `/dev/disk/by-id/wwn-0x${n}`;
const key = (n: number) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJn${n}`;
const nodes = Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`n${n}`, { address: `10.0.0.1${n}` }]));
const iqn = "iqn.2003-01.org.linux-iscsi.san:sn.1";

function stackFile(name: string, storages: Record<string, unknown>): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const ssh = { user: "root", privateKey: { secure: "v1:x" }, hostKeys: Object.fromEntries(Object.keys(nodes).map((n, k) => [n, key(k + 1)])) };
    const config = { "kubernetes:context": "prod-admin", "zcloud-storage:ssh": ssh, "zcloud-storage:nodes": nodes, ...Object.fromEntries(Object.entries(storages).map(([k, v]) => [`zcloud-storage:${k}`, v])) };
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}

const notes = (stdout: string) => stdout.split("\n").filter((l) => /^ +(note|DESTRUCTIVE): /.test(l)).map((l) => l.trim());
const san = (lun: number, initiators: string[]) => [{ name: "san", portals: ["10.0.0.50:3260"], iqn, lun, initiators }];

test("devices and nodes that leave lvm and cephfs, an iSCSI LUN moved and an initiator removed", async () => {
    const current = stackFile("current", {
        lvm: [{ name: "fast", hosts: { n1: [id(1), id(2)], n2: [id(3)] } }],
        cephfs: [{ name: "shared", hosts: { n3: [id(4)], n4: [id(5), id(6)], n5: [id(7)] } }],
        iscsi: san(0, ["n1", "n2"]),
    });
    const next = stackFile("next", {
        lvm: [{ name: "fast", hosts: { n1: [id(1)] } }],
        // three hosts to two: the default's fewer copies are refused unless replicas says so (test/plan/ceph-shrink.test.ts)
        cephfs: [{ name: "shared", hosts: { n3: [id(4)], n4: [id(5)] }, replicas: 2 }],
        iscsi: san(1, ["n1"]),
    });
    const r = await plan(next, "--diff", current);
    assert.equal(r.code, 0, r.stderr);
    const lun = (n: number) => `${iqn} lun ${n} via 10.0.0.50:3260`;
    assert.deepEqual(notes(r.stdout), [
        `DESTRUCTIVE: n2 leaves fast, released: VG zcloud-fast removed, PVs ${id(3)} removed and wiped; the data on them is gone (refused while the VG holds logical volumes: delete the node's volumes first)`,
        `DESTRUCTIVE: n5 leaves shared, released: the OSDs on ${id(7)} are drained, purged and their devices zapped first (their drains), then the node is released (refused while a device still carries an OSD); the data on them is gone once Ceph holds it on other OSDs`,
        `note: n2 leaves san: logs out of ${lun(0)} (refused while a volume is active on n2); the LUN and its data stay on the target`,
        // three hosts to two: mons b and c leave (test/plan/ceph-shrink.test.ts)
        ...["b", "c"].map(
            (m) => `note: mon.${m} leaves the monmap (ceph mon remove) before its workload and Service are deleted, after this change's OSD drains, and only while the mons that stay hold a quorum without it (else refused, nothing removed)`,
        ),
        ...[`n4 ${id(6)}`, `n5 ${id(7)}`].map(
            (osd) => `DESTRUCTIVE: drains the OSD on ${osd}: marks it out and waits (bounded) until Ceph can lose it safely, stops its daemon, purges it and zaps the device; a refusal or timeout stops pulumi up with nothing zapped`,
        ),
        `DESTRUCTIVE: n1 ${id(2)}: leaves fast, released: taken out of VG zcloud-fast, its PV removed and wiped; its data is gone (refused while it holds allocated extents: move or delete the volumes on it first)`,
        `DESTRUCTIVE: n4 ${id(6)}: leaves shared, released: its OSD is drained, purged and the device zapped (its drain); its data is gone once Ceph holds it on other OSDs (the OSD is kept if the disk is still declared on n4 under another path)`,
        `note: n1 logs in to ${lun(1)} instead of ${lun(0)}: refused while the VG on the current LUN holds volumes; nothing on either LUN is wiped`,
        `note: san names another LUN: ${lun(1)} (was ${lun(0)}); the VG command refuses a LUN other than the one it made VG zcloud-san on, and the VG and its data stay there`,
        // n4's osd-up gate waits for one OSD fewer (the roll's gates: test/plan/ceph-roll.test.ts)
        "note: its check changes: osd-up --host n4 --osds 2 --timeout 600 -> osd-up --host n4 --osds 1 --timeout 600; the gate runs again",
    ]);
    // Every node command's and gate's change is told in those words: no raw "create changed".
    assert.doesNotMatch(r.stdout, /(create|delete|update)(, \w+)* changed/);
    assert.match(r.stdout, /^~  update +fast-n1-disks  fast prepare n1 \[\/dev\/disk\/by-id\/wwn-0x1\]$/m);
    // The lines that can destroy data are counted under the totals, so they stand apart in a long diff.
    const tail = r.stdout.split("\n");
    const totals = tail.findIndex((l) => /^\d+ to delete/.test(l));
    assert.equal(tail[totals + 1], "DESTRUCTIVE: 6 lines above can destroy data (devices wiped or released, OSDs drained, storages removed): read each before pulumi up");
});

test("storages removed: each says what happens to its devices and volumes", async () => {
    const keep = { name: "keep", hosts: { n5: [id(9)] } };
    const current = stackFile("all", {
        lvm: [keep, { name: "fast", hosts: { n1: [id(1)] } }],
        nfs: [{ name: "nas", server: "10.0.0.60", path: "/exports/k8s" }],
        iscsi: san(0, ["n2"]),
    });
    const r = await plan(stackFile("fewer", { lvm: [keep] }), "--diff", current);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
        notes(r.stdout).filter((n) => /^(note|DESTRUCTIVE): storage /.test(n)),
        [
            "DESTRUCTIVE: storage fast is removed: every node's devices are released (the lines above: data gone, refused while volumes exist), its StorageClass and lvmd are deleted",
            "note: storage nas is removed: its StorageClass is deleted; volumes already provisioned and their data stay on the NFS server",
            "note: storage san is removed: its initiators log out and its StorageClass is deleted; the VG and the volumes' data stay on the LUN",
        ],
    );
    assert.ok(notes(r.stdout).includes(`note: VG zcloud-san of san stays on ${iqn} lun 0 via 10.0.0.50:3260 with its data: its release never removes it (refused while it holds volumes)`), r.stdout);
});
