/**
 * VM tier: LVM end to end on a real kernel. One boot of two guests for the whole file.
 *
 * - lvm-a (root login) serves the thick storage `vmthick` from two virtio disks;
 * - lvm-b serves the thin storage `vmthin` (thin pool, overprovisioning, snapshots) and is reached
 *   as the non-root user `ops`, so its command runs through `sudo -n`.
 *
 * The commands come from the offline plan of a stack whose nodes are these guests (address, port
 * and pinned host key), exactly as the program would send them, and run over real SSH. Every step
 * asserts the real LVM/device-mapper state. The lvmd ConfigMap (thin device class and ratio), the
 * StorageClass's device class and the VolumeSnapshotClass of the same config shape are asserted in
 * test/plan/lvm.test.ts; here the program runs once more under Pulumi's mock runtime with the
 * guests' real command output, to show the `devices` output carries the by-id names.
 *
 * Discover's node script runs on lvm-a as `npm run discover` runs it over SSH, on real virtio by-id
 * disks in four states (clean, ext4, in the VG, mounted), and is shown to change nothing.
 *
 * Also the harness checks later tiers rely on: remote-shell semantics, by-id disks, and the host
 * reachable from a guest at 10.0.2.2.
 *
 *   node --import tsx --test test/vm/lvm.test.ts      (root; see test/vm/README.md)
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { deployStorages, loadStackConfig } from "../../components";
import { lvmApplyCommand, lvmReleaseCommand } from "../../components/lvm";
import { discoverNode, proposalYaml } from "../../tools/discover/devices";
import { inventoryCommand } from "../../tools/discover/collect";
import { parseNodeReport } from "../../tools/discover/inventory";
import { declaredDevices, loadDay2Stack } from "../../tools/discover/stack";
import { parseStackYaml } from "../../tools/plan/stackFile";
import { PlannedNodeCommand, performCopies, plannedNodeCommands } from "../helpers/planned";
import { bootGuests, Guest, GuestSet, HOST_FROM_GUEST, RunResult } from "./harness";

const THICK = "vmthick";
const THIN = "vmthin";
const THICK_VG = `zcloud-${THICK}`;
const THIN_VG = `zcloud-${THIN}`;
const RATIO = 4;
const POOL_PERCENT = 80;
const MiB = 1024 * 1024;
/** Non-root SSH user of lvm-b, with NOPASSWD sudo. */
const OPS = "ops";

/** The lvm-a disks again, declared by kernel name: a third "node" of the thick storage (same guest). */
const KERNEL_NAMED = "lvm-a-kernel";

/** Where the discover step mounts a-mnt. */
const DISCOVER_MNT = "/mnt/zc-discover";

/**
 * Everything discover could change on lvm-a's disks, as one text (the fields discover's node test
 * compares): lsblk, signatures (blkid, wipefs), LVM reports and files, mounts, the first 8 and the
 * last 1 MiB of every disk.
 */
function guestSnapshot(devices: string[]): string {
    const each = (cmd: string) => devices.map((d) => cmd.replace(/DEV/g, d)).join("; ");
    return [
        `lsblk -J -b -O ${devices.join(" ")}`,
        each("blkid -p -o export DEV || true"),
        each("wipefs --noheadings --output DEVICE,OFFSET,TYPE,UUID DEV"),
        "pvs --noheadings -o pv_name,vg_name,pv_uuid,pv_mda_count,dev_size",
        "vgs --noheadings -o vg_name,vg_uuid,vg_seqno,vg_free",
        "find /etc/lvm -printf '%P %T@\\n' | sort",
        `grep ${DISCOVER_MNT} /proc/self/mountinfo`,
        each("head -c 8M DEV | sha256sum; tail -c 1M DEV | sha256sum"),
    ].join("; ");
}

