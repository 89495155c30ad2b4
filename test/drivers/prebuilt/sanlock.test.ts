/**
 * drivers-prebuilt tier: csi-sanlock-lvm as the plan renders it, in the VM tier's two iSCSI
 * initiators on one shared sanlock VG.
 *
 * - tgtd on this machine serves a CHAP LUN (test/vm/iscsi-target.ts); two QEMU guests log in with
 *   the planned login commands and the first makes the shared VG with the planned VG command;
 * - on each guest the node plugin's lvmctrld and driverd run from the rendered containers
 *   (runner.ts: command, args, env, mounts; the same paths in the guest), from binaries handed in
 *   by ZCLOUD_SANLOCK_LVMCTRLD_BIN and ZCLOUD_SANLOCK_DRIVERD_BIN (built by hand at the pinned
 *   version; test/drivers/README.md);
 * - csi-sanity's full suite against the first guest's socket, then a volume created, published
 *   and written on the first initiator, unpublished, published on the second, its data read back.
 *
 *   flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/sanlock.test.ts
 */
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { chapStdin } from "../../../components/iscsi/commands";
import { images } from "../../../components/images";
import { sanlockDriverName } from "../../../components/iscsi";
import { PlanRun, PlannedResource, planYaml } from "../../helpers/plan";
import { performCopies, plannedCopy } from "../../helpers/planned";
import { Guest, GuestSet, HOST_FROM_GUEST, bootGuests } from "../../vm/harness";
import { IscsiTarget } from "../../vm/iscsi-target";
import { csiCallProgram, driverCacheRoot } from "../programs";
import { PreparedContainer, guestCommand, prepareContainer } from "../runner";
import { copyIntoGuest, flagOf } from "../guestFiles";

const STORAGE = "slsan";
const VG = `zcloud-${STORAGE}`;
const IQN = "iqn.2026-11.io.zcloud.test:slsan";
const USER = "k8s";
const NAMESPACE = "zcloud-storage";
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const GiB = 1024 ** 3;
const csiSanityVersion = "5.6.0";
const password = `pw-${crypto.randomBytes(9).toString("hex")}`;
/** The pinned version the binaries must be built at (the image's tag). */
const pinned = images.sanlockDriverd.split(":").pop()!;

/** Each initiator's address as its kubelet reports it (status.hostIP): distinct sanlock host ids. */
const nodes = [
    { name: "sla", hostIP: "10.0.2.15" },
    { name: "slb", hostIP: "10.0.2.16" },
];

/** A binary handed in by the environment; a test that cannot run fails, naming the variable. */
function handedIn(variable: string): string {
    const file = process.env[variable];
    if (!file) {
        throw new Error(`${variable} is unset: set it to the csi-sanlock-lvm ${pinned} binary (test/drivers/README.md says how it is built)`);
    }
    if (!fs.existsSync(file)) {
        throw new Error(`${variable}=${file}: no such file`);
    }
    return file;
}

