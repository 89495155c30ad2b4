import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkNodeExclusive, evaluatePolicies } from "../../policy/policies";
import { nodePatch, UNKNOWN_STRING } from "./fixtures";

describe("storage-node-exclusive", () => {
    it("passes disjoint lvm and cephfs nodes, and iscsi next to lvm", () => {
        const resources = [
            nodePatch("lvm", "local-fast", "node1", ["/dev/sdb"]),
            nodePatch("lvm", "local-fast", "node2", ["/dev/sdb"]),
            nodePatch("cephfs", "shared-fs", "node3", ["/dev/sdb"]),
            nodePatch("iscsi", "san", "node1", []),
        ];
        assert.deepEqual(checkNodeExclusive(resources), []);
    });

    it("reports a node in lvm and cephfs, on the NodePatch completing the conflict", () => {
        const lvm = nodePatch("lvm", "local-fast", "node3", ["/dev/sdb"]);
        const ceph = nodePatch("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
        assert.deepEqual(checkNodeExclusive([lvm, ceph]), [
            {
                urn: ceph.urn,
                message:
                    "node3 serves lvm 'local-fast' and cephfs 'shared-fs': a node's disks must belong to one of them " +
                    "(a Ceph OSD and an LVM VG would compete for the node). Remove node3 from one of them in the stack config.",
            },
        ]);
    });

    it("reports a node in two storages of the same type", () => {
        const a = nodePatch("lvm", "local-fast", "node2", ["/dev/sdb"]);
        const b = nodePatch("lvm", "bulk", "node2", ["/dev/sdc"]);
        assert.deepEqual(checkNodeExclusive([a, b]), [
            {
                urn: b.urn,
                message:
                    "node2 serves lvm 'local-fast' and lvm 'bulk': a node carries one label storage.zcloud.io/lvm, so it " +
                    "can serve one lvm storage (the storages would take the label from each other and one storage's " +
                    "daemons would leave the node). Remove node2 from one of them in the stack config.",
            },
        ]);
    });

    it("reports two iscsi storages on one node, but not one iscsi next to cephfs", () => {
        const ceph = nodePatch("cephfs", "shared-fs", "node5", ["/dev/sdb"]);
        const san1 = nodePatch("iscsi", "san", "node5", []);
        assert.deepEqual(checkNodeExclusive([ceph, san1]), []);
        const san2 = nodePatch("iscsi", "san2", "node5", []);
        const found = checkNodeExclusive([ceph, san1, san2]);
        assert.equal(found.length, 1);
        assert.equal(found[0].urn, san2.urn);
        assert.match(found[0].message, /^node5 serves iscsi 'san' and iscsi 'san2': a node carries one label storage\.zcloud\.io\/iscsi/);
    });

    it("gives one finding per node listing every conflicting storage", () => {
        const resources = [
            nodePatch("lvm", "a", "node1", ["/dev/sdb"]),
            nodePatch("cephfs", "b", "node1", ["/dev/sdc"]),
            nodePatch("cephfs", "c", "node1", ["/dev/sdd"]),
            nodePatch("iscsi", "san", "node1", []),
            nodePatch("lvm", "a", "node2", ["/dev/sdb"]),
            nodePatch("cephfs", "b", "node2", ["/dev/sdc"]),
        ];
        assert.deepEqual(
            checkNodeExclusive(resources).map((f) => f.message),
            [
                "node1 serves lvm 'a', cephfs 'b' and cephfs 'c': a node's disks must belong to one of them (a Ceph OSD " +
                    "and an LVM VG would compete for the node); a node carries one label storage.zcloud.io/cephfs, so it " +
                    "can serve one cephfs storage (the storages would take the label from each other and one storage's " +
                    "daemons would leave the node). Keep node1 in at most one of lvm and cephfs, and in one storage per " +
                    "type, in the stack config.",
                "node2 serves lvm 'a' and cephfs 'b': a node's disks must belong to one of them (a Ceph OSD and an LVM " +
                    "VG would compete for the node). Remove node2 from one of them in the stack config.",
            ],
        );
    });

    it("reads stack outputs where every NodePatch carries all labels of the node", () => {
        // After an update a NodePatch's outputs are the whole Node: both patches show both labels.
        const lvm = nodePatch("lvm", "local-fast", "node3", ["/dev/sdb"]);
        const ceph = nodePatch("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
        const merged = {
            metadata: {
                name: "node3",
                labels: { "storage.zcloud.io/lvm": "local-fast", "storage.zcloud.io/cephfs": "shared-fs", "kubernetes.io/os": "linux" },
                annotations: {},
            },
        };
        const found = checkNodeExclusive([{ ...lvm, props: merged }, { ...ceph, props: merged }]);
        assert.equal(found.length, 1);
        assert.equal(found[0].urn, ceph.urn, "attributed to the patch named after the storage");
        assert.match(found[0].message, /^node3 serves lvm 'local-fast' and cephfs 'shared-fs':/);
    });

    it("finds the node from the resource name when metadata.name is not known", () => {
        const lvm = nodePatch("lvm", "local-fast", "node-3", ["/dev/sdb"]);
        const ceph = nodePatch("cephfs", "shared-fs", "node-3", ["/dev/sdc"]);
        const unknownName = (r: typeof lvm) => ({
            ...r,
            props: { metadata: { ...(r.props!.metadata as object), name: UNKNOWN_STRING } },
        });
        const found = checkNodeExclusive([unknownName(lvm), unknownName(ceph)]);
        assert.equal(found.length, 1);
        assert.match(found[0].message, /^node-3 serves lvm 'local-fast' and cephfs 'shared-fs'/);
    });

    it("does not crash on missing or unknown fields", () => {
        const odd = [
            { type: "kubernetes:core/v1:NodePatch", name: "x-label", urn: "urn:pulumi:dev::p::kubernetes:core/v1:NodePatch::x-label", props: undefined },
            { type: "kubernetes:core/v1:NodePatch", name: "y-label", urn: "urn:pulumi:dev::p::kubernetes:core/v1:NodePatch::y-label", props: { metadata: UNKNOWN_STRING } },
            { type: "kubernetes:core/v1:NodePatch", name: "z-label", urn: "urn:pulumi:dev::p::kubernetes:core/v1:NodePatch::z-label", props: { metadata: { labels: { "storage.zcloud.io/lvm": UNKNOWN_STRING } } } },
        ];
        assert.deepEqual(checkNodeExclusive(odd), []);
        assert.deepEqual(evaluatePolicies(odd), []);
    });
});
