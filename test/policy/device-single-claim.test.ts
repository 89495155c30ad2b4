import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkDeviceSingleClaim } from "../../policy/policies";
import { nodeLabel, nodeManifest } from "./fixtures";

describe("storage-device-single-claim", () => {
    it("passes the same device path on different nodes and different devices on one node", () => {
        const resources = [
            nodeLabel("lvm", "local-fast", "node1", ["/dev/sdb", "/dev/sdc"]),
            nodeLabel("cephfs", "shared-fs", "node2", ["/dev/sdb"]),
            nodeLabel("lvm", "bulk", "node2", ["/dev/sdc"]),
        ];
        assert.deepEqual(checkDeviceSingleClaim(resources), []);
    });

    it("reports a device of one node claimed by two storages", () => {
        const lvm = nodeLabel("lvm", "local-fast", "node2", ["/dev/sdb", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"]);
        const ceph = nodeLabel("cephfs", "shared-fs", "node2", ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"]);
        assert.deepEqual(checkDeviceSingleClaim([lvm, ceph]), [
            {
                urn: ceph.urn,
                message:
                    "node2 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4 is claimed by lvm 'local-fast' and cephfs 'shared-fs': " +
                    "a disk holds one LVM physical volume or one Ceph OSD, so the second storage's disk prep would either " +
                    "refuse it or, with wipe, destroy the first one's data. List /dev/disk/by-id/wwn-0x5000c500a1b2c3d4 " +
                    "on node2 under one storage only in the stack config.",
            },
        ]);
    });

    it("compares paths after trimming and collapsing slashes, one finding per device", () => {
        const a = nodeLabel("lvm", "a", "node1", ["/dev/sdb", "/dev/sdc"]);
        const b = nodeLabel("lvm", "b", "node1", [" /dev//sdb/", "/dev/sdc"]);
        const c = nodeLabel("iscsi", "san", "node1", ["/dev/sdc"]);
        const found = checkDeviceSingleClaim([a, b, c]);
        assert.deepEqual(
            found.map((f) => f.message.split(":")[0]),
            ["node1 /dev/sdb is claimed by lvm 'a' and lvm 'b'", "node1 /dev/sdc is claimed by lvm 'a', lvm 'b' and iscsi 'san'"],
        );
        assert.deepEqual(found.map((f) => f.urn), [b.urn, c.urn]);
    });

    it("does not count a device listed twice by the same storage, nor empty entries", () => {
        const a = nodeLabel("lvm", "a", "node1", ["/dev/sdb", "/dev/sdb", ""]);
        assert.deepEqual(checkDeviceSingleClaim([a]), []);
    });

    it("reads devices from annotations when the label is not set yet (storage from the name)", () => {
        const a = nodeLabel("lvm", "a", "node1", ["/dev/sdb"]);
        const b = nodeLabel("cephfs", "b", "node1", ["/dev/sdb"]);
        const noLabel = { ...b, props: { stdin: nodeManifest("node1", {}, { "storage.zcloud.io/cephfs-devices": "/dev/sdb" }) } };
        const found = checkDeviceSingleClaim([a, noLabel]);
        assert.equal(found.length, 1);
        assert.match(found[0].message, /^node1 \/dev\/sdb is claimed by lvm 'a' and cephfs 'b':/);
    });
});
