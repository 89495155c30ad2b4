// diskOfPartition: the whole disk a partition's path names (components/config/formats.ts), which
// the config rule "a disk and its own partition" compares within one node.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { diskOfPartition } from "../../components/config/formats";

describe("diskOfPartition", () => {
    for (const [partition, disk] of [
        ["/dev/sdb1", "/dev/sdb"],
        ["/dev/sdaa12", "/dev/sdaa"],
        ["/dev/vdc3", "/dev/vdc"],
        ["/dev/xvdf1", "/dev/xvdf"],
        ["/dev/nvme0n1p2", "/dev/nvme0n1"],
        ["/dev/mmcblk0p1", "/dev/mmcblk0"],
        ["/dev/loop7p1", "/dev/loop7"],
        ["/dev/md0p1", "/dev/md0"],
        ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"],
        ["/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part10", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"],
        ["/dev/mapper/mpatha-part1", "/dev/mapper/mpatha"],
    ]) {
        test(`${partition} is a partition of ${disk}`, () => assert.equal(diskOfPartition(partition), disk));
    }

    for (const whole of ["/dev/sdb", "/dev/nvme0n1", "/dev/mmcblk0", "/dev/loop7", "/dev/dm-3", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/mapper/vg-lv1", "/dev/sdb0", "/dev/nvme0n1p0", "/dev/disk/by-id/x-part0"]) {
        test(`${whole} names no partition`, () => assert.equal(diskOfPartition(whole), undefined));
    }

    test("property: the disk of the N-th partition of a disk is that disk, and a disk is no partition", () => {
        const disk = fc.oneof(
            fc.stringMatching(/^(sd|vd|xvd|hd)[a-z]{1,2}$/).map((n) => ({ path: `/dev/${n}`, part: (i: number) => `/dev/${n}${i}` })),
            fc.stringMatching(/^(nvme[0-9]n[1-9]|mmcblk[0-9]|loop[0-9]{1,2}|md[0-9])$/).map((n) => ({ path: `/dev/${n}`, part: (i: number) => `/dev/${n}p${i}` })),
            fc.tuple(fc.constantFrom("by-id", "by-path", "by-diskseq"), fc.stringMatching(/^[a-z0-9][a-z0-9:._-]{0,20}[a-z0-9]$/))
                .filter(([, n]) => !/-part[0-9]+$/.test(n))
                .map(([dir, n]) => ({ path: `/dev/disk/${dir}/${n}`, part: (i: number) => `/dev/disk/${dir}/${n}-part${i}` })),
        );
        fc.assert(
            fc.property(disk, fc.integer({ min: 1, max: 128 }), (d, i) => {
                assert.equal(diskOfPartition(d.part(i)), d.path);
                assert.equal(diskOfPartition(d.path), undefined);
            }),
            { numRuns: 500 },
        );
    });
});
