/**
 * Ceph tier, the gated roll: a three-host cluster (3 mons, mgrs a and b, 3 OSDs on three CRUSH
 * hosts, replicas 3, mds a active and b standby) from the planned commands, then:
 * - the OSD gates on their edges: `osd-ok-to-stop` refuses a host while another host's OSD is down
 *   (Ceph's reason), and `osd-up`, started while the host's OSD is still down, waits and passes
 *   only after the OSD is started, up and in, with every PG active;
 * - a rolling restart of every daemon in the program's order (cephRollSteps: the steps and the
 *   ceph-gate.sh arguments exactly as the gate resources render them), under client I/O (a writer
 *   putting checksummed objects the whole time), every object then read back equal. Measured: time
 *   per daemon, in all, the longest window of inactive PGs (the mgr's `pg stat` every 0.2 s) and
 *   the longest stall of the writer.
 * - status (tools/status) reading the real cluster through `kubectl exec` into the admin pod:
 *   healthy; one OSD stopped is reported with its node and device.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, missingPrerequisites, RunResult, waitFor } from "./cluster";
import { CephPlan } from "./planned";
import { TIER_RELEASE, tierRoot } from "./release";
import { cephRollSteps, CephRollStep } from "../../components/cephfs/gates";
import { Kubectl, readCephHealth, readCephOsds } from "../../tools/status/cluster";
import { cephOsdProblems } from "../../tools/status/evaluate";

const FS = "roll-fs";
const NODES = ["zc-roll-1", "zc-roll-2", "zc-roll-3"];
const POOL = `${FS}-data`;
const GATE_TIMEOUT = 180;

function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`);
    return r;
}
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** The scripts' decision lines (`zcloud: ...`). */
const decisions = (text: string) => text.split("\n").filter((l) => l.startsWith("zcloud: "));

/** Longest run of samples with inactive PGs: [start, end] of each, in unix seconds. */
export function inactiveWindows(samples: string): { start: number; end: number }[] {
    const windows: { start: number; end: number }[] = [];
    let open: number | undefined;
    for (const line of samples.split("\n").filter(Boolean)) {
        const [t, total, active] = line.split(" ");
        if (total === "error") continue; // the mgr did not answer: no sample
        const inactive = Number(total) === 0 || Number(active) < Number(total);
        if (inactive && open === undefined) open = Number(t);
        if (!inactive && open !== undefined) {
            windows.push({ start: open, end: Number(t) });
            open = undefined;
        }
    }
    if (open !== undefined) windows.push({ start: open, end: Infinity });
    return windows;
}

