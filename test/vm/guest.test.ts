/**
 * Smoke test of the VM tier: one guest with two disks. Checks what the higher tiers rely on:
 * stable by-id names, device-mapper (LVM activation, XFS on an LV), and the host reachable from
 * the guest at 10.0.2.2.
 *
 *   node --import tsx --test test/vm/guest.test.ts      (root; see test/vm/README.md)
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { after, before, describe, it } from "node:test";
import { bootGuests, Guest, GuestSet, HOST_FROM_GUEST } from "./harness";

describe("vm guest", { timeout: 600_000 }, () => {
    let vms: GuestSet | undefined;
    let g: Guest;

    before(async () => {
        vms = await bootGuests([
            {
                name: "smoke1",
                disks: [
                    { serial: "zc-data-1", sizeMiB: 512 },
                    { serial: "zc-data-2", sizeMiB: 256 },
                ],
            },
        ]);
        g = vms.get("smoke1");
    });

    after(async () => {
        await vms?.close();
    });

    it("runs commands over ssh with the remote shell, exit codes and stdin", async () => {
        assert.equal((await g.check("hostname")).trim(), "smoke1");
        // The string goes to the remote shell as is: variables expand there, not here.
        assert.equal((await g.check('x=remote; echo "$x $((1+2))"')).trim(), "remote 3");
        const r = await g.run("echo out; echo err >&2; exit 7");
        assert.deepEqual(r, { code: 7, stdout: "out\n", stderr: "err\n" });
        assert.equal(await g.check("tr a-z A-Z", { stdin: "secret from stdin\n" }), "SECRET FROM STDIN\n");
        assert.equal((await g.check("id -u")).trim(), "0");
    });

    it("shows every disk under /dev/disk/by-id/virtio-<serial>", async () => {
        assert.deepEqual(g.disks, {
            "zc-data-1": "/dev/disk/by-id/virtio-zc-data-1",
            "zc-data-2": "/dev/disk/by-id/virtio-zc-data-2",
        });
        const out = await g.check(
            "udevadm settle; for d in /dev/disk/by-id/virtio-zc-data-1 /dev/disk/by-id/virtio-zc-data-2; do " +
                'test -b "$d" && echo "$d $(blockdev --getsize64 "$d")"; done',
        );
        assert.deepEqual(out.trim().split("\n"), [
            `/dev/disk/by-id/virtio-zc-data-1 ${512 * 1024 * 1024}`,
            `/dev/disk/by-id/virtio-zc-data-2 ${256 * 1024 * 1024}`,
        ]);
    });

    it("has a working device-mapper: LV activation, XFS on it, removal", async () => {
        assert.match(await g.check("dmsetup version"), /Driver version:\s+4\./);
        const dev = g.disks["zc-data-1"];
        await g.check(`set -e; pvcreate -q ${dev}; vgcreate -q smoke ${dev}; lvcreate -q -y -n lv1 -L 320m smoke`);
        assert.match(await g.check("lvs --noheadings -o lv_attr smoke/lv1"), /^\s*-wi-a/);
        assert.match(await g.check("dmsetup ls"), /^smoke-lv1\s/m);
        await g.check("set -e; mkfs.xfs -q /dev/smoke/lv1; mkdir -p /mnt/lv1; mount /dev/smoke/lv1 /mnt/lv1");
        await g.check("echo payload >/mnt/lv1/file && sync && umount /mnt/lv1");
        assert.equal(await g.check("mount /dev/smoke/lv1 /mnt/lv1 && cat /mnt/lv1/file && umount /mnt/lv1"), "payload\n");
        await g.check("lvchange -an smoke/lv1 && ! test -e /dev/mapper/smoke-lv1");
        await g.check(`set -e; lvremove -q -y smoke/lv1; vgremove -q smoke; pvremove -q ${dev}`);
        assert.equal((await g.check(`dmsetup ls; blkid -p ${dev} || true`)).trim(), "No devices found");
    });

    it("has a working thin pool (dm-thin, thin-provisioning-tools)", async () => {
        const dev = g.disks["zc-data-2"];
        await g.check(
            `set -e; vgcreate -q thin ${dev}; lvcreate -q -y --type thin-pool -n pool -L 128m thin; ` +
                "lvcreate -q -y -V 1g -T thin/pool -n t1; mkfs.ext4 -q /dev/thin/t1; " +
                "lvremove -q -y thin; vgremove -q thin; pvremove -q " + dev,
        );
    });

    it("reaches a TCP port the host listens on at 10.0.2.2", async () => {
        const received: string[] = [];
        const server = net.createServer((sock) => {
            sock.setEncoding("utf8");
            sock.once("data", (d: string) => {
                received.push(d.trim());
                sock.end(`pong ${d.trim()}\n`);
            });
        });
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        const port = (server.address() as net.AddressInfo).port;
        try {
            const out = await g.check(
                `exec 3<>/dev/tcp/${HOST_FROM_GUEST}/${port}; echo ping-from-guest >&3; read -r line <&3; echo "$line"`,
                { timeoutMs: 60_000 },
            );
            assert.equal(out.trim(), "pong ping-from-guest");
            assert.deepEqual(received, ["ping-from-guest"]);
        } finally {
            server.close();
        }
    });
});
