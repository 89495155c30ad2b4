/**
 * iSCSI end to end on a real kernel: a CHAP target on the test host (tgtd on 127.0.0.1, the
 * guests' 10.0.2.2), two guests as initiators running the commands the program plans, and the
 * lock daemons the driver's node pods would run (sanlock, lvmlockd) started by the test.
 *
 *   node --import tsx --test test/vm/iscsi.test.ts      (root; see test/vm/README.md)
 */
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import { after, before, describe, it } from "node:test";
import { chapStdin, iscsiStatusCommand } from "../../components/iscsi/commands";
import { IscsiNodeFacts, iscsiNodeProblems, parseIscsiFacts } from "../../tools/status/iscsi";
import { PlanRun, PlannedResource, planYaml } from "../helpers/plan";
import { PlannedCopy, performCopies, plannedCopy } from "../helpers/planned";
import { bootGuests, Guest, GuestSet, HOST_FROM_GUEST, RunResult } from "./harness";
import { IscsiTarget } from "./iscsi-target";

const STORAGE = "vmsan";
const VG = `zcloud-${STORAGE}`;
const IQN = "iqn.2026-11.io.zcloud.test:vmsan";
const LUN = 1;
const USER = "k8s";
/** The LVM storage that two stacks put on one shared LUN (LUN 2), one node each. */
const LOCAL = "vmlocal";
const LVM = "--config global/use_lvmlockd=1";
/** Fresh every run, so a search for them finds only what this run left. */
const password1 = `pw1-${crypto.randomBytes(9).toString("hex")}`;
const password2 = `pw2-${crypto.randomBytes(9).toString("hex")}`;

function stackYaml(a: Guest, b: Guest, portals: number[], lun = LUN, storage = STORAGE, wipe = false): string {
    // Hostnames, not 127.0.0.1 twice: the plan refuses initiators that share a sanlock host id.
    return [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        "    privateKey: { secure: v1:vmtest }",
        "    hostKeys:",
        `      isa: "${a.connection.hostKey}"`,
        `      isb: "${b.connection.hostKey}"`,
        "  zcloud-storage:nodes:",
        `    isa: { address: localhost, port: ${a.connection.port} }`,
        `    isb: { address: localhost, port: ${b.connection.port} }`,
        "  zcloud-storage:iscsi:",
        `    - name: ${storage}`,
        `      portals: [${portals.map((p) => `"${HOST_FROM_GUEST}:${p}"`).join(", ")}]`,
        `      iqn: ${IQN}`,
        `      lun: ${lun}`,
        `      chap: { username: ${USER}, password: { secure: v1:vmtest-chap } }`,
        "      initiators: [isa, isb]",
        `      wipe: ${wipe}`,
        "",
    ].join("\n");
}

/**
 * A stack with one LVM storage on one guest, its device a LUN path: two such stacks (two
 * environments copied from one another, each fine on its own) list one shared LUN on two nodes,
 * which no plan can see. Only the node can refuse the second.
 */
function localLvmStackYaml(g: Guest, device: string): string {
    return [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        "    privateKey: { secure: v1:vmtest }",
        `    hostKeys: { ${g.name}: "${g.connection.hostKey}" }`,
        `  zcloud-storage:nodes: { ${g.name}: { address: localhost, port: ${g.connection.port} } }`,
        "  zcloud-storage:lvm:",
        `    - { name: ${LOCAL}, hosts: { ${g.name}: ["${device}"] } }`,
        "",
    ].join("\n");
}

function planned(run: PlanRun, name: string): { create: string; delete: string; stdin: unknown; copy: PlannedCopy } {
    const r = run.resources.find((x: PlannedResource) => x.name === name);
    assert.ok(r, `no planned ${name}`);
    const i = r.inputs as Record<string, unknown>;
    return { create: String(i.create), delete: String(i.delete), stdin: i.stdin, copy: plannedCopy(run.resources, r) };
}