function stackYaml(a: Guest, b: Guest): string {
    return [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        "    privateKey: { secure: v1:vmtest }",
        "    hostKeys:",
        `      lvm-a: "${a.connection.hostKey}"`,
        `      ${KERNEL_NAMED}: "${a.connection.hostKey}"`,
        `      lvm-b: "${b.connection.hostKey}"`,
        "  zcloud-storage:nodes:",
        `    lvm-a: { address: ${a.connection.host}, port: ${a.connection.port} }`,
        // Another name of lvm-a's forwarded port (the plan refuses two nodes on one endpoint); the
        // test runs this node's commands on guest a itself.
        `    ${KERNEL_NAMED}: { address: localhost, port: ${a.connection.port} }`,
        `    lvm-b: { address: ${b.connection.host}, port: ${b.connection.port}, user: ${OPS} }`,
        "  zcloud-storage:lvm:",
        `    - name: ${THICK}`,
        "      hosts:",
        `        lvm-a: [${a.disks["a-sdb"]}, ${a.disks["a-sdc"]}]`,
        `        ${KERNEL_NAMED}: [/dev/vdb, /dev/vdc]`,
        `    - name: ${THIN}`,
        "      hosts:",
        `        lvm-b: [${b.disks["b-sdb"]}]`,
        `      thin: { overprovisionRatio: ${RATIO}, poolPercent: ${POOL_PERCENT}, snapshots: true }`,
        "",
    ].join("\n");
}

function zcloudLines(out: string): string[] {
    return out.split("\n").filter((l) => l.startsWith("zcloud:") || l.startsWith("zcloud-device:"));
}

function ok(r: RunResult): void {
    assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    assert.deepEqual(zcloudLines(r.stderr), [], `zcloud lines on stderr:\n${r.stderr}`);
}

/** A refusal: exit 1, exactly this one zcloud line (on stderr), nothing decided on stdout. */
function refused(r: RunResult, line: string): void {
    assert.equal(r.code, 1, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    assert.equal(r.stderr, `${line}\n`);
    assert.deepEqual(zcloudLines(r.stdout), []);
}

/** `lvs`/`vgs`/`pvs` rows as arrays of fields (no headings, `|` separated, trimmed). */
async function rows(g: Guest, cmd: string): Promise<string[][]> {
    const out = await g.check(`${cmd} --noheadings --separator '|' --units b --nosuffix`);
    return out
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean)
        .map((l) => l.split("|").map((f) => f.trim()));
}

async function vgNames(g: Guest): Promise<string[]> {
    return (await rows(g, "vgs -o vg_name")).map((r) => r[0]);
}

