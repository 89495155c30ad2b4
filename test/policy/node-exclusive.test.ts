import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkNodeExclusive, evaluatePolicies } from "../../policy/policies";
import { nodeLabel, nodeManifest, UNKNOWN_STRING } from "./fixtures";

describe("storage-node-exclusive", () => {
    it("passes disjoint lvm and cephfs nodes, and iscsi next to lvm", () => {
        const resources = [
            nodeLabel("lvm", "local-fast", "node1", ["/dev/sdb"]),
            nodeLabel("lvm", "local-fast", "node2", ["/dev/sdb"]),
            nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdb"]),
            nodeLabel("iscsi", "san", "node1", []),
        ];
        assert.deepEqual(checkNodeExclusive(resources), []);
    });

    it("reports a node in lvm and cephfs, on the label command completing the conflict", () => {
        const lvm = nodeLabel("lvm", "local-fast", "node3", ["/dev/sdb"]);
        const ceph = nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
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
        const a = nodeLabel("lvm", "local-fast", "node2", ["/dev/sdb"]);
        const b = nodeLabel("lvm", "bulk", "node2", ["/dev/sdc"]);
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
        const ceph = nodeLabel("cephfs", "shared-fs", "node5", ["/dev/sdb"]);
        const san1 = nodeLabel("iscsi", "san", "node5", []);
        assert.deepEqual(checkNodeExclusive([ceph, san1]), []);
        const san2 = nodeLabel("iscsi", "san2", "node5", []);
        const found = checkNodeExclusive([ceph, san1, san2]);
        assert.equal(found.length, 1);
        assert.equal(found[0].urn, san2.urn);
        assert.match(found[0].message, /^node5 serves iscsi 'san' and iscsi 'san2': a node carries one label storage\.zcloud\.io\/iscsi/);
    });

    it("gives one finding per node listing every conflicting storage", () => {
        const resources = [
            nodeLabel("lvm", "a", "node1", ["/dev/sdb"]),
            nodeLabel("cephfs", "b", "node1", ["/dev/sdc"]),
            nodeLabel("cephfs", "c", "node1", ["/dev/sdd"]),
            nodeLabel("iscsi", "san", "node1", []),
            nodeLabel("lvm", "a", "node2", ["/dev/sdb"]),
            nodeLabel("cephfs", "b", "node2", ["/dev/sdc"]),
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

    it("reads the Node each label command applies, wherever the storages' commands are", () => {
        // Two storages' label commands of one node: the finding goes to the later one.
        const lvm = nodeLabel("lvm", "local-fast", "node3", ["/dev/sdb"]);
        const ceph = nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
        const found = checkNodeExclusive([lvm, ceph]);
        assert.equal(found.length, 1);
        assert.equal(found[0].urn, ceph.urn, "attributed to the command completing the conflict");
        assert.match(found[0].message, /^node3 serves lvm 'local-fast' and cephfs 'shared-fs':/);
    });

    it("ignores local commands that carry no Node (drains, gates) and other resource types", () => {
        const drain = { type: "command:local:Command", name: "shared-fs-node3-osd-sdc-drain", urn: "urn:pulumi:dev::p::command:local:Command::shared-fs-node3-osd-sdc-drain", props: { delete: "x", environment: { ZCLOUD_DRAIN_KUBECONFIG: "k" } } };
        const patch = { type: "kubernetes:core/v1:NodePatch", name: "local-fast-node3-label", urn: "urn:pulumi:dev::p::kubernetes:core/v1:NodePatch::local-fast-node3-label", props: { metadata: { name: "node3", labels: { "storage.zcloud.io/lvm": "local-fast" } } } };
        assert.deepEqual(checkNodeExclusive([drain, patch, nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdc"])]), []);
    });

    it("finds the node from the resource name when metadata.name is not in the manifest", () => {
        const labelled = (type: "lvm" | "cephfs", storage: string) => ({
            ...nodeLabel(type, storage, "node-3", []),
            props: { stdin: nodeManifest(undefined, { [`storage.zcloud.io/${type}`]: storage }, {}) },
        });
        const found = checkNodeExclusive([labelled("lvm", "local-fast"), labelled("cephfs", "shared-fs")]);
        assert.equal(found.length, 1);
        assert.match(found[0].message, /^node-3 serves lvm 'local-fast' and cephfs 'shared-fs'/);
    });

    it("does not crash on missing or unknown fields", () => {
        const odd = [
            { type: "command:local:Command", name: "x-label", urn: "urn:pulumi:dev::p::command:local:Command::x-label", props: undefined },
            { type: "command:local:Command", name: "y-label", urn: "urn:pulumi:dev::p::command:local:Command::y-label", props: { stdin: UNKNOWN_STRING } },
            { type: "command:local:Command", name: "z-label", urn: "urn:pulumi:dev::p::command:local:Command::z-label", props: { stdin: { kind: "Node" } } },
            { type: "command:local:Command", name: "w-label", urn: "urn:pulumi:dev::p::command:local:Command::w-label", props: { stdin: "{not json" } },
            { type: "command:local:Command", name: "v-label", urn: "urn:pulumi:dev::p::command:local:Command::v-label", props: { stdin: '{"kind":"Node","metadata":{"labels":{"storage.zcloud.io/lvm":7}}}' } },
            { type: "command:local:Command", name: "u-label", urn: "urn:pulumi:dev::p::command:local:Command::u-label", props: { stdin: '{"kind":"Pod","metadata":{"name":"n","labels":{"storage.zcloud.io/lvm":"u"}}}' } },
        ];
        assert.deepEqual(checkNodeExclusive(odd), []);
        assert.deepEqual(evaluatePolicies(odd), []);
    });
});