function ok(r: RunResult): void {
    assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
}

function zcloud(out: string): string[] {
    return out.split("\n").filter((l) => l.startsWith("zcloud"));
}

/** Starts what the driver's lvmctrld starts in its pod: sanlock, lvmlockd, the VG's lockspace. */
async function startLockspace(g: Guest, hostId: number): Promise<void> {
    await g.check(`sanlock daemon -w 0 -o 30 && lvmlockd --host-id ${hostId}`);
    // The first lockstart can miss the lease LV's device node (udev under TCG): start again until joined.
    await g.check(
        `for i in $(seq 60); do vgchange ${LVM} --lockstart ${VG} >/dev/null 2>&1 || true; ` +
            `sanlock client status | grep -q '^s lvm_${VG}:${hostId}:.*:0$' && exit 0; sleep 5; done; sanlock client status; exit 1`,
        { timeoutMs: 600_000 },
    );
}

describe("iSCSI on a real kernel (QEMU guests, tgtd target)", { timeout: 1_500_000 }, () => {
    let vms: GuestSet | undefined;
    let a: Guest;
    let b: Guest;
    const target = new IscsiTarget({ iqn: IQN, lun: LUN, sizeMiB: 2048, portals: 2, chap: { username: USER, password: password1 }, extraLuns: [{ lun: 2 }, { lun: 3, ext4: true }] });
    let onePortal: PlanRun;
    let twoPortals: PlanRun;
    let otherLun: PlanRun;
    let ext4Lun: PlanRun;
    /** A second iSCSI storage (its own stack) on the first one's LUN, with wipe: true. */
    let secondStorage: PlanRun;
    const timings: string[] = [];
    const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
        const start = Date.now();
        const out = await f();
        timings.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`);
        return out;
    };

    before(async () => {
        await target.start();
        vms = await bootGuests([{ name: "isa" }, { name: "isb" }]);
        a = vms.get("isa");
        b = vms.get("isb");
        onePortal = await planYaml(stackYaml(a, b, target.ports.slice(0, 1)));
        twoPortals = await planYaml(stackYaml(a, b, target.ports));
        otherLun = await planYaml(stackYaml(a, b, target.ports.slice(0, 1), 2));
        ext4Lun = await planYaml(stackYaml(a, b, target.ports.slice(0, 1), 3, "vmfs"));
        secondStorage = await planYaml(stackYaml(a, b, target.ports.slice(0, 1), LUN, "vmsan2", true));
        for (const run of [onePortal, twoPortals, otherLun, ext4Lun, secondStorage]) {
            assert.equal(run.error, undefined, run.error?.message);
        }
        // What the engine does before a node command: its script copy (the same bundles in every plan).
        await performCopies((command, stdin) => a.run(command, { stdin }), [login(onePortal, "isa").copy, vgCommand().copy]);
        await performCopies((command, stdin) => b.run(command, { stdin }), [login(onePortal, "isb").copy]);
    });

    after(async () => {
        console.error(`[iscsi] ${timings.join("; ")}`);
        await vms?.close();
        target.stop();
    });

    const login = (run: PlanRun, node: string) => planned(run, `${STORAGE}-${node}-login`);
    const vgCommand = () => planned(onePortal, `${STORAGE}-vg`);
    const portalsOf = (n: number) => target.ports.slice(0, n).map((p) => `${HOST_FROM_GUEST}:${p}`);
    /** `npm run status`'s read-only probe on an initiator, as it runs over SSH, and its problems. */
    const probe = async (g: Guest, portalCount: number): Promise<{ facts: IscsiNodeFacts; problems: string[] }> => {
        const spec = { storage: STORAGE, portals: portalsOf(portalCount), iqn: IQN, lun: LUN };
        const facts = parseIscsiFacts(await g.check(iscsiStatusCommand(spec, false)));
        return { facts, problems: iscsiNodeProblems({ ...spec, name: STORAGE }, g.name, facts).map((p) => `${p.kind}: ${g.name}: ${p.object}: ${p.message}`) };
    };
    const sessions = async (g: Guest) => (await g.run("iscsiadm -m session")).stdout.split("\n").filter((l) => l.includes(IQN)).length;

    it("plans the password as the logins' secret stdin and never in a command", () => {
        for (const node of ["isa", "isb"]) {
            assert.equal(login(onePortal, node).stdin, "[secret]");
        }
        assert.equal(vgCommand().stdin, undefined);
    });

    it("a wrong password is refused cleanly: no record, no session, nothing left", async () => {
        const r = await a.run(login(onePortal, "isa").create, { stdin: chapStdin("wrong-password") });
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(r.stderr, /authorization failure/);
        assert.match(r.stderr, new RegExp(`zcloud: iscsi ${STORAGE}: refused: login to ${IQN} on ${HOST_FROM_GUEST}:${target.ports[0]} failed\n`));
        assert.match(r.stdout, /node records put back as they were/);
        assert.equal(await sessions(a), 0);
        assert.equal((await a.check("ls -A /etc/iscsi/nodes; ls -A /etc/zcloud 2>/dev/null; true")).trim(), "");
    });

    it("logs in with CHAP from stdin (record 0600), creates the shared VG with the RPC volumes once, adopts it after", async () => {
        const r = await timed("login A", () => a.run(login(onePortal, "isa").create, { stdin: chapStdin(password1) }));
        ok(r);
        const lun = /^zcloud-iscsi-lun: (\S+) (\S+)$/m.exec(r.stdout);
        assert.ok(lun, r.stdout);
        assert.equal(await sessions(a), 1);
        assert.equal((await a.check(`stat -c '%a %U' /etc/iscsi/nodes/${IQN}/*`)).trim(), "600 root");
        // The guest has no hardware watchdog: softdog for wdmd, and loaded again at every boot.
        assert.match(r.stdout, /^zcloud: iscsi \S+: softdog loaded at boot \(\/etc\/modules-load\.d\/zcloud-softdog\.conf\)$/m);
        assert.equal(await a.check("cat /etc/modules-load.d/zcloud-softdog.conf"), "softdog\n");
        const created = await timed("VG create", () => a.run(vgCommand().create, { timeoutMs: 900_000 }));
        ok(created);
        assert.deepEqual(zcloud(created.stdout).slice(0, 3), [
            `zcloud: iscsi ${STORAGE}: VG ${VG} created (shared, sanlock) on ${lun[2]}`,
            `zcloud: iscsi ${STORAGE}: RPC volume csl-rpc-data created (inactive)`,
            `zcloud: iscsi ${STORAGE}: RPC volume csl-rpc-lock created (inactive)`,
        ]);
        const vg = await a.check(`vgs --shared --noheadings -o vg_lock_type,vg_uuid,vg_tags ${VG}`);
        const [lockType, uuid, tags] = vg.trim().split(/\s+/);
        assert.equal(lockType, "sanlock");
        assert.equal(tags, `zcloud.storage=${STORAGE}`);
        assert.match(created.stdout, new RegExp(`^zcloud-iscsi-vg: ${VG} ${uuid} ${lun[1]}$`, "m"));
        const lvs = await a.check(`lvs --shared --noheadings -o lv_name,lv_active,lv_tags ${VG}`);
        assert.deepEqual(lvs.trim().split("\n").map((l) => l.trim().split(/\s+/)), [
            ["csl-rpc-data", "csi-sanlock-lvm.vleo.net/rpcRole=data"],
            ["csl-rpc-lock", "csi-sanlock-lvm.vleo.net/rpcRole=lock"],
        ]);
        assert.equal((await a.run("pgrep -x sanlock; pgrep -x lvmlockd")).stdout, "", "the VG command stops the lock daemons it started");
        const again = await a.run(vgCommand().create);
        ok(again);
        assert.deepEqual(zcloud(again.stdout), [`zcloud: iscsi ${STORAGE}: VG ${VG} adopted (shared, sanlock, uuid ${uuid})`, `zcloud-iscsi-vg: ${VG} ${uuid} ${lun[1]}`]);
    });

    it("both initiators join the lockspace; an LV active exclusively on A cannot be activated on B", async () => {
        ok(await timed("login B", () => b.run(login(onePortal, "isb").create, { stdin: chapStdin(password1) })));
        await timed("lockspaces", () => Promise.all([startLockspace(a, 11), startLockspace(b, 12)]));
        await a.check(`lvcreate ${LVM} -an -Zn -L 64m -n vol1 ${VG} && lvchange ${LVM} -aey ${VG}/vol1 && mkfs.ext4 -q /dev/${VG}/vol1`);
        await a.check(`mkdir -p /mnt/v && mount /dev/${VG}/vol1 /mnt/v && echo written-by-A > /mnt/v/data && sync`);
        const onB = await b.run(`lvchange ${LVM} -aey ${VG}/vol1`);
        assert.notEqual(onB.code, 0);
        assert.match(onB.stderr, /LV locked by other host: zcloud-vmsan\/vol1/);
        assert.equal((await b.run(`test -e /dev/${VG}/vol1`)).code, 1);
    });

    it("status probe (read-only): both initiators show their session, the shared VG and the lockspace started", async () => {
        for (const g of [a, b]) {
            const vgBefore = await g.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}; iscsiadm -m session; sanlock client status | grep "^s "`);
            const { facts, problems } = await timed(`status probe ${g.name}`, () => probe(g, 1));
            assert.deepEqual(facts, { sessions: [{ portal: portalsOf(1)[0], iqn: IQN }], vgPresent: true, lockspace: "started" });
            assert.deepEqual(problems, []);
            assert.equal(await g.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}; iscsiadm -m session; sanlock client status | grep "^s "`), vgBefore, "the probe changes nothing");
        }
    });

    it("after A deactivates, B activates the LV and reads what A wrote", async () => {
        await a.check(`umount /mnt/v && lvchange ${LVM} -an ${VG}/vol1`);
        await b.check(`lvchange ${LVM} -aey ${VG}/vol1 && mkdir -p /mnt/v && mount /dev/${VG}/vol1 /mnt/v`);
        assert.equal((await b.check("cat /mnt/v/data")).trim(), "written-by-A");
    });

    it("removing B is refused while B holds an active LV, then lock-stops, logs out and deletes the record", async () => {
        const refusedLogout = await b.run(login(onePortal, "isb").delete);
        assert.equal(refusedLogout.code, 1);
        assert.equal(refusedLogout.stderr, `zcloud: iscsi ${STORAGE}: refused: LV active on this node (zcloud--vmsan-vol1); deactivate it (its pod must leave) first\n`);
        assert.equal(await sessions(b), 1);
        await b.check(`umount /mnt/v && lvchange ${LVM} -an ${VG}/vol1`);
        const logout = await b.run(login(onePortal, "isb").delete);
        ok(logout);
        assert.deepEqual(zcloud(logout.stdout), [
            `zcloud: iscsi ${STORAGE}: lockspace of VG ${VG} stopped`,
            `zcloud: iscsi ${STORAGE}: logged out of ${HOST_FROM_GUEST}:${target.ports[0]}`,
            `zcloud: iscsi ${STORAGE}: node record for ${HOST_FROM_GUEST}:${target.ports[0]} deleted`,
        ]);
        assert.equal(await sessions(b), 0);
        assert.equal((await b.check("ls -A /etc/iscsi/nodes")).trim(), "");
    });

    it("two portals give one multipath device, and the PV is on it", async () => {
        const r = await timed("login B, 2 portals", () => b.run(login(twoPortals, "isb").create, { stdin: chapStdin(password1) }));
        ok(r);
        assert.equal(await sessions(b), 2);
        const lun = /^zcloud-iscsi-lun: (\S+) (\S+)$/m.exec(r.stdout)!;
        assert.equal(lun[2], `/dev/disk/by-id/dm-uuid-mpath-${lun[1]}`);
        const maps = await b.check("multipath -ll");
        assert.equal(maps.split("\n").filter((l) => l.startsWith(lun[1])).length, 1, maps);
        assert.equal(maps.split("\n").filter((l) => /\d+:\d+:\d+:\d+ sd\w+ .*active ready running/.test(l)).length, 2, maps);
        assert.equal((await b.check(`pvs --shared --noheadings -o pv_name,vg_name`)).trim().split(/\s+/).join(" "), `/dev/mapper/${lun[1]} ${VG}`);
    });

    it("a CHAP change rewrites the records and logs in again path by path, VG untouched; the password shows nowhere else", async () => {
        const vgBefore = await a.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}`);
        await target.setChap(USER, password2);
        await b.check("(while :; do ps -eo args; sleep 0.05; done) >/tmp/zcloud-ps.log 2>&1 & echo $! >/tmp/zcloud-ps.pid");
        const r = await timed("CHAP change B", () => b.run(login(twoPortals, "isb").create, { stdin: chapStdin(password2) }));
        await b.check("kill $(cat /tmp/zcloud-ps.pid)");
        ok(r);
        const [p1, p2] = target.ports.map((p) => `${HOST_FROM_GUEST}:${p}`);
        assert.deepEqual(zcloud(r.stdout).slice(0, 6), [
            `zcloud: iscsi ${STORAGE}: CHAP of ${p1} changed`,
            `zcloud: iscsi ${STORAGE}: CHAP of ${p2} changed`,
            `zcloud: iscsi ${STORAGE}: logged out of ${p1}`,
            `zcloud: iscsi ${STORAGE}: login to ${p1}`,
            `zcloud: iscsi ${STORAGE}: logged out of ${p2}`,
            `zcloud: iscsi ${STORAGE}: login to ${p2}`,
        ]);
        assert.equal(await sessions(b), 2);
        // A keeps its only path while its lockspace holds the LUN; the new password waits for the next login.
        const onA = await a.run(login(onePortal, "isa").create, { stdin: chapStdin(password2) });
        ok(onA);
        assert.match(onA.stdout, /session on \S+ kept: an LV is active on its only path; the new CHAP applies at the next login/);
        assert.equal(await a.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}`), vgBefore, "the VG is untouched");

        for (const g of [a, b]) {
            const psLog = g === b ? await g.check("cat /tmp/zcloud-ps.log") : await g.check("ps -eo args");
            assert.ok(psLog.length > 0);
            for (const pw of [password1, password2]) {
                assert.ok(!psLog.includes(pw), `${g.name}: a password appeared in ps`);
                assert.equal((await g.run(`journalctl -b --no-pager | grep -c -F -- '${pw}'`)).stdout.trim(), "0", `${g.name}: a password is in the journal`);
                const files = (await g.run(`grep -rlF -- '${pw}' /etc /var /run /tmp "$HOME" 2>/dev/null`)).stdout.trim().split("\n").filter(Boolean);
                for (const f of files) {
                    assert.match(f, new RegExp(`^/etc/iscsi/nodes/${IQN.replace(/\./g, "\\.")}/`), `${g.name}: a password is in ${f}`);
                    assert.equal((await g.check(`stat -c '%a %U' '${f}'`)).trim(), "600 root", f);
                }
            }
        }
    });

    it("refuses: another LUN for the VG, a LUN change while the VG holds volumes, a LUN with a filesystem, deleting a VG with volumes", async () => {
        // The session to the target shows LUNs 2 and 3 on A too.
        const vg2 = await a.run(planned(otherLun, `${STORAGE}-vg`).create);
        assert.equal(vg2.code, 1);
        assert.match(vg2.stderr, new RegExp(`^zcloud: iscsi ${STORAGE}: refused: LUN 2 has WWID \\S+, but VG ${VG} was made on WWID \\S+; refusing another LUN\n$`));
        const relogin = await a.run(planned(otherLun, `${STORAGE}-isa-login`).create, { stdin: chapStdin(password2) });
        assert.equal(relogin.code, 1);
        assert.equal(
            relogin.stderr,
            `zcloud: iscsi ${STORAGE}: refused: target ${IQN} LUN 1 -> ${IQN} LUN 2 refused: VG ${VG} holds volumes (vol1); move them off first\n`,
        );
        assert.equal(await sessions(a), 1, "the LUN 1 session stays");
        const fs = await a.run(planned(ext4Lun, "vmfs-vg").create);
        assert.equal(fs.code, 1);
        assert.match(fs.stderr, /^zcloud: \/dev\/disk\/by-path\/ip-\S+-lun-3: refused: carries signatures \(ext4\); set wipe: true to allow wiping them\n$/);
        assert.equal((await a.check("blkid -p -o value -s TYPE /dev/disk/by-path/*-lun-3")).trim(), "ext4", "the refused LUN is untouched");
        const release = await a.run(vgCommand().delete);
        assert.equal(release.code, 1);
        assert.equal(release.stderr, `zcloud: iscsi ${STORAGE}: refused: VG ${VG} holds volumes (vol1); delete their claims first, the VG is never removed with data\n`);
        assert.ok((await a.check(`vgs --shared --noheadings -o vg_name ${VG}`)).includes(VG));
    });

    it("a second iSCSI storage with wipe: true on the first one's LUN is refused: wipe never wipes a VG with volumes", async () => {
        const before = await a.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}; lvs --shared --noheadings -o lv_name ${VG}`);
        const second = planned(secondStorage, "vmsan2-vg");
        assert.match(second.create, / iscsi-vg \S+ [0-9a-f]{64} apply .* --wipe$/);
        // While A's lockspace runs, its lease volume holds the LUN and the holder guard refuses first.
        const held = await a.run(second.create);
        assert.equal(held.code, 1, held.stdout + held.stderr);
        assert.match(held.stderr, new RegExp(`^zcloud: /dev/disk/by-path/ip-\\S+-lun-${LUN}: refused: /dev/sd[a-z]+ is held by dm-\\d+\n$`));
        // A node where the driver's pods (the lock daemons) do not run: nothing holds the LUN.
        await a.check(`vgchange ${LVM} --lockstop ${VG}`);
        assert.equal((await a.check(`ls /sys/class/block/$(basename $(readlink -f /dev/disk/by-path/*-lun-${LUN}))/holders`)).trim(), "");
        const r = await a.run(second.create);
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(
            r.stderr,
            new RegExp(
                `^zcloud: /dev/disk/by-path/ip-\\S+-lun-${LUN}: refused: is a PV of VG ${VG}, which holds logical volumes \\(csl-rpc-data, csl-rpc-lock, vol1\\); wipe never wipes a VG with volumes\n$`,
            ),
        );
        assert.equal(zcloud(r.stdout).length, 0, r.stdout);
        assert.equal(await a.check(`vgs --shared --noheadings -o vg_uuid,vg_seqno ${VG}; lvs --shared --noheadings -o lv_name ${VG}`), before, "the first storage's VG is untouched");
        assert.equal((await a.run("test -e /etc/zcloud/iscsi/vmsan2.vg")).code, 1, "nothing recorded for the second storage");
    });

    it("status probe: two portals with their multipath device, then one portal logged out is reported with its node and portal", async () => {
        const [p1, p2] = portalsOf(2);
        const lockspace = (await b.run("pgrep -x sanlock")).code === 0 ? "stopped" : "no-daemon";
        const lockspaceProblem = `degraded: isb: lockspace lvm_${VG}: ${lockspace === "stopped" ? "not started (sanlock runs, the VG's lockspace is not in it)" : "not started (no sanlock daemon on the node)"}`;
        const both = await probe(b, 2);
        assert.deepEqual(both.facts.sessions, [{ portal: p1, iqn: IQN }, { portal: p2, iqn: IQN }]);
        assert.match(both.facts.multipath ?? "", /^\/dev\/disk\/by-id\/dm-uuid-mpath-\S+$/);
        assert.equal(both.facts.vgPresent, true);
        assert.equal(both.facts.lockspace, lockspace, "B's logout stopped its lockspace");
        assert.deepEqual(both.problems, [lockspaceProblem]);
        await b.check(`iscsiadm -m node -T ${IQN} -p ${p2} --logout`);
        const one = await probe(b, 2);
        assert.deepEqual(one.facts.sessions, [{ portal: p1, iqn: IQN }]);
        assert.deepEqual(one.problems, [`degraded: isb: portal ${p2}: no iSCSI session to ${IQN}`, lockspaceProblem]);
    });
    it("an LVM storage listing one shared LUN on both guests: the second never adopts or releases the first one's VG", async () => {
        // After the status probe B has one path to each LUN; LUN 2 is clean (its VG command was refused).
        const lun2 = `/dev/disk/by-path/ip-${portalsOf(1)[0]}-iscsi-${IQN}-lun-2`;
        await Promise.all([a, b].map((g) => g.check(`udevadm settle; test -b ${lun2}`)));
        const [onA, onB] = await Promise.all([a, b].map((g) => planYaml(localLvmStackYaml(g, lun2))));
        for (const run of [onA, onB]) {
            assert.equal(run.error, undefined, run.error?.message);
        }
        const disks = (run: PlanRun, g: Guest) => planned(run, `${LOCAL}-${g.name}-disks`);
        const [idA, idB] = await Promise.all([a, b].map(async (g) => (await g.check("cat /etc/machine-id")).trim()));
        assert.notEqual(idA, idB);
        const localVg = `zcloud-${LOCAL}`;
        // What the engine does first: each disk command's script copy, on its own guest.
        await performCopies((command, stdin) => a.run(command, { stdin }), [disks(onA, a).copy]);
        await performCopies((command, stdin) => b.run(command, { stdin }), [disks(onB, b).copy]);

        ok(await a.run(disks(onA, a).create));
        assert.equal((await a.check(`vgs --noheadings -o vg_tags ${localVg}`)).trim(), `zcloud.machine=${idA},zcloud.node=isa`);
        await a.check(`lvcreate -an -Zn -L 8m -n data ${localVg}`);
        const state = `vgs --noheadings -o vg_uuid,vg_seqno,vg_tags ${localVg}; lvs --noheadings -o lv_name ${localVg}; pvs --noheadings -o pv_name,vg_name`;
        const before = await a.check(state);

        const line = `zcloud: VG ${localVg}: refused: is stamped by another machine (zcloud.machine=${idA}, zcloud.node=isa; this machine is ${idB}); a node never adopts or releases another node's VG\n`;
        for (const cmd of [disks(onB, b).create, disks(onB, b).delete]) {
            const r = await b.run(cmd);
            assert.equal(r.code, 1, r.stdout + r.stderr);
            assert.equal(r.stderr, line);
            assert.equal(r.stdout, "");
        }
        assert.equal(await a.check(state), before, "A's VG, its LV and its PV are untouched");
        // A's own release still refuses while the LV exists: the stamp never weakens the LV guard.
        const released = await a.run(disks(onA, a).delete);
        assert.equal(released.stderr, `zcloud: VG ${localVg}: refused: holds logical volumes (data); remove them first\n`);
    });
});