describe("LVM on a real kernel (QEMU guests)", { timeout: 900_000 }, () => {
    let vms: GuestSet | undefined;
    let a: Guest;
    let b: Guest;
    let stack: string;
    let planned: Map<string, PlannedNodeCommand>;
    /** by-id path -> kernel path (/dev/vdX) in its guest. */
    const kernel: Record<string, string> = {};
    /** Real stdout of each node's create, for the component's outputs. */
    const created: Record<string, string> = {};
    const timings: string[] = [];

    const timed = async <T>(label: string, f: () => Promise<T>): Promise<T> => {
        const t = Date.now();
        try {
            return await f();
        } finally {
            timings.push(`${label} ${((Date.now() - t) / 1000).toFixed(1)} s`);
        }
    };

    before(async () => {
        vms = await timed("boot (2 guests)", () =>
            bootGuests([
                // a-clean, a-ext4, a-mnt: the states discover classifies (a-sdb, in the VG, is the fourth)
                {
                    name: "lvm-a",
                    disks: [
                        { serial: "a-sdb", sizeMiB: 384 },
                        { serial: "a-sdc", sizeMiB: 384 },
                        ...["a-clean", "a-ext4", "a-mnt"].map((serial) => ({ serial, sizeMiB: 64 })),
                    ],
                },
                // b-sdc: the device-class checks (an LVM LV on it, then a multipath map over it)
                { name: "lvm-b", disks: [{ serial: "b-sdb", sizeMiB: 768 }, { serial: "b-sdc", sizeMiB: 64 }] },
            ]),
        );
        a = vms.get("lvm-a");
        b = vms.get("lvm-b");
        // lvm-b's SSH user: non-root, the run's client key, sudo without a password (as a node
        // prepared for `sudo -n` would be).
        await b.check(
            `set -e; useradd -m -s /bin/bash ${OPS}; install -d -m 700 -o ${OPS} -g ${OPS} /home/${OPS}/.ssh; ` +
                `install -m 600 -o ${OPS} -g ${OPS} /root/.ssh/authorized_keys /home/${OPS}/.ssh/; ` +
                `echo '${OPS} ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/zcloud-${OPS}; chmod 440 /etc/sudoers.d/zcloud-${OPS}; visudo -cq`,
        );
        for (const g of [a, b]) {
            for (const dev of Object.values(g.disks)) {
                kernel[dev] = (await g.check(`udevadm settle; readlink -f ${dev}`)).trim();
            }
        }
        stack = stackYaml(a, b);
        const cmds = await timed("plan", () => plannedNodeCommands(stack));
        planned = new Map(cmds.map((c) => [c.node, c]));
        // What the engine does before a disk command: its script copy, as the connection's user.
        await performCopies((command, stdin) => a.run(command, { stdin }), [planned.get("lvm-a")!.copy, planned.get(KERNEL_NAMED)!.copy]);
        await performCopies((command, stdin) => b.run(command, { stdin, user: OPS }), [planned.get("lvm-b")!.copy]);
    });

    after(async () => {
        await vms?.close();
        process.stderr.write(`[vm] lvm.test.ts timings: ${timings.join(", ")}\n`);
    });

    describe("harness", () => {
        it("runs commands over ssh with the remote shell, exit codes, stdin, and as another user", async () => {
            assert.equal((await a.check("hostname")).trim(), "lvm-a");
            // The string goes to the remote shell as is: variables expand there, not here.
            assert.equal((await a.check('x=remote; echo "$x $((1+2))"')).trim(), "remote 3");
            assert.deepEqual(await a.run("echo out; echo err >&2; exit 7"), { code: 7, stdout: "out\n", stderr: "err\n" });
            assert.equal(await a.check("tr a-z A-Z", { stdin: "secret from stdin\n" }), "SECRET FROM STDIN\n");
            assert.equal((await a.check("id -u")).trim(), "0");
            assert.equal((await b.check("id -un; sudo -n id -u", { user: OPS })).trim(), `${OPS}\n0`);
        });

        it("shows every disk under /dev/disk/by-id/virtio-<serial>, in the order given", async () => {
            assert.deepEqual(Object.entries(a.disks).slice(0, 2), [["a-sdb", "/dev/disk/by-id/virtio-a-sdb"], ["a-sdc", "/dev/disk/by-id/virtio-a-sdc"]]);
            assert.deepEqual(kernel, {
                "/dev/disk/by-id/virtio-a-sdb": "/dev/vdb",
                "/dev/disk/by-id/virtio-a-sdc": "/dev/vdc",
                "/dev/disk/by-id/virtio-a-clean": "/dev/vdd",
                "/dev/disk/by-id/virtio-a-ext4": "/dev/vde",
                "/dev/disk/by-id/virtio-a-mnt": "/dev/vdf",
                "/dev/disk/by-id/virtio-b-sdb": "/dev/vdb",
                "/dev/disk/by-id/virtio-b-sdc": "/dev/vdc",
            });
            assert.equal((await b.check(`blockdev --getsize64 ${b.disks["b-sdb"]}`)).trim(), String(768 * MiB));
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
                const out = await a.check(
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

    it("the plan renders one disk command per guest; the non-root node's runs through sudo -n", () => {
        assert.deepEqual([...planned.keys()].sort(), ["lvm-a", KERNEL_NAMED, "lvm-b"].sort());
        for (const c of planned.values()) {
            assert.equal(c.update, c.create);
        }
        const thick = planned.get("lvm-a")!;
        assert.equal(thick.name, `${THICK}-lvm-a-disks`);
        assert.match(thick.create, /^sh -c '/);
        assert.match(thick.create, / lvm-reconcile \S+ [0-9a-f]{64} apply --vg zcloud-vmthick --node lvm-a \/dev\/disk\/by-id\/virtio-a-sdb \/dev\/disk\/by-id\/virtio-a-sdc$/);
        assert.match(thick.delete, /^sh -c '.* lvm-reconcile \S+ [0-9a-f]{64} release --vg zcloud-vmthick$/s);
        const thin = planned.get("lvm-b")!;
        assert.equal(thin.name, `${THIN}-lvm-b-disks`);
        assert.match(thin.create, /^sudo -n sh -c '/);
        assert.match(thin.create, / lvm-reconcile \S+ [0-9a-f]{64} apply --vg zcloud-vmthin --node lvm-b --thin-pool pool --thin-percent 80 \/dev\/disk\/by-id\/virtio-b-sdb$/);
        assert.match(thin.delete, /^sudo -n sh -c '.* lvm-reconcile \S+ [0-9a-f]{64} release --vg zcloud-vmthin$/s);
    });

    describe("thick storage on lvm-a (root)", () => {
        const lv = "pvc-thick";
        const mnt = "/mnt/pvc-thick";

        it("create makes the VG of both disks and reports each disk's by-id name", async () => {
            const r = await timed("thick create", () => a.run(planned.get("lvm-a")!.create));
            ok(r);
            created["lvm-a"] = r.stdout;
            const [sdb, sdc] = [a.disks["a-sdb"], a.disks["a-sdc"]];
            assert.deepEqual(zcloudLines(r.stdout), [
                `zcloud-device: ${sdb} ${sdb}`,
                `zcloud-device: ${sdc} ${sdc}`,
                `zcloud: VG ${THICK_VG}: created with ${kernel[sdb]} ${kernel[sdc]}`,
            ]);
            assert.deepEqual(await rows(a, "pvs -o pv_name,vg_name"), [
                [kernel[sdb], THICK_VG],
                [kernel[sdc], THICK_VG],
            ]);
        });

        it("discover, run as over SSH, classifies real virtio by-id disks: clean, ext4, in a VG, mounted; nothing changes", async () => {
            const [clean, ext4, mnt, inVg] = [a.disks["a-clean"], a.disks["a-ext4"], a.disks["a-mnt"], a.disks["a-sdb"]];
            await a.check(`mkfs.ext4 -q ${ext4} && mkfs.ext4 -q ${mnt} && mkdir -p ${DISCOVER_MNT} && mount -o ro ${mnt} ${DISCOVER_MNT}`);
            // Read-only mount, as in discover's node test: a writable ext4 keeps writing (lazy init, journal).
            const snapshot = async () => (await a.check(guestSnapshot(Object.values(a.disks).map((d) => kernel[d])))).split("\n");
            const before = await snapshot();
            const stackDir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-vm-discover-"));
            fs.writeFileSync(path.join(stackDir, "Pulumi.vmtest.yaml"), stack);
            const { model } = loadDay2Stack(path.join(stackDir, "Pulumi.vmtest.yaml"));
            fs.rmSync(stackDir, { recursive: true });
            const r = await timed("discover lvm-a", () => a.run(inventoryCommand(model, "lvm-a")));
            ok(r);
            const found = discoverNode(parseNodeReport(r.stdout), declaredDevices(model, "lvm-a"), 32 * MiB);
            const verdict = (byId: string) => {
                const d = found.devices.find((x) => x.path === kernel[byId]);
                assert.ok(d, `${byId} not listed`);
                assert.ok(d.byId.includes(byId), `${byId}: ${d.byId.join(" ")}`);
                return [d.verdict, d.reason, d.stableName];
            };
            assert.deepEqual(verdict(clean), ["clean", null, clean]);
            assert.deepEqual(verdict(ext4), ["not clean", "carries signatures (ext4); set wipe: true to allow wiping them", ext4]);
            assert.deepEqual(verdict(inVg), ["not clean", `is a PV of another VG (${THICK_VG})`, inVg]);
            assert.deepEqual(verdict(mnt), ["not clean", `${kernel[mnt]} is mounted at ${DISCOVER_MNT}`, mnt]);
            const proposal = proposalYaml([["lvm-a", found]]).split("\n");
            assert.ok(proposal.includes(`    - ${clean}`), proposal.join("\n"));
            assert.ok(!proposal.some((l) => l.includes(ext4) || l.includes(mnt) || l.includes(inVg)), proposal.join("\n"));
            assert.deepEqual(await snapshot(), before, "discover changed something on the node");
            await a.check(`umount ${DISCOVER_MNT}`);
        });

        it("update changes nothing; the same disks declared by kernel name report their by-id names", async () => {
            const seq = async () => (await rows(a, `vgs -o vg_seqno ${THICK_VG}`))[0][0];
            const before = await seq();
            const [sdb, sdc] = [a.disks["a-sdb"], a.disks["a-sdc"]];
            const r = await a.run(planned.get("lvm-a")!.update);
            ok(r);
            assert.deepEqual(zcloudLines(r.stdout), [
                `zcloud-device: ${sdb} ${sdb}`,
                `zcloud-device: ${sdc} ${sdc}`,
                `zcloud: ${sdb}: in VG ${THICK_VG}, no change`,
                `zcloud: ${sdc}: in VG ${THICK_VG}, no change`,
                `zcloud: VG ${THICK_VG}: no change`,
            ]);
            const k = await a.run(planned.get(KERNEL_NAMED)!.update);
            ok(k);
            created[KERNEL_NAMED] = k.stdout;
            assert.deepEqual(zcloudLines(k.stdout), [
                `zcloud-device: /dev/vdb ${sdb}`,
                `zcloud-device: /dev/vdc ${sdc}`,
                `zcloud: /dev/vdb: in VG ${THICK_VG}, no change`,
                `zcloud: /dev/vdc: in VG ${THICK_VG}, no change`,
                `zcloud: VG ${THICK_VG}: no change`,
            ]);
            assert.equal(await seq(), before);
        });

        it("serves an LV as lvmd would: across both PVs, XFS, mount, write, read back", async () => {
            await timed("thick LV + XFS cycle", async () => {
                // Larger than one PV, so the LV spans both disks.
                await a.check(`lvcreate -q -y -W y -n ${lv} -L 600m ${THICK_VG}`);
                const [[attr, size]] = await rows(a, `lvs -o lv_attr,lv_size ${THICK_VG}/${lv}`);
                assert.match(attr, /^-wi-a-/);
                assert.equal(size, String(600 * MiB));
                const segments = await rows(a, `lvs --segments -o devices ${THICK_VG}/${lv}`);
                assert.deepEqual(segments, [[`${kernel[a.disks["a-sdb"]]}(0)`], [`${kernel[a.disks["a-sdc"]]}(0)`]]);
                assert.match(await a.check("dmsetup ls"), new RegExp(`^${THICK_VG.replace(/-/g, "--")}-${lv.replace(/-/g, "--")}\\s`, "m"));
                await a.check(`set -e; mkfs.xfs -q /dev/${THICK_VG}/${lv}; mkdir -p ${mnt}; mount /dev/${THICK_VG}/${lv} ${mnt}`);
                await a.check(`head -c ${16 * MiB} /dev/urandom >${mnt}/data && sha256sum ${mnt}/data >/root/thick.sha && sync`);
                assert.equal((await a.check(`findmnt -n -o FSTYPE ${mnt}`)).trim(), "xfs");
            });
        });

        it("release refuses while the LV is mounted, then while it is active, and changes nothing", async () => {
            const release = planned.get("lvm-a")!.delete;
            refused(await a.run(release), `zcloud: VG ${THICK_VG}: refused: holds logical volumes (${lv}: mounted at ${mnt}); remove them first`);
            await a.check(`umount ${mnt} && mount /dev/${THICK_VG}/${lv} ${mnt} && sha256sum -c --quiet /root/thick.sha && umount ${mnt}`);
            refused(await a.run(release), `zcloud: VG ${THICK_VG}: refused: holds logical volumes (${lv}: active); remove them first`);
            assert.deepEqual(await vgNames(a), [THICK_VG]);
            assert.match((await rows(a, `lvs -o lv_attr ${THICK_VG}/${lv}`))[0][0], /^-wi-a-/);
        });

        it("release succeeds once the LV is removed: VG gone, PVs wiped, no dm device left", async () => {
            await a.check(`lvremove -q -y ${THICK_VG}/${lv}`);
            const r = await timed("thick release", () => a.run(planned.get("lvm-a")!.delete));
            ok(r);
            const [vdb, vdc] = [kernel[a.disks["a-sdb"]], kernel[a.disks["a-sdc"]]];
            assert.deepEqual(zcloudLines(r.stdout), [
                `zcloud: VG ${THICK_VG}: removed`,
                `zcloud: ${vdb}: PV removed, wiped`,
                `zcloud: ${vdc}: PV removed, wiped`,
            ]);
            assert.deepEqual(await vgNames(a), []);
            assert.equal((await a.check(`dmsetup ls; wipefs --noheadings ${vdb} ${vdc}`)).trim(), "No devices found");
        });
    });

    describe("thin storage on lvm-b (non-root user through sudo -n)", () => {
        const lv = "pvc-thin";
        const snap = "pvc-thin-snap";
        const mnt = "/mnt/pvc-thin";
        let poolBytes = 0;

        it(`create makes the VG and a thin pool of ${POOL_PERCENT}% of it, as ${OPS} through sudo -n`, async () => {
            const dev = b.disks["b-sdb"];
            const r = await timed("thin create", () => b.run(planned.get("lvm-b")!.create, { user: OPS }));
            ok(r);
            created["lvm-b"] = r.stdout;
            assert.deepEqual(zcloudLines(r.stdout), [
                `zcloud-device: ${dev} ${dev}`,
                `zcloud: VG ${THIN_VG}: created with ${kernel[dev]}`,
                `zcloud: VG ${THIN_VG}: thin pool pool created with ${POOL_PERCENT}% of the VG`,
            ]);
            const [[extentBytes, extents]] = await rows(b, `vgs -o vg_extent_size,vg_extent_count ${THIN_VG}`);
            const [[attr, segtype, size]] = await rows(b, `lvs -o lv_attr,segtype,lv_size ${THIN_VG}/pool`);
            assert.equal(segtype, "thin-pool");
            assert.match(attr, /^twi-a-tz/);
            poolBytes = Number(size);
            assert.equal(poolBytes, Math.floor((Number(extents) * POOL_PERCENT) / 100) * Number(extentBytes));

            const again = await b.run(planned.get("lvm-b")!.update, { user: OPS });
            ok(again);
            assert.deepEqual(zcloudLines(again.stdout), [
                `zcloud-device: ${dev} ${dev}`,
                `zcloud: ${dev}: in VG ${THIN_VG}, no change`,
                `zcloud: VG ${THIN_VG}: thin pool pool present, no change`,
                `zcloud: VG ${THIN_VG}: no change`,
            ]);
        });

        it(`a thin LV larger than the pool's free space (within ratio ${RATIO}) is created, written, snapshotted`, async () => {
            await timed("thin LV + snapshot cycle", async () => {
                const virtual = 1024 * MiB;
                const [[size, used]] = await rows(b, `lvs -o lv_size,data_percent ${THIN_VG}/pool`);
                const free = Number(size) * (1 - Number(used) / 100);
                assert.ok(virtual > free, `virtual ${virtual} not above pool free ${free}`);
                assert.ok(virtual <= RATIO * poolBytes, `virtual ${virtual} above ratio ${RATIO} x pool ${poolBytes}`);
                // As lvmd creates thin volumes and snapshots.
                await b.check(`lvcreate -q -y -T ${THIN_VG}/pool -n ${lv} -V ${virtual}b`);
                const [[attr, vsize, pool]] = await rows(b, `lvs -o lv_attr,lv_size,pool_lv ${THIN_VG}/${lv}`);
                assert.match(attr, /^Vwi-a-tz/);
                assert.equal(Number(vsize), virtual);
                assert.equal(pool, "pool");
                await b.check(`set -e; mkfs.xfs -q /dev/${THIN_VG}/${lv}; mkdir -p ${mnt}; mount /dev/${THIN_VG}/${lv} ${mnt}`);
                await b.check(`head -c ${32 * MiB} /dev/urandom >${mnt}/data && sha256sum ${mnt}/data >/root/thin.sha && sync`);
                assert.ok(Number((await rows(b, `lvs -o data_percent ${THIN_VG}/pool`))[0][0]) > 0, "pool holds no data after the write");

                await b.check(`lvcreate -q -y -s -n ${snap} ${THIN_VG}/${lv}`);
                const [[sattr, origin, spool]] = await rows(b, `lvs -o lv_attr,origin,pool_lv ${THIN_VG}/${snap}`);
                assert.match(sattr, /^Vwi---tz-k$/); // thin snapshot, skipped at activation
                assert.deepEqual([origin, spool], [lv, "pool"]);
                // The snapshot holds the data as it was: overwrite the origin, read the snapshot.
                await b.check(`head -c ${MiB} /dev/zero >${mnt}/data && sync`);
                await b.check(
                    `set -e; lvchange -q -ay -K ${THIN_VG}/${snap}; mkdir -p /mnt/snap; mount -o nouuid /dev/${THIN_VG}/${snap} /mnt/snap; ` +
                        `sed 's|${mnt}/|/mnt/snap/|' /root/thin.sha | sha256sum -c --quiet; umount /mnt/snap; lvchange -q -an ${THIN_VG}/${snap}`,
                );
            });
        });

        it("release refuses while thin LVs exist (mounted, active, inactive) and changes nothing", async () => {
            const release = planned.get("lvm-b")!.delete;
            const reason = (what: string) => `zcloud: VG ${THIN_VG}: refused: holds logical volumes (${what}); remove them first`;
            refused(await b.run(release, { user: OPS }), reason(`${lv}: mounted at ${mnt}, ${snap}`));
            await b.check(`umount ${mnt}`);
            refused(await b.run(release, { user: OPS }), reason(`${lv}: active, ${snap}`));
            await b.check(`lvremove -q -y ${THIN_VG}/${lv}`);
            refused(await b.run(release, { user: OPS }), reason(snap));
            assert.deepEqual((await rows(b, `lvs -o lv_name ${THIN_VG}`)).map((r) => r[0]), ["pool", snap]);
        });

        it("release succeeds once the thin LVs are removed: empty pool, VG and PV gone", async () => {
            await b.check(`lvremove -q -y ${THIN_VG}/${snap}`);
            const r = await timed("thin release", () => b.run(planned.get("lvm-b")!.delete, { user: OPS }));
            ok(r);
            const vdb = kernel[b.disks["b-sdb"]];
            assert.deepEqual(zcloudLines(r.stdout), [
                `zcloud: VG ${THIN_VG}: empty thin pool pool removed`,
                `zcloud: VG ${THIN_VG}: removed`,
                `zcloud: ${vdb}: PV removed, wiped`,
            ]);
            assert.deepEqual(await vgNames(b), []);
            assert.equal((await b.check(`dmsetup ls; wipefs --noheadings ${vdb}`)).trim(), "No devices found");
        });
    });

    describe("device classes on lvm-b (root): the script as the program renders it", () => {
        const classVg = "zcloud-vmclass";
        const apply = (dev: string) => lvmApplyCommand({ vg: classVg, node: "node2", devices: [dev], wipe: false }, false);

        it("an LVM logical volume is refused before any change", async () => {
            const disk = b.disks["b-sdc"];
            await b.check(`set -e; vgcreate -q zcguard ${disk}; lvcreate -q -y -L 16m -n lv0 zcguard; udevadm settle`);
            try {
                const dm = (await b.check("readlink -f /dev/zcguard/lv0")).trim();
                assert.match(dm, /^\/dev\/dm-\d+$/);
                refused(
                    await b.run(apply("/dev/zcguard/lv0")),
                    `zcloud: /dev/zcguard/lv0: refused: ${dm} is an LVM logical volume (zcguard-lv0); declare the disks under it, not a volume`,
                );
                assert.deepEqual((await vgNames(b)).filter((v) => v !== THIN_VG), ["zcguard"]);
            } finally {
                await b.check(`vgremove -q -f zcguard && wipefs -q -a ${disk}`);
            }
        });

        it("a multipath device (device-mapper, mpath- UUID) is a valid target: apply and release", async () => {
            const disk = b.disks["b-sdc"];
            // A one-path map with a multipath UUID, as multipathd names its maps (no multipathd needed).
            await b.check(`set -e; dmsetup create zcmpath --uuid mpath-zcloudvmtest --table "0 $(blockdev --getsz ${disk}) linear ${disk} 0"; udevadm settle`);
            try {
                const dm = (await b.check("readlink -f /dev/mapper/zcmpath")).trim();
                const r = await b.run(apply("/dev/mapper/zcmpath"));
                ok(r);
                assert.equal(zcloudLines(r.stdout).at(-1), `zcloud: VG ${classVg}: created with ${dm}`);
                // LVM itself names the PV by its /dev/mapper name
                assert.deepEqual(await rows(b, `pvs -o pv_name,vg_name -S vg_name=${classVg}`), [["/dev/mapper/zcmpath", classVg]]);
                const released = await b.run(lvmReleaseCommand({ vg: classVg }, false));
                ok(released);
                assert.deepEqual(zcloudLines(released.stdout), [`zcloud: VG ${classVg}: removed`, "zcloud: /dev/mapper/zcmpath: PV removed, wiped"]);
            } finally {
                await b.check(`vgremove -q -f ${classVg} 2>/dev/null; dmsetup remove zcmpath && wipefs -q -a ${disk}`);
            }
        });
    });

    it("the component's devices output carries the by-id names the guests reported", async () => {
        assert.deepEqual(Object.keys(created).sort(), ["lvm-a", KERNEL_NAMED, "lvm-b"].sort(), "the create runs above did not all pass");
        // The same stack config, the real program, Pulumi's mock runtime (not a preview): each
        // node's remote command answers with the stdout its guest printed.
        const config = parseStackYaml(stack, "vmtest");
        pulumi.runtime.setAllConfig(
            Object.fromEntries(Object.entries(config.values).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])),
            config.secretKeys,
        );
        const commands: Record<string, string> = {};
        await pulumi.runtime.setMocks(
            {
                newResource: (args) => {
                    if (args.type !== "command:remote:Command") {
                        return { id: `${args.name}-id`, state: args.inputs };
                    }
                    const node = [...planned.values()].find((c) => c.name === args.name)!;
                    commands[node.node] = args.inputs.create;
                    return { id: `${args.name}-id`, state: { ...args.inputs, stdout: created[node.node], stderr: "" } };
                },
                call: (args) => args.inputs,
            },
            "zcloud-storage",
            "vmtest",
            false,
        );
        const deployed = deployStorages(loadStackConfig());
        const outputs = await Promise.all(
            deployed.lvm.map((s) => new Promise<unknown>((resolve) => s.devices.apply((d) => resolve(d)))),
        );
        // The program under mocks renders the very commands the guests ran.
        for (const [node, create] of Object.entries(commands)) {
            assert.equal(create, planned.get(node)!.create, `${node}: the program's command differs from the planned one`);
        }
        const [sdb, sdc] = [a.disks["a-sdb"], a.disks["a-sdc"]];
        assert.deepEqual(outputs, [
            {
                "lvm-a": [
                    { declared: sdb, stable: sdb },
                    { declared: sdc, stable: sdc },
                ],
                [KERNEL_NAMED]: [
                    { declared: "/dev/vdb", stable: sdb },
                    { declared: "/dev/vdc", stable: sdc },
                ],
            },
            { "lvm-b": [{ declared: b.disks["b-sdb"], stable: b.disks["b-sdb"] }] },
        ]);
    });
});