const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zs-${suffix}`;
const guestBin = "/opt/zcloud";
/** The image's LVM configuration differs from the node's in one key: lvmctrld's LVM uses lvmlockd. */
const lvmSystemDir = "/etc/zcloud-lvmctrld-lvm";

function stackYaml(a: Guest, b: Guest, port: number): string {
    return yaml.dump({
        config: {
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:sanlock" }, hostKeys: { sla: a.connection.hostKey, slb: b.connection.hostKey } },
            "zcloud-storage:nodes": { sla: { address: nodes[0].hostIP, port: a.connection.port }, slb: { address: nodes[1].hostIP, port: b.connection.port } },
            "zcloud-storage:iscsi": [
                {
                    name: STORAGE,
                    portals: [`${HOST_FROM_GUEST}:${port}`],
                    iqn: IQN,
                    lun: 1,
                    chap: { username: USER, password: { secure: "v1:sanlock-chap" } },
                    initiators: ["sla", "slb"],
                    wipe: false,
                },
            ],
        },
    });
}

function planned(run: PlanRun, name: string): { create: string; resource: PlannedResource } {
    const r = run.resources.find((x) => x.name === name);
    assert.ok(r, `no planned ${name}: ${run.resources.map((x) => x.name).join(", ")}`);
    return { create: String((r.inputs as Record<string, unknown>).create), resource: r };
}

async function guestUntil(g: Guest, check: string, ms: number, explain: string): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        if ((await g.run(check)).code === 0) {
            return;
        }
        await new Promise((r) => setTimeout(r, 2000));
    }
    assert.fail(`${check}: not true within ${ms} ms\n${(await g.run(explain)).stdout}`);
}

describe(`csi-sanlock-lvm ${pinned} as rendered, on two iSCSI initiators of one shared VG`, { timeout: 3_000_000 }, () => {
    let vms: GuestSet | undefined;
    let run: PlanRun;
    const target = new IscsiTarget({ iqn: IQN, lun: 1, sizeMiB: 4096, portals: 1, chap: { username: USER, password } });
    const timings: string[] = [];
    const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
        const start = Date.now();
        try {
            return await f();
        } finally {
            timings.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`);
        }
    };
    const guest = (i: number) => vms!.get(nodes[i].name);
    /** The node plugin's containers on each guest, once started. */
    const served = new Map<string, { socket: string; logs: string[] }>();
    const servedOn = (i: number) => {
        const s = served.get(nodes[i].name);
        assert.ok(s, `the node plugin runs on ${nodes[i].name} (test above)`);
        return s;
    };
    /** The storage's StorageClass parameters as planned: what the provisioner passes to CreateVolume. */
    const classParameters = (): Record<string, string> => {
        const classes = run.resources.filter((r) => r.type === "kubernetes:storage.k8s.io/v1:StorageClass" && r.inputs.provisioner === sanlockDriverName);
        assert.equal(classes.length, 1, "one StorageClass on csi-sanlock-lvm");
        return classes[0].inputs.parameters as Record<string, string>;
    };
    const csiCall = async (i: number, call: string, flags: string[]): Promise<any> => {
        const out = await guest(i).check([`${guestBin}/csi-call`, `-endpoint=unix://${servedOn(i).socket}`, ...flags, call].join(" "), { timeoutMs: 600_000 });
        return JSON.parse(out || "{}");
    };

    before(async () => {
        const programs = { lvmctrld: handedIn("ZCLOUD_SANLOCK_LVMCTRLD_BIN"), driverd: handedIn("ZCLOUD_SANLOCK_DRIVERD_BIN") };
        assert.equal(process.getuid?.(), 0, "needs root (tgtd, QEMU guests)");
        fs.mkdirSync(dir, { recursive: true });
        await target.start();
        vms = await timed("guests boot", () => bootGuests(nodes.map((n) => ({ name: n.name, memoryMiB: 1536 }))));
        run = await planYaml(stackYaml(guest(0), guest(1), target.ports[0]));
        assert.equal(run.error, undefined, run.error?.message);
        const login = (node: string) => planned(run, `${STORAGE}-${node}-login`);
        const vg = planned(run, `${STORAGE}-vg`);
        await performCopies((command, stdin) => guest(0).run(command, { stdin }), [plannedCopy(run.resources, login("sla").resource), plannedCopy(run.resources, vg.resource)]);
        await performCopies((command, stdin) => guest(1).run(command, { stdin }), [plannedCopy(run.resources, login("slb").resource)]);
        for (const [i, n] of nodes.entries()) {
            await timed(`login ${n.name}`, () => guest(i).check(login(n.name).create, { stdin: chapStdin(password), timeoutMs: 300_000 }));
        }
        await timed("VG create", () => guest(0).check(vg.create, { timeoutMs: 900_000 }));
        fs.mkdirSync(path.join(dir, "bin"));
        fs.copyFileSync(programs.lvmctrld, path.join(dir, "bin", "lvmctrld"));
        fs.copyFileSync(programs.driverd, path.join(dir, "bin", "driverd"));
        for (const i of [0, 1]) {
            const g = guest(i);
            await copyIntoGuest(g, path.join(dir, "bin"), ["lvmctrld", "driverd"], guestBin);
            await copyIntoGuest(g, path.join(driverCacheRoot, `csi-sanity-v${csiSanityVersion}`), ["csi-sanity"], guestBin);
            await copyIntoGuest(g, path.dirname(csiCallProgram()), ["csi-call"], guestBin);
            await g.check(`mkdir -p ${lvmSystemDir} && sed 's/^\\s*#\\?\\s*use_lvmlockd = 0/\tuse_lvmlockd = 1/' /etc/lvm/lvm.conf >${lvmSystemDir}/lvm.conf && grep -q '^\\s*use_lvmlockd = 1' ${lvmSystemDir}/lvm.conf`);
        }
    });

    after(async () => {
        process.stderr.write(`[sanlock] timings: ${timings.join(", ")}\n`);
        await vms?.close();
        target.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    let containerCount = 0;
    const prepare = (i: number, container: string): PreparedContainer => {
        const ds = run.resources.filter((r) => r.type === DAEMON_SET && ((r.inputs.spec as any)?.template?.spec?.containers ?? []).some((c: any) => c.name === "lvmctrld"));
        assert.equal(ds.length, 1, "one DaemonSet runs lvmctrld");
        const n = nodes[i];
        return prepareContainer(run, ds[0], container, {
            root: path.join(dir, `c${containerCount++}`),
            hostRoot: path.join(dir, `host-${n.name}`),
            pod: { nodeName: n.name, podName: `csi-sanlock-lvm-node-${n.name}`, namespace: NAMESPACE, podIP: n.hostIP, hostIP: n.hostIP },
        });
    };
    const start = async (g: Guest, p: PreparedContainer, program: string, hostEnv: Record<string, string> = {}): Promise<string> => {
        const script = guestCommand(p, { program: `${guestBin}/${program}`, network: "node", hostEnv });
        await g.check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & }`, { stdin: `${script}\n` });
        return `${p.root}.log`;
    };

    for (const i of [0, 1]) {
        test(`${nodes[i].name}: lvmctrld joins the VG's lockspace and driverd serves CSI, both as rendered`, async () => {
            const g = guest(i);
            const lvmctrld = prepare(i, "lvmctrld");
            const driverd = prepare(i, "driverd");
            const hostRoot = path.join(dir, `host-${nodes[i].name}`);
            await copyIntoGuest(g, dir, [lvmctrld.root, driverd.root, hostRoot].map((f) => path.relative(dir, f)), dir);
            const lvmctrldLog = await timed(`lvmctrld ${nodes[i].name}`, async () => {
                const log = await start(g, lvmctrld, "lvmctrld", { LVM_SYSTEM_DIR: lvmSystemDir });
                const socket = flagOf(lvmctrld.argv, "--listen").replace(/^unix:\/\//, "");
                await guestUntil(g, `test -S ${socket}`, 600_000, `cat ${log}; sanlock client status`);
                return log;
            });
            assert.match(await g.check("sanlock client status"), new RegExp(`^s lvm_${VG}:\\d+:`, "m"), (await g.run(`cat ${lvmctrldLog}`)).stdout);
            const socket = flagOf(driverd.argv, "--listen").replace(/^unix:\/\//, "");
            const driverdLog = await start(g, driverd, "driverd");
            await guestUntil(g, `test -S ${socket}`, 300_000, `cat ${driverdLog}; echo ---; tail -n 40 ${lvmctrldLog}`);
            served.set(nodes[i].name, { socket, logs: [lvmctrldLog, driverdLog] });
        });
    }

    test("csi-sanity's full suite passes against the first initiator's socket (node and controller alike)", async () => {
        const g = guest(0);
        const { socket, logs } = servedOn(0);
        const work = path.join(dir, "sanity");
        const params = path.join(dir, "sanity-params.yaml");
        assert.equal(classParameters().volumeGroup, VG);
        await g.check(`cat >${params}`, { stdin: yaml.dump(classParameters()) });
        const r = await timed("csi-sanity", () =>
            g.run(
                [
                    `mkdir -p ${work} &&`,
                    `${guestBin}/csi-sanity`,
                    `--csi.endpoint=unix://${socket}`,
                    `--csi.mountdir=${work}/mount`,
                    `--csi.stagingdir=${work}/staging`,
                    `--csi.testvolumesize=${GiB / 8}`,
                    `--csi.testvolumeexpandsize=${GiB / 4}`,
                    `--csi.testvolumeparameters=${params}`,
                    "--ginkgo.no-color",
                ].join(" "),
                { timeoutMs: 2_400_000 },
            ),
        );
        const out = `${r.stdout}${r.stderr}`;
        const m = out.match(/Ran (\d+) of (\d+) Specs.*\n.*?(\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/);
        assert.ok(m, `no csi-sanity summary in:\n${out.slice(-5000)}`);
        const [ran, total, passed, failed, pending, skipped] = m.slice(1).map(Number);
        process.stderr.write(`[sanlock] csi-sanity: ${ran} of ${total} specs ran: ${passed} passed, ${failed} failed, ${pending} pending, ${skipped} skipped\n`);
        assert.equal(r.code, 0, `csi-sanity failed:\n${out.slice(-20000)}\n${(await g.run(`tail -n 60 ${logs.join(" ")}`)).stdout}`);
        assert.equal(failed, 0);
        assert.ok(passed > 0);
    });

    test("a volume written on the first initiator is published on the second with its data", async () => {
        const volume = (await csiCall(0, "create", ["-name=pvc-move", `-size=${GiB / 4}`, ...Object.entries(classParameters()).map(([k, v]) => `-param=${k}=${v}`)])).volume;
        assert.ok(volume?.volumeId, JSON.stringify(volume));
        const context = Object.entries(volume.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
        // The driver claims STAGE_UNSTAGE_VOLUME: the kubelet stages on the node, then publishes into the pod.
        const attach = async (i: number, pod: string) => {
            const staging = path.join(dir, "staging", pod);
            const t = path.join(dir, "pods", pod, "mount");
            await csiCall(i, "stage", [`-volume=${volume.volumeId}`, `-staging=${staging}`, "-fs=ext4", ...context]);
            await csiCall(i, "publish", [`-volume=${volume.volumeId}`, `-staging=${staging}`, `-target=${t}`, "-fs=ext4", ...context]);
            return { staging, t };
        };
        const detach = async (i: number, p: { staging: string; t: string }) => {
            await csiCall(i, "unpublish", [`-volume=${volume.volumeId}`, `-target=${p.t}`]);
            await csiCall(i, "unstage", [`-volume=${volume.volumeId}`, `-staging=${p.staging}`]);
            assert.notEqual((await guest(i).run(`findmnt ${p.t}`)).code, 0);
        };
        const first = await attach(0, "writer");
        const sum = (await guest(0).check(`head -c 16M /dev/urandom >${first.t}/data && sync && sha256sum <${first.t}/data`)).trim();
        await detach(0, first);
        const second = await attach(1, "reader");
        assert.equal((await guest(1).check(`sha256sum <${second.t}/data`)).trim(), sum);
        await detach(1, second);
        await csiCall(1, "delete", [`-volume=${volume.volumeId}`]);
    });
});