describe(`ceph tier: the gated roll of every daemon under client I/O (${TIER_RELEASE.version})`, { timeout: 900_000 }, () => {
    let c: CephTestCluster;
    let plan: CephPlan;
    const devices: string[] = [];
    const timings: [string, number][] = [];
    const figures: string[] = [];
    const gate = (args: string[]) => c.script("ceph-gate", args);
    const fsid = () => c.fsid;
    const osdOf = new Map<string, number>(); // OSD workload -> osd id

    before(async () => {
        const missing = missingPrerequisites();
        if (missing.length > 0) throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
        c = CephTestCluster.create(tierRoot(TIER_RELEASE));
        for (const n of ["a", "b", "c"]) devices.push(c.loop(`roll-osd-${n}`, 3072));
        plan = await CephPlan.plan({
            storage: FS,
            hosts: Object.fromEntries(NODES.map((n, i) => [n, [devices[i]]])),
            wipeStorage: "roll-wipe",
            wipeHosts: { "zc-roll-9": ["/dev/disk/by-id/zc-roll-unused"] },
            kubeContext: "ceph-tier",
        });
        await c.boot(plan, Object.values(plan.monIps).filter((ip) => ip !== plan.monIps.a));
    });

    after(async () => {
        if (c) await c.stop();
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
        for (const f of figures) console.log(`  ${f}`);
    });

    it("creates the cluster from the planned commands: 3 mons, mgrs a and b, 3 OSDs on 3 CRUSH hosts, the file system, mds a and b", async () => {
        const t0 = Date.now();
        for (const id of ["a", "b", "c"]) {
            ok(await c.container(plan.container(`ceph-${FS}-mon-${id}`, "mon-init")));
            c.cephDaemon("mon", id);
            await waitFor(`mon.${id} in the quorum`, 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes(id) ? true : undefined));
        }
        for (const id of ["a", "b"]) {
            ok(await c.container(plan.container(`ceph-${FS}-mgr-${id}`, "keyring")));
            c.cephDaemon("mgr", id);
        }
        for (const [i, w] of c.osdWorkloads().entries()) {
            c.osdDaemon(`osd.${i}`, w);
            await waitFor(`osd.${i} up`, 180_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === i + 1 ? true : undefined));
            osdOf.set(w, i);
        }
        // mds a before the filesystem Job (it waits for an active MDS): a takes the rank; b, started after, stays standby
        for (const id of ["a", "b"]) {
            ok(await c.container(plan.container(`ceph-${FS}-mds-${id}`, "keyring")));
            c.cephDaemon("mds", id);
            if (id === "a") ok(await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 240_000 }));
        }
        await waitFor("mds.b standby", 120_000, async () => ((await c.cephJson<{ standbys: { name: string }[] }>(["fs", "dump"])).standbys.some((s) => s.name === "b") ? true : undefined));
        const tree = await c.cephJson<{ nodes: { name: string; type: string; children?: number[] }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.filter((n) => n.type === "host").map((n) => [n.name, n.children]).sort(), NODES.map((n, i) => [n, [i]]));
        const pools = await c.cephJson<{ pool_name: string; size: number; min_size: number }[]>(["osd", "pool", "ls", "detail"]);
        assert.deepEqual(pools.filter((p) => p.pool_name.startsWith(FS)).map((p) => [p.pool_name, p.size, p.min_size]).sort(), [[`${FS}-data`, 3, 2], [`${FS}-metadata`, 3, 2]]);
        ok(await gate(["osd-up", "--host", NODES[2], "--fsid", fsid(), "--timeout", "180"]));
        timings.push(["create (3 mons, 2 mgrs, 3 OSDs, fs, 2 mds)", Date.now() - t0]);
    });

    it("osd-ok-to-stop refuses a host while another host's OSD is down (Ceph's reason); osd-up started while the OSD is down waits, and passes only after it is up and in with every PG active", async () => {
        const [w0] = c.osdWorkloads();
        ok(await gate(["noout", "set", "--fsid", fsid()]));
        await c.stopDaemon("osd.0");
        await waitFor("osd.0 down", 60_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        // ok-to-stop reads the mgr's PG map: wait until every PG has peered without osd.0 (undersized)
        await waitFor("every PG undersized without osd.0", 60_000, async () => {
            const st = (await c.cephJson<{ pg_summary: { num_pgs: number; num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"])).pg_summary;
            return st.num_pg_by_state.filter((x) => x.name.split("+").includes("undersized")).reduce((n, x) => n + x.num, 0) === st.num_pgs ? true : undefined;
        }, 500);
        // size 3, min_size 2: with zc-roll-1 down, stopping zc-roll-2 leaves one copy
        const refused = await gate(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid()]);
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        assert.match(refused.stderr, new RegExp(`^zcloud: host ${NODES[1]}: refused: stopping osd 1 would make placement groups inactive: .*unsafe to stop osd\\(s\\) at this time \\(\\d+ PGs are or would become offline\\).* - not restarted$`, "m"));
        assert.equal(decisions(refused.stdout).length, 0, refused.stdout);
        // the after-gate, started while osd.0 is down, must wait
        const t0 = Date.now();
        const child = spawn("nsenter", ["-t", String(c.nsTarget), "-m", "-n", "-r", "-w", "--", "/bin/sh", "-c", c.scriptCommand("ceph-gate", ["osd-up", "--host", NODES[0], "--fsid", fsid(), "--timeout", "120"])], { env: c.env(), stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        child.stdout!.on("data", (d) => (out += String(d)));
        child.stderr!.on("data", (d) => (out += String(d)));
        const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
        let gateDone: number | undefined;
        void exited.then(() => (gateDone = Date.now()));
        await new Promise((r) => setTimeout(r, 6000));
        assert.equal(gateDone, undefined, `osd-up passed while osd.0 was down: ${out}`);
        const started = Date.now();
        c.osdDaemon("osd.0", w0);
        assert.equal(await exited, 0, out);
        assert.ok(gateDone! > started, "the gate passed after osd.0 was started");
        assert.equal(decisions(out).at(-1), `zcloud: host ${NODES[0]}: osd 0 up and in, all placement groups active`);
        // when it passed, osd.0 is up and in and every PG active (as Ceph says right after)
        const dump = ok(await c.ceph(["osd", "dump"])).stdout;
        assert.match(dump, /^osd\.0 up\s+in /m);
        const pg = await c.cephJson<{ pg_summary: { num_pgs: number; num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"]);
        assert.equal(pg.pg_summary.num_pg_by_state.filter((s) => s.name.split("+").includes("active")).reduce((n, s) => n + s.num, 0), pg.pg_summary.num_pgs);
        // and whole: osd.0 back in every acting set, so the next host may stop right away (an
        // osd-up that passed on "active" alone let this ok-to-stop refuse: 8 PGs would go offline)
        assert.deepEqual(pg.pg_summary.num_pg_by_state.filter((s) => /undersized|degraded/.test(s.name)), []);
        assert.deepEqual(decisions(ok(await gate(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid()])).stdout), [`zcloud: host ${NODES[1]}: osd 1 ok to stop`]);
        ok(await gate(["noout", "unset", "--fsid", fsid()]));
        figures.push(`osd-up held ${((started - t0) / 1000).toFixed(1)} s while osd.0 was down; passed ${((gateDone! - started) / 1000).toFixed(1)} s after its start`);
    });

    it("rolls every daemon in the program's gated order (cephRollSteps) under client I/O; every object reads back equal", async () => {
        const steps: CephRollStep[] = cephRollSteps({ storage: FS, fsid: fsid(), hosts: plan.stack.hosts, timeoutSeconds: GATE_TIMEOUT });
        // the order the program chains: mons, mgrs, noout, hosts (ok-to-stop, OSDs, up), mds
        assert.deepEqual(
            steps.map((s) => (s.kind === "restart" ? `${s.daemon}:${s.id}` : s.args[0])),
            ["mon:a", "mon-quorum", "mon:b", "mon-quorum", "mon:c", "mon-quorum", "mgr:a", "mgr-available", "mgr:b", "mgr-available", "noout",
                ...NODES.flatMap((n) => ["osd-ok-to-stop", `osd:${n}`, "osd-up"]), "noout", "mds-handover", "mds:a", "fs-active", "mds-handover", "mds:b", "fs-active"],
        );
        const io = path.join(c.tmp, "scratch", "io");
        fs.mkdirSync(io);
        const stop = path.join(io, "stop");
        const writerText = fs.readFileSync(path.join(__dirname, "writer.sh"), "utf8");
        const watchText = fs.readFileSync(path.join(__dirname, "pg-watch.py"), "utf8");
        c.daemon("writer", ["/bin/sh", "-c", writerText, "writer.sh", c.conf, c.keyFile("admin"), POOL, io]);
        c.daemon("pg-watch", ["python3", "-c", watchText, c.conf, c.keyFile("admin"), stop, path.join(io, "pgs")]);
        await waitFor("the writer's first objects", 60_000, async () => (fs.existsSync(path.join(io, "manifest")) && fs.readFileSync(path.join(io, "manifest"), "utf8").split("\n").length > 5 ? true : undefined), 200);
        const phases: { name: string; start: number; end: number }[] = [];
        const rollStart = Date.now();
        let t0 = Date.now();
        let current = "";
        for (const s of steps) {
            if (s.kind === "restart") {
                t0 = Date.now();
                current = s.daemon === "osd" ? `osd host ${s.id}` : `${s.daemon}.${s.id}`;
                for (const w of s.workloads) {
                    if (s.daemon === "osd") {
                        const id = osdOf.get(w)!;
                        await c.stopDaemon(`osd.${id}`);
                        c.osdDaemon(`osd.${id}`, w);
                    } else {
                        await c.stopDaemon(`${s.daemon}.${s.id}`);
                        c.cephDaemon(s.daemon, s.id);
                    }
                }
                continue;
            }
            const r = await gate(s.args);
            assert.equal(r.code, 0, `${s.name} (${s.args.join(" ")}): exit ${r.code}\n${r.stdout}${r.stderr}`);
            // the gate after a restart ends that daemon's time
            if (current && s.args[0] !== "osd-ok-to-stop" && s.args[0] !== "mds-handover" && s.args[0] !== "noout") {
                timings.push([current, Date.now() - t0]);
                phases.push({ name: current, start: t0 / 1000, end: Date.now() / 1000 });
                current = "";
            }
        }
        const rollMs = Date.now() - rollStart;
        timings.push(["roll, every daemon (gates included)", rollMs]);
        fs.writeFileSync(stop, "");
        await waitFor("the writer and the watcher to stop", 120_000, async () => (c.daemonPid("writer") === undefined && c.daemonPid("pg-watch") === undefined ? true : undefined), 200);
        // every acknowledged object reads back with its checksum; no put failed
        const manifest = fs.readFileSync(path.join(io, "manifest"), "utf8").split("\n").filter(Boolean);
        assert.deepEqual(manifest.filter((l) => l.startsWith("failed")), [], "no put failed during the roll");
        const objects = manifest.map((l) => l.split(" ")).map(([name, sum, start, end]) => ({ name, sum, start: Number(start), end: Number(end) }));
        const during = objects.filter((o) => o.start >= rollStart / 1000 && o.end <= (rollStart + rollMs) / 1000);
        assert.ok(during.length >= 20, `objects written during the roll: ${during.length}`);
        for (const o of objects) {
            const out = path.join(io, `${o.name}.back`);
            ok(await c.exec(["rados", "--conf", c.conf, "--name", "client.admin", "--keyfile", c.keyFile("admin"), "-p", POOL, "get", o.name, out]));
            assert.equal(sha(fs.readFileSync(out)), o.sum, o.name);
        }
        let stall = 0;
        for (let i = 1; i < objects.length; i++) stall = Math.max(stall, objects[i].end - objects[i - 1].end);
        const longestPut = Math.max(...objects.map((o) => o.end - o.start));
        // inactive PGs as the mgr reported them, every 0.2 s
        const samples = fs.readFileSync(path.join(io, "pgs"), "utf8");
        const n = samples.split("\n").filter(Boolean).length;
        const unanswered = samples.split("\n").filter((l) => l.includes(" error ")).length;
        const windows = inactiveWindows(samples).filter((w) => w.end >= rollStart / 1000);
        assert.ok(windows.every((w) => w.end !== Infinity), "PGs active again at the end");
        const longest = windows.reduce((m, w) => (w.end - w.start > m.end - m.start ? w : m), { start: 0, end: 0 });
        const phaseOf = (t: number) => phases.find((p) => t >= p.start && t <= p.end)?.name ?? "between steps";
        figures.push(`${objects.length} objects of 64 KiB written (${during.length} during the roll), all read back equal; longest put ${longestPut.toFixed(1)} s, longest gap between acknowledged puts ${stall.toFixed(1)} s`);
        figures.push(`${n} pg stat samples (${unanswered} unanswered while the mgr restarted); ${windows.length} window(s) of inactive PGs, longest ${(longest.end - longest.start).toFixed(1)} s (${phaseOf(longest.start)})`);
        figures.push(`inactive windows: ${windows.map((w) => `${(w.end - w.start).toFixed(1)} s (${phaseOf(w.start)})`).join(", ") || "none"}`);
        const health = await c.cephJson<{ checks: Record<string, unknown> }>(["health", "detail"]);
        // AES-256 keys (Ceph 20): no health check at all after the roll
        assert.deepEqual(Object.keys(health.checks), [], JSON.stringify(health.checks));
    });

    it("status reads the real cluster through kubectl exec in the admin pod: healthy; a stopped OSD is named with its node and device", async () => {
        const kubectl = fakeKubectl(c);
        const health = await readCephHealth(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in health), JSON.stringify(health));
        assert.deepEqual({ ...health, bytesUsed: health.bytesUsed > 0, bytesTotal: health.bytesTotal > 0 }, { status: "HEALTH_OK", osds: 3, up: 3, in: 3, bytesUsed: true, bytesTotal: true });
        let osds = await readCephOsds(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in osds), JSON.stringify(osds));
        assert.deepEqual(cephOsdProblems(osds), []);
        await c.stopDaemon("osd.1");
        await waitFor("osd.1 down", 60_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        osds = await readCephOsds(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in osds), JSON.stringify(osds));
        const kernel = path.basename(fs.realpathSync(devices[1]));
        assert.deepEqual(cephOsdProblems(osds), [{ kind: "degraded", node: NODES[1], object: `osd.1 (${kernel})`, message: "down, in" }]);
        c.osdDaemon("osd.1", c.osdWorkloads()[1]);
        await waitFor("osd.1 up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 3 ? true : undefined));
    });
});

/** status's kubectl, played by fake-kubectl.sh: `exec` runs in the cluster's namespace with the admin container's env. */
function fakeKubectl(c: CephTestCluster): Kubectl {
    const dir = path.join(c.tmp, "scratch", "kubectl");
    fs.mkdirSync(dir, { recursive: true });
    const envFile = path.join(dir, "admin.env");
    fs.writeFileSync(envFile, Object.entries(c.env()).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join("\n") + "\n");
    return (args) =>
        new Promise((resolve) => {
            const child: ChildProcess = spawn("bash", [path.join(__dirname, "fake-kubectl.sh"), ...args], {
                env: { ...process.env, ZCLOUD_TEST_KUBECTL_LOG: path.join(dir, "log"), ZCLOUD_TEST_ADMIN_POD: "admin-0", ZCLOUD_TEST_ADMIN_ENV: envFile, ZCLOUD_TEST_NSPID: String(c.nsTarget) },
                stdio: ["ignore", "pipe", "pipe"],
            });
            let stdout = "";
            let stderr = "";
            child.stdout!.on("data", (d) => (stdout += String(d)));
            child.stderr!.on("data", (d) => (stderr += String(d)));
            child.on("close", (code) => resolve({ code, stdout, stderr }));
        });
}
