/**
 * Ceph tier, the gated roll: a three-host cluster (3 mons, mgrs a and b, 3 OSDs on three CRUSH
 * hosts, replicas 3, mds a and b) from the planned commands, created as `pulumi up` creates a new
 * storage: in the roll's order (cephRollSteps), each gate run as rendered, the OSD prepare Jobs
 * started together once the plan's dependencies of each passed (the mons' quorum), each OSD after
 * its Job, timed; a Job run again on a prepared device touches nothing, a held device lock makes
 * a Job wait, bounded; then:
 * - roll-start on a real cluster: passes when healthy; with a mon stopped it refuses naming it;
 * - the OSD gates on their edges: `osd-ok-to-stop` refuses a host while another host's OSD is down
 *   (Ceph's reason, and that noout stays set), roll-start refuses naming the OSD, status reports
 *   the set noout; with every pool's min_size at its size (every PG inactive already) ok-to-stop
 *   waits instead, naming the PGs, and refuses when its bound runs out, or at once when the PGs
 *   turn active and stopping would make them inactive (the OSD started again); `osd-up`, started
 *   while the host's OSD is still down, waits and passes only after it is started, up and in,
 *   with every PG active; the roll then goes on;
 * - (the rolling restart of every daemon under client I/O ran here until 2026-12-05; it now runs
 *   as pods under real kubelets in the nodes tier, test/nodes/cephfs.test.ts)
 * - status (tools/status) reading the real cluster through `kubectl exec` into the admin pod:
 *   healthy; one OSD stopped is reported with its node and device;
 * - monitoring: the planned metrics Job, a real Prometheus with the storage's rules scraping both
 *   managers, the alerts of a stopped mon and a stopped OSD;
 * - shrunk to one host: the removed hosts' drains one after the other, their mons leaving the
 *   monmap, every object read back.
 * (The creation all at once, a timed comparison with this creation in the roll's order, ran here
 * until 2026-12-06: test/ceph/README.md.)
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, missingPrerequisites, RunResult, waitFor } from "./cluster";
import { runPlannedLocalCommand } from "./localCommand";
import { CephPlan } from "./planned";
import { TIER_RELEASE, tierRoot } from "./release";
import { cephRollSteps } from "../../components/cephfs/gates";
import { cephNames, deviceSlug } from "../../components/naming";
import { osdLockDir } from "../../components/cephfs/osds";
import { Kubectl, readCephHealth, readCephOsds } from "../../tools/status/cluster";
import { aesCsiKeyChecks, cephOsdProblems, expectedCephWarning, osdFlagAdvice } from "../../tools/status/evaluate";
import * as yaml from "js-yaml";
import { parseStackConfig } from "../../components/config/parse";
import { CephFsConfig } from "../../components/config/model";
import { cephFsMonitoring, poolUsedPercent } from "../../components/cephfs/monitoring";
import { cephMgrMetricsPort } from "../../components/cephfs/metrics";
import { ruleFile } from "../../components/monitoring/stackMonitoring";
import { TierStack } from "./planned";
import { prometheus } from "../monitoring/tools";

const FS = "roll-fs";
/** The checks of a monmap that allows `aes` for the CSI key, while no client.csi exists yet. */
const MONMAP_AES_CHECKS = aesCsiKeyChecks.filter((c) => c !== "AUTH_INSECURE_CLIENT_KEY_TYPE");
const NODES = ["zc-roll-1", "zc-roll-2", "zc-roll-3"];
const POOL = `${FS}-data`;
const GATE_TIMEOUT = 180;
/** The admin pod fake-kubectl.sh names for the drains and mon leaves. */
const ADMIN_POD = `ceph-${FS}-admin-tier`;
/** What a refusal adds while noout is set (ceph-gate.sh gt_noout_note). */
const NOOUT = " - noout stays set \\(a stopped OSD is not marked out, its data not copied elsewhere\\) until a pulumi up gets past this storage's noout-unset gate; by hand, once every OSD is up: ceph osd unset noout \\(in an admin pod\\)";

function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`);
    return r;
}
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** The scripts' decision lines (`zcloud: ...`). */
const decisions = (text: string) => text.split("\n").filter((l) => l.startsWith("zcloud: "));

describe(`ceph tier: the gated roll of every daemon under client I/O (${TIER_RELEASE.version})`, { timeout: 900_000 }, () => {
    let c: CephTestCluster;
    let plan: CephPlan;
    const devices: string[] = [];
    const timings: [string, number][] = [];
    /** Creation in the roll's order: each daemon (one host's OSDs) from its start to its gate passing. */
    const creation: [string, number][] = [];
    const figures: string[] = [];
    /** A gate as rendered; the harness's bound is past the gate's own (--timeout), so the gate's message is what ends it. */
    const gate = async (args: string[]) => {
        const r = await c.script("ceph-gate", args, { timeoutMs: (GATE_TIMEOUT + 60) * 1000 });
        // On a failure the daemons' states come with the gate's message (assertions print stdout).
        return r.code === 0 ? r : { ...r, stdout: `${r.stdout}${c.daemonSummary()}\n` };
    };
    /** A gate as rendered, started in the background: its exit code, output so far and when it ended. */
    const gateInBackground = (args: string[]) => {
        const child = spawn("nsenter", ["-t", String(c.nsTarget), "-m", "-n", "-r", "-w", "--", "/bin/sh", "-c", c.scriptCommand("ceph-gate", args)], { env: c.env(), stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let doneAt: number | undefined;
        child.stdout!.on("data", (d) => (out += String(d)));
        child.stderr!.on("data", (d) => (out += String(d)));
        const exited = new Promise<number | null>((r) => child.on("close", (code) => { doneAt = Date.now(); r(code); }));
        return { exited, output: () => out, doneAt: () => doneAt };
    };
    const fsid = () => c.fsid;
    /**
     * Host index -> its OSD's id: the prepare Jobs run at once, so Ceph numbers the OSDs in the
     * order their prepares reach `ceph osd new`, not by host.
     */
    const idOf: number[] = [];

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
            monitoring: true,
        });
        await c.boot(plan, Object.values(plan.monIps).filter((ip) => ip !== plan.monIps.a));
    });

    /** The monitoring step's Prometheus (in the cluster's namespaces), stopped by that step or here. */
    let prom: ChildProcess | undefined;
    const stopPrometheus = async () => {
        const p = prom;
        prom = undefined;
        if (!p || p.exitCode !== null || p.signalCode !== null) return;
        const exited = new Promise<void>((r) => p.once("exit", () => r()));
        p.kill("SIGTERM");
        const timer = setTimeout(() => p.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(timer);
    };

    after(async () => {
        await stopPrometheus();
        if (c) await c.stop();
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
        console.log("  creation in the roll's order, per step (start to its gate passing):");
        console.log(creation.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s    ${w}`).join("\n"));
        for (const f of figures) console.log(`  ${f}`);
    });

    it("creates the cluster as pulumi up creates a new storage: the roll's order, each gate as rendered (3 mons, mgrs a and b, 3 OSDs on 3 CRUSH hosts, mds a and b, then the file system)", async () => {
        const steps = cephRollSteps({ storage: FS, fsid: fsid(), hosts: plan.stack.hosts, timeoutSeconds: GATE_TIMEOUT });
        // The prepare Jobs, one per device, outside the roll: each starts once the gates it
        // depends on in the plan passed (the mons' quorum: the last mon's gate, no host's gate),
        // all at once; an OSD workload starts only after its Job succeeded (it depends on it).
        const byUrn = new Map(plan.run.resources.map((r) => [r.urn, r]));
        const jobsAfter = new Map<string, { workload: string; job: string }[]>();
        for (const [node, devs] of Object.entries(plan.stack.hosts)) {
            for (const d of devs) {
                const job = plan.resource(`${FS}-${node}-osd-${deviceSlug(d)}-prepare`, "kubernetes:batch/v1:Job");
                const deps = job.dependencies.map((u) => byUrn.get(u)!);
                assert.deepEqual(deps.filter((r) => r.type === "command:local:Command" && r.name !== `${FS}-${node}-label`).map((r) => r.name), [`${FS}-gate-mon-c`], job.name);
                assert.ok(deps.some((r) => r.name === `${FS}-${node}-disks`) && deps.some((r) => r.name === `${FS}-${node}-label`), job.name);
                const osd = plan.resource(cephNames(FS).osd(node, d), "kubernetes:apps/v1:Deployment");
                assert.ok(osd.dependencies.includes(job.urn), `${osd.name} depends on ${job.name}`);
                jobsAfter.set(`${FS}-gate-mon-c`, [...(jobsAfter.get(`${FS}-gate-mon-c`) ?? []), { workload: osd.name, job: job.name }]);
            }
        }
        const jobRuns = new Map<string, Promise<RunResult & { done: number }>>();
        const jobStart = new Map<string, number>();
        const t0 = Date.now();
        let phase = "";
        let p0 = t0;
        const endPhase = (next: string) => {
            if (phase) creation.push([phase, Date.now() - p0]);
            phase = next;
            p0 = Date.now();
        };
        for (const s of steps) {
            if (s.kind === "gate") {
                // roll-start: no daemon Deployment of the storage exists yet, so cephfs-gate.sh
                // passes it without asking Ceph (test/unit/cephfs-gate.test.ts); there is no
                // cluster it could ask.
                if (s.first) continue;
                const r = await gate(s.args);
                assert.equal(r.code, 0, `${s.name} (${s.args.join(" ")}): exit ${r.code}\n${r.stdout}${r.stderr}`);
                for (const { workload, job } of jobsAfter.get(s.name) ?? []) {
                    jobStart.set(workload, Date.now());
                    jobRuns.set(workload, c.containerOwnFs(plan.container(job, "prepare"), { timeoutMs: 300_000 }).then((x) => ({ ...x, done: Date.now() })));
                }
                continue;
            }
            // A Deployment's create: its pod's init container, then the daemon (Pulumi waits for
            // the pod to be Ready: the daemon started); the gate after it waits for the daemon.
            endPhase(s.daemon === "osd" ? `osd host ${s.id}` : `${s.daemon}.${s.id}`);
            for (const w of s.workloads) {
                if (s.daemon === "osd") {
                    const i = c.osdWorkloads().indexOf(w);
                    const job = jobRuns.get(w);
                    assert.ok(job, `${w}: its prepare Job was started (after the mons' quorum)`);
                    const j = await job;
                    ok(j);
                    assert.deepEqual(decisions(j.stdout).slice(0, 1), [`zcloud: ${plan.stack.hosts[NODES[i]][0]}: clean device; preparing a new OSD`]);
                    const fact = new RegExp(`^zcloud-osd: ${plan.stack.hosts[NODES[i]][0]} (\\d+) [0-9a-f-]{36}$`, "m").exec(j.stdout);
                    assert.ok(fact, j.stdout);
                    idOf[i] = Number(fact[1]);
                    figures.push(`prepare Job of ${w}: ${((j.done - jobStart.get(w)!) / 1000).toFixed(1)} s, done ${((j.done - t0) / 1000).toFixed(1)} s after the creation started; its OSD step began at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
                    c.osdDaemon(`osd.${idOf[i]}`, w);
                } else {
                    ok(await c.container(plan.container(w, s.daemon === "mon" ? "mon-init" : "keyring")));
                    c.cephDaemon(s.daemon, s.id);
                }
            }
        }
        // After the last mds gate: the filesystem Job, then the cluster settles (every PG active).
        endPhase("filesystem Job, PGs active");
        ok(await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 240_000 }));
        await waitFor("every PG active and clean", 180_000, async () => {
            const pg = await pgCounts(c);
            return pg.total > 0 && pg.clean === pg.total ? true : undefined;
        }, 500);
        endPhase("");
        timings.push(["create in the roll's order (gates as rendered)", Date.now() - t0]);
        await waitFor("one active mds and one standby", 120_000, async () => {
            const d = await c.cephJson<{ standbys: unknown[]; filesystems: { mdsmap: { info: Record<string, { state: string }> } }[] }>(["fs", "dump"]);
            return d.standbys.length === 1 && Object.values(d.filesystems[0]?.mdsmap.info ?? {}).some((i) => i.state === "up:active") ? true : undefined;
        });
        const tree = await c.cephJson<{ nodes: { name: string; type: string; children?: number[] }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.filter((n) => n.type === "host").map((n) => [n.name, n.children]).sort(), NODES.map((n, i) => [n, [idOf[i]]]));
        assert.deepEqual([...idOf].sort(), [0, 1, 2]);
        const pools = await c.cephJson<{ pool_name: string; size: number; min_size: number }[]>(["osd", "pool", "ls", "detail"]);
        assert.deepEqual(pools.filter((p) => p.pool_name.startsWith(FS)).map((p) => [p.pool_name, p.size, p.min_size]).sort(), [[`${FS}-data`, 3, 2], [`${FS}-metadata`, 3, 2]]);
        // noout is set and cleared around the OSDs, as on any roll
        assert.deepEqual(await osdFlags(c), []);
        // each OSD workload found its device prepared by its Job: it activated, prepared nothing
        for (const [i, w] of c.osdWorkloads().entries()) {
            const log = decisions(c.daemonLog(`osd.${idOf[i]}`));
            assert.ok(log.some((l) => l.startsWith(`zcloud: ${devices[i]}: already osd.${idOf[i]} of this cluster (uuid `) && l.endsWith("); activating, not preparing")), `${w}: ${log.join("\n")}`);
            assert.ok(!log.some((l) => l.includes("preparing a new OSD")), `${w} prepared: ${log.join("\n")}`);
        }
    });

    it("a prepare Job on a device that carries this cluster's OSD (an existing stack's Job, or one run again) touches nothing; a Job waits for the device's lock, bounded", async () => {
        const jobOf = (i: number) => plan.container(`${FS}-${NODES[i]}-osd-${deviceSlug(devices[i])}-prepare`, "prepare");
        const osds = ok(await c.ceph(["osd", "ls"])).stdout;
        const epoch = (await c.cephJson<{ epoch: number }>(["osd", "dump"])).epoch;
        const label = ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices[0]])).stdout;
        const again = await c.containerOwnFs(jobOf(0));
        ok(again);
        assert.deepEqual(decisions(again.stdout).map((l) => l.replace(/\(uuid [0-9a-f-]{36}\)/, "(uuid U)")), [`zcloud: ${devices[0]}: already osd.${idOf[0]} of this cluster (uuid U); nothing to prepare`]);
        // no `ceph osd new`, no mkfs: the same OSDs, the same osdmap, the same label; osd.0 runs on
        assert.equal(ok(await c.ceph(["osd", "ls"])).stdout, osds);
        assert.equal((await c.cephJson<{ epoch: number }>(["osd", "dump"])).epoch, epoch);
        assert.equal(ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices[0]])).stdout, label);
        assert.notEqual(c.daemonPid(`osd.${idOf[0]}`), undefined);
        // the device's lock held (the OSD pod preparing it): the Job waits, then fails, deciding nothing
        const lock = `${osdLockDir}/${path.basename(fs.realpathSync(devices[1]))}.lock`;
        // -o: the lock is flock's own, not inherited by sleep, so stopping the holder frees it at
        // once (without it the orphaned sleep held it until its end, and the last Job below waited
        // for that: 121.6 s of the test, 126.7 s and a time-out once)
        c.daemon("lock-holder", ["flock", "-o", lock, "sleep", "120"]);
        await waitFor("the lock held", 10_000, async () => ((await c.exec(["flock", "-n", lock, "true"])).code === 1 ? true : undefined), 100);
        const waited = await c.containerOwnFs(jobOf(1), { env: { ZCLOUD_CEPH_OSD_LOCK_WAIT: "2" } });
        assert.equal(waited.code, 1, waited.stdout + waited.stderr);
        assert.deepEqual(decisions(waited.stdout), [`zcloud: ${devices[1]}: another prepare of this device holds ${lock}; waiting (at most 2s)`]);
        assert.deepEqual(waited.stderr.split("\n").filter((l) => l.startsWith("zcloud: ")), [`zcloud: ${devices[1]}: failed: ${lock} still held after 2s; not deciding`]);
        await c.stopDaemon("lock-holder");
        ok(await c.containerOwnFs(jobOf(1)));
    });

    it("roll-start on the real cluster: healthy, it passes; with mon b stopped it refuses naming it; b back, it passes", async () => {
        const start = ["roll-start", "--fsid", fsid(), "--timeout", "60"];
        assert.deepEqual(decisions(ok(await gate(start)).stdout), [`zcloud: cluster ${fsid()}: every mon in the quorum [a b c], no OSD down but in, every placement group active: the roll may start`]);
        await c.stopDaemon("mon.b");
        await waitFor("mon b out of the quorum", 60_000, async () => {
            const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]).catch(() => undefined);
            return q && !q.quorum_names.includes("b") ? true : undefined;
        });
        const refused = await gate(start);
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        assert.equal(
            refused.stderr.split("\n").filter((l) => l.startsWith("zcloud: ")).join("\n"),
            `zcloud: cluster ${fsid()}: refused: mon b not in the quorum [a c]: restarting another mon now could lose the quorum - bring it back first (its pod's log, ceph health detail), then run pulumi up again; no daemon was restarted`,
        );
        c.cephDaemon("mon", "b");
        ok(await gate(["mon-quorum", "--id", "b", "--fsid", fsid(), "--timeout", "120"]));
        ok(await gate(start));
    });

    it("osd-ok-to-stop refuses a host while another host's OSD is down (Ceph's reason); osd-up started while the OSD is down waits, and passes only after it is up and in with every PG active", async () => {
        const [w0] = c.osdWorkloads();
        ok(await gate(["noout", "set", "--fsid", fsid()]));
        const [o0, o1] = idOf; // host 0's and host 1's OSD ids
        await c.stopDaemon(`osd.${o0}`);
        await waitFor(`osd.${o0} down`, 60_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        // ok-to-stop reads the mgr's PG map: wait until every PG has peered without osd.0 (undersized)
        await waitFor("every PG undersized without osd.0", 60_000, async () => {
            const st = (await c.cephJson<{ pg_summary: { num_pgs: number; num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"])).pg_summary;
            return st.num_pg_by_state.filter((x) => x.name.split("+").includes("undersized")).reduce((n, x) => n + x.num, 0) === st.num_pgs ? true : undefined;
        }, 500);
        // size 3, min_size 2: with zc-roll-1 down, stopping zc-roll-2 leaves one copy
        const refused = await gate(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid()]);
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        assert.match(refused.stderr, new RegExp(`^zcloud: host ${NODES[1]}: refused: stopping osd ${o1} would make placement groups inactive: .*unsafe to stop osd\\(s\\) at this time \\(\\d+ PGs are or would become offline\\).* - not restarted${NOOUT}$`, "m"));
        assert.equal(decisions(refused.stdout).length, 0, refused.stdout);
        // a roll stopped here leaves noout set: roll-start (a next change's first gate) names the
        // down OSD and says noout stays set; status reports the flag with what to do
        const again = await gate(["roll-start", "--fsid", fsid(), "--timeout", "10"]);
        assert.equal(again.code, 1, again.stdout + again.stderr);
        assert.match(again.stderr, new RegExp(`^zcloud: cluster ${fsid()}: refused: osd\\.${o0} \\(host ${NODES[0]}\\) down but in: .* no daemon was restarted${NOOUT}$`, "m"));
        const health = await readCephHealth(fakeKubectl(c), "zcloud-storage", "admin-0");
        assert.ok(!("error" in health), JSON.stringify(health));
        assert.deepEqual(health.flags, ["noout"]);
        assert.match(osdFlagAdvice("noout"), /ceph osd unset noout/);
        // A placement group inactive already is no reason to refuse a host: ok-to-stop waits for it
        // (after a host's OSDs come back a PG can peer once more a moment later; the nodes tier's
        // roll met one). Here every pool's min_size raised to its size: with osd.0 down every PG
        // is inactive (peered), so Ceph finds host 1's PGs all inactive already and none that
        // stopping it would make inactive. Bounded, the gate refuses naming them.
        const pools = (await c.cephJson<{ pool_name: string; size: number; min_size: number }[]>(["osd", "pool", "ls", "detail"]));
        for (const p of pools) ok(await c.ceph(["osd", "pool", "set", p.pool_name, "min_size", String(p.size)]));
        await waitFor("every PG inactive with osd.0 down and min_size = size", 60_000, async () => ((await pgCounts(c)).active === 0 ? true : undefined), 500);
        const held = await gate(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid(), "--timeout", "4"]);
        assert.equal(held.code, 1, held.stdout + held.stderr);
        const inactive = /refused: placement groups ([0-9a-f. ]+) still inactive after 4s \(see ceph health detail\): .*"bad_already_inactive".* Error EBUSY: unsafe to stop osd\(s\) at this time .* - not restarted/.exec(held.stderr);
        assert.ok(inactive, held.stderr);
        assert.deepEqual(decisions(held.stdout), [`zcloud: host ${NODES[1]}: waiting up to 4s for placement groups ${inactive[1]}, inactive already (peering?), to be active; stopping this host's OSDs would make no other inactive`]);
        // the PGs it names: each has a copy on host 1's OSD and is inactive (Ceph's pg map)
        const onHost1 = new Map((await c.cephJson<{ pg_stats: { pgid: string; state: string }[] }>(["pg", "ls-by-osd", String(o1)])).pg_stats.map((p) => [p.pgid, p.state]));
        for (const pg of inactive[1].split(" ")) assert.ok(onHost1.has(pg) && !onHost1.get(pg)!.split("+").includes("active"), `${pg}: ${onHost1.get(pg)}`);
        // ok-to-stop and the after-gate, started while osd.0 is down, must wait. osd.0 started, its
        // PGs turn active, and Ceph's objection turns: with min_size = size, stopping host 1 would
        // now make them inactive, so the waiting ok-to-stop refuses at once (a PG active again is
        // no licence). The pools' min_size then set back, osd-up passes.
        const t0 = Date.now();
        const okToStop = gateInBackground(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid(), "--timeout", "120"]);
        const osdUp = gateInBackground(["osd-up", "--host", NODES[0], "--osds", "1", "--fsid", fsid(), "--timeout", "120"]);
        await new Promise((r) => setTimeout(r, 6000));
        assert.equal(okToStop.doneAt(), undefined, `ok-to-stop ended while osd.0 was down: ${okToStop.output()}`);
        assert.equal(osdUp.doneAt(), undefined, `osd-up passed while osd.0 was down: ${osdUp.output()}`);
        const started = Date.now();
        c.osdDaemon(`osd.${o0}`, w0);
        assert.equal(await okToStop.exited, 1, okToStop.output());
        const said = decisions(okToStop.output());
        // one waiting line per list of PGs Ceph named (fewer as osd.0's PGs peer; EAGAIN while their
        // states are unknown), then the refusal
        assert.match(said[0], new RegExp(`^zcloud: host ${NODES[1]}: waiting up to 120s for placement groups ${inactive[1].replaceAll(".", "\\.")}, inactive already`));
        for (const l of said.slice(0, -1)) assert.match(l, new RegExp(`^zcloud: host ${NODES[1]}: waiting up to 120s for (placement groups [0-9a-f. ]+, inactive already \\(peering\\?\\), to be active; stopping this host's OSDs would make no other inactive|Ceph to answer ok-to-stop \\(EAGAIN\\))$`));
        assert.match(said.at(-1)!, new RegExp(`^zcloud: host ${NODES[1]}: refused: stopping osd ${o1} would make placement groups inactive: \\{.*"bad_become_inactive":\\[.*\\} Error EBUSY: .* - not restarted${NOOUT}$`));
        assert.ok(okToStop.doneAt()! > started, "refused only once osd.0 was started");
        // osd-up passes with min_size = size too (every OSD up): the pools are set back only after
        // its check below, since a min_size change starts a new interval (its PGs peer once more)
        assert.equal(await osdUp.exited, 0, osdUp.output());
        const gateDone = osdUp.doneAt();
        assert.ok(gateDone! > started, "the gate passed after osd.0 was started");
        assert.equal(decisions(osdUp.output()).at(-1), `zcloud: host ${NODES[0]}: osd ${o0} up and in, all placement groups active`);
        // when it passed, osd.0 is up and in and every PG active (as Ceph says right after)
        const dump = ok(await c.ceph(["osd", "dump"])).stdout;
        assert.match(dump, new RegExp(`^osd\\.${o0} up\\s+in `, "m"));
        const pg = await c.cephJson<{ pg_summary: { num_pgs: number; num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"]);
        assert.equal(pg.pg_summary.num_pg_by_state.filter((s) => s.name.split("+").includes("active")).reduce((n, s) => n + s.num, 0), pg.pg_summary.num_pgs);
        // and whole: osd.0 back in every acting set, so the next host may stop right away (an
        // osd-up that passed on "active" alone let this ok-to-stop refuse: 8 PGs would go offline)
        assert.deepEqual(pg.pg_summary.num_pg_by_state.filter((s) => /undersized|degraded/.test(s.name)), []);
        for (const p of pools) ok(await c.ceph(["osd", "pool", "set", p.pool_name, "min_size", String(p.min_size)]));
        // (a PG that peers once more here, as min_size's change starts a new interval, is waited for)
        assert.equal(decisions(ok(await gate(["osd-ok-to-stop", "--host", NODES[1], "--fsid", fsid()])).stdout).at(-1), `zcloud: host ${NODES[1]}: osd ${o1} ok to stop`);
        // the roll goes on from where it stopped: the next host, then noout unset; the flag is gone
        ok(await gate(["noout", "unset", "--fsid", fsid()]));
        assert.deepEqual(await osdFlags(c), []);
        figures.push(`ok-to-stop with host 1's PGs inactive already (min_size = size): waited ${((started - t0) / 1000).toFixed(1)} s while osd.0 was down (${said.length - 1} waiting line(s)), refused ${((okToStop.doneAt()! - started) / 1000).toFixed(1)} s after its start (its PGs active: stopping host 1 would make them inactive); osd-up held as long, passed ${((gateDone! - started) / 1000).toFixed(1)} s after it`);
    });

    it("status reads the real cluster through kubectl exec in the admin pod: healthy; a stopped OSD is named with its node and device", async () => {
        const kubectl = fakeKubectl(c);
        const health = await readCephHealth(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in health), JSON.stringify(health));
        assert.deepEqual(
            { ...health, bytesUsed: health.bytesUsed > 0, bytesTotal: health.bytesTotal > 0, checks: Object.keys(health.checks ?? {}).sort() },
            { status: "HEALTH_WARN", osds: 3, up: 3, in: 3, bytesUsed: true, bytesTotal: true, flags: [], checks: MONMAP_AES_CHECKS },
        );
        // the CSI user's AES-128 key alone: expected, no problem (docs/cephfs.md "Keys on Ceph 20")
        assert.match(expectedCephWarning(health) ?? "", /^expected: the CSI user's AES-128 key/);
        let osds = await readCephOsds(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in osds), JSON.stringify(osds));
        assert.deepEqual(cephOsdProblems(osds), []);
        const o1 = idOf[1];
        await c.stopDaemon(`osd.${o1}`);
        await waitFor(`osd.${o1} down`, 60_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        osds = await readCephOsds(kubectl, "zcloud-storage", "admin-0");
        assert.ok(!("error" in osds), JSON.stringify(osds));
        const kernel = path.basename(fs.realpathSync(devices[1]));
        assert.deepEqual(cephOsdProblems(osds), [{ kind: "degraded", node: NODES[1], object: `osd.${o1} (${kernel})`, message: "down, in" }]);
        c.osdDaemon(`osd.${o1}`, c.osdWorkloads()[1]);
        await waitFor(`osd.${o1} up`, 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 3 ? true : undefined));
    });

    it("monitoring on a real cluster: the planned metrics Job turns the managers' prometheus module on; a real Prometheus with the storage's rules scrapes both managers; a stopped mon fires CephMonOutOfQuorum and CephMonQuorumAtRisk, a stopped OSD CephOsdDown, each clears once the daemon is back; every Ceph query of the dashboard returns series", async () => {
        const t0 = Date.now();
        const since = (t: number) => `${((Date.now() - t) / 1000).toFixed(1)} s`;
        // Where the wiring differs (test-only, before the module is on): on Kubernetes each manager
        // pod has its own IP and the module listens on port 9283 of it (server_addr `::`); here
        // both managers share the namespace's loopback, so each listens on an address of its own
        // (127.0.0.1, 127.0.0.2), port 9283 as planned. The module collects every 15 s by default;
        // 2 s here, so the alerts below follow the cluster within seconds.
        const mgrAddr: Record<string, string> = { a: "127.0.0.1", b: "127.0.0.2" };
        for (const [id, addr] of Object.entries(mgrAddr)) ok(await c.ceph(["config", "set", `mgr.${id}`, "mgr/prometheus/server_addr", addr]));
        ok(await c.ceph(["config", "set", "mgr", "mgr/prometheus/scrape_interval", "2"]));
        // one 4 MiB object, so the data pool's used share is not zero whatever ran before (step 4)
        const blob = path.join(c.tmp, "scratch", "monitoring-blob");
        fs.writeFileSync(blob, Buffer.alloc(4 << 20, 7));
        ok(await c.exec(["rados", "--conf", c.conf, "--name", "client.admin", "--keyfile", c.keyFile("admin"), "-p", POOL, "put", "monitoring-0", blob]));

        // 1. the Job monitoring adds (ceph-metrics.sh enable), as the plan renders it; a second run changes nothing
        const job = plan.container(`${FS}-metrics`, "metrics");
        const first = ok(await c.container(job, { timeoutMs: 180_000 }));
        const served = /^zcloud: mgr: metrics served at (http:\/\/127\.0\.0\.[12]:9283\/)$/m.exec(first.stdout);
        assert.ok(served, first.stdout);
        assert.deepEqual(decisions(first.stdout).filter((l) => !l.includes("waiting up to")), [
            "zcloud: mgr: turned the prometheus module on",
            "zcloud: mgr: the module now serves the daemons' performance counters (no ceph-exporter)",
            `zcloud: mgr: metrics served at ${served[1]}`,
        ]);
        const again = ok(await c.container(job, { timeoutMs: 180_000 }));
        assert.deepEqual(decisions(again.stdout), ["zcloud: mgr: the prometheus module is on", "zcloud: mgr: the module serves the daemons' performance counters", `zcloud: mgr: metrics served at ${served[1]}`]);
        figures.push(`monitoring: ceph-metrics.sh enable ${(first.ms / 1000).toFixed(1)} s, again ${(again.ms / 1000).toFixed(1)} s`);
        // the active manager serves the metrics, the standby answers 200 with an empty body
        const active = await waitFor("an active mgr serving the module", 60_000, async () => {
            const s = await c.cephJson<{ active_name: string; available: boolean }>(["mgr", "stat"]);
            return s.available ? s.active_name : undefined;
        });
        assert.equal(served[1], `http://${mgrAddr[active]}:9283/`);
        const standby = active === "a" ? "b" : "a";
        await waitFor(`the active mgr ${active}'s /metrics with ceph_health_status`, 60_000, async () => {
            const r = await httpGet(c, `http://${mgrAddr[active]}:9283/metrics`);
            return r.status === 200 && /^ceph_health_status /m.test(r.body) ? true : undefined;
        }, 500);
        // The standby: Ceph's StandbyModule would answer /metrics with 200 and an empty body; on
        // this tier the standby mgr has not been seen listening (connection refused): recorded, not asserted.
        // Given 30 s (the standby reloads its modules after the mgr map changes); its log's lines
        // about the module go into the figures, for the next look at why.
        const t1 = Date.now();
        let idle = "";
        await waitFor(`the standby mgr ${standby} answering`, 30_000, async () => {
            idle = await httpGet(c, `http://${mgrAddr[standby]}:9283/metrics`).then((r) => `HTTP ${r.status}, ${r.body.length} bytes`, (e: Error) => String(e.message.split(": exit 1 ").pop()));
            return idle.startsWith("HTTP ") ? true : undefined;
        }).catch(() => undefined);
        const standbyLog = c.daemonLog(`mgr.${standby}`).split("\n").filter((l) => /prometheus|standby|9283|cherrypy|Errno/i.test(l)).slice(-8);
        figures.push(`monitoring: active mgr ${active} serves /metrics; standby mgr ${standby} after ${since(t1)}: ${idle}`, ...standbyLog.map((l) => `  mgr.${standby}: ${l.slice(0, 200)}`));

        // 2. Prometheus (Debian's 2.42) in the cluster's network namespace, its files in the temp dir
        const storage = tierStorage(plan.stack);
        const mon = cephFsMonitoring([storage], { namespace: "zcloud-storage", ownsDriver: true });
        const group = mon.groups.find((g) => g.name === `zcloud-storage.cephfs.${FS}`)!;
        // The rules as the program renders them but for `for`: promtool proves each alert's `for`
        // (test/monitoring); here the point is Ceph's real metrics, so every `for` is 4 s.
        const rules = { ...group, rules: group.rules.map((r) => ({ ...r, for: "4s" })) };
        const dir = path.join(c.tmp, "prometheus");
        fs.mkdirSync(dir);
        fs.writeFileSync(path.join(dir, "rules.yaml"), ruleFile({ cephfs: { ...mon, groups: [rules] } }));
        fs.writeFileSync(path.join(dir, "prometheus.yml"), yaml.dump({
            global: { scrape_interval: "2s", scrape_timeout: "2s", evaluation_interval: "2s" },
            rule_files: [path.join(dir, "rules.yaml")],
            // both managers, as the metrics Service selects both; the label the ServiceMonitor adds, static here
            scrape_configs: [{ job_name: `ceph-${FS}-metrics`, honor_labels: true, metrics_path: "/metrics", static_configs: [{ targets: Object.values(mgrAddr).map((a) => `${a}:${cephMgrMetricsPort}`), labels: { storage: FS } }] }],
        }));
        const promStart = Date.now();
        prom = startPrometheus(c, dir);
        await waitFor("Prometheus ready (/-/ready)", 60_000, async () => ((await httpGet(c, `${PROM}/-/ready`)).status === 200 ? true : undefined), 500);
        await waitFor(`the active mgr ${active}'s target up`, 60_000, async () => {
            const t = JSON.parse((await httpGet(c, `${PROM}/api/v1/targets`)).body) as { data: { activeTargets: { health: string; scrapeUrl: string }[] } };
            return t.data.activeTargets.length === 2 && t.data.activeTargets.some((x) => x.health === "up" && x.scrapeUrl.includes(mgrAddr[active])) ? true : undefined;
        }, 500);
        /** An instant query, at `at` (Unix seconds) when given: two queries at one time read the same samples. */
        const query = async (expr: string, at?: number) => {
            const r = await httpGet(c, `${PROM}/api/v1/query?query=${encodeURIComponent(expr)}${at === undefined ? "" : `&time=${at}`}`);
            const j = JSON.parse(r.body) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
            assert.equal(j.status, "success", `${expr}: ${r.body}`);
            return j.data.result;
        };
        // A query's series, bounded: the module restarts its HTTP engine when its config changes
        // (seen as a daemon restarted), a failed scrape (2 s bound, on a loaded machine) leaves
        // the series stale until the next, and a manager failover needs the new active's module
        // started. A CI run once saw none of ceph_health_detail for 30 s, its cause unrecorded:
        // 90 s now, and on timeout the targets, the managers and the active's log say why.
        const series = (expr: string, what: string) => waitFor(`series of ${what}: ${expr}`, 90_000, async () => {
            const r = await query(expr);
            return r.length > 0 ? r : undefined;
        }, 500).catch(async (e: Error) => assert.fail(`${e.message}\n${await scrapeState()}`));
        /** What Prometheus and Ceph say of the scrape: each target's health and last error, the mgr map, the active's last log lines. */
        const scrapeState = async () => {
            const t = JSON.parse((await httpGet(c, `${PROM}/api/v1/targets`)).body) as { data: { activeTargets: { health: string; scrapeUrl: string; lastError: string; lastScrapeDuration: number }[] } };
            const m = await c.cephJson<{ active_name: string; available: boolean }>(["mgr", "stat"]).catch((x: Error) => ({ error: x.message }));
            const activeName = "active_name" in m ? m.active_name : "";
            const log = activeName ? c.daemonLog(`mgr.${activeName}`).split("\n").slice(-15).join("\n") : "";
            return [...t.data.activeTargets.map((x) => `target ${x.scrapeUrl}: ${x.health} (${x.lastScrapeDuration.toFixed(2)} s) ${x.lastError}`), `mgr stat: ${JSON.stringify(m)}`, `mgr.${activeName} log:\n${log}`].join("\n");
        };
        const alerts = async () => {
            const j = JSON.parse((await httpGet(c, `${PROM}/api/v1/alerts`)).body) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
            return j.data.alerts;
        };
        const firing = async () => (await alerts()).filter((a) => a.state === "firing");
        const named = (list: { labels: Record<string, string> }[]) => [...new Set(list.map((a) => a.labels.alertname))].sort();
        // the rules have run on the scraped metrics: HEALTH_WARN (the monmap's AES checks) fires CephHealthWarning
        await waitFor("CephHealthWarning firing (the cluster's HEALTH_WARN)", 60_000, async () => (named(await firing()).includes("CephHealthWarning") ? true : undefined), 500);
        figures.push(`monitoring: Prometheus up and its first alert firing ${since(promStart)} after its start`);
        const watched = ["CephMonOutOfQuorum", "CephMonQuorumAtRisk", "CephOsdDown"];
        const healthy = await alerts();
        assert.deepEqual(healthy.filter((a) => watched.includes(a.labels.alertname) || a.labels.alertname === "CephMetricsAbsent"), [], "healthy: none of the watched alerts pending or firing");
        figures.push(`monitoring: firing on the healthy cluster: ${named(healthy.filter((a) => a.state === "firing")).join(", ")}`);
        const health = await c.cephJson<{ status: string; checks: Record<string, unknown> }>(["health"]);
        assert.equal(health.status, "HEALTH_WARN", JSON.stringify(health.checks));

        // 3. a mon stopped: out of the quorum, and the quorum at its bare majority; back: both clear
        const fire = async (what: string, since0: number, check: (f: { labels: Record<string, string> }[]) => boolean) => {
            await waitFor(what, 120_000, async () => (check(await firing()) ? true : undefined), 500);
            return ((Date.now() - since0) / 1000).toFixed(1);
        };
        const clear = async (what: string, since0: number, names: string[]) => {
            await waitFor(what, 120_000, async () => ((await alerts()).some((a) => names.includes(a.labels.alertname)) ? undefined : true), 500);
            return ((Date.now() - since0) / 1000).toFixed(1);
        };
        const monStop = Date.now();
        await c.stopDaemon("mon.c");
        const monFired = await fire("CephMonOutOfQuorum (mon.c) and CephMonQuorumAtRisk firing", monStop, (f) =>
            f.some((a) => a.labels.alertname === "CephMonOutOfQuorum" && a.labels.ceph_daemon === "mon.c" && a.labels.storage === FS && a.labels.severity === "warning") &&
            f.some((a) => a.labels.alertname === "CephMonQuorumAtRisk" && a.labels.storage === FS && a.labels.severity === "critical"));
        const out = (await firing()).filter((a) => a.labels.alertname === "CephMonOutOfQuorum");
        assert.deepEqual(out.map((a) => a.labels.ceph_daemon), ["mon.c"]);
        const monStart = Date.now();
        c.cephDaemon("mon", "c");
        const monCleared = await clear("CephMonOutOfQuorum and CephMonQuorumAtRisk cleared", monStart, ["CephMonOutOfQuorum", "CephMonQuorumAtRisk"]);
        const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]);
        assert.deepEqual(q.quorum_names.sort(), ["a", "b", "c"]);

        // an OSD stopped: CephOsdDown for it; back: it clears. At the same time the standby mds
        // stopped: MDS_INSUFFICIENT_STANDBY, a check the rules read from ceph_health_detail, fires
        // CephMdsNoStandby; back, it clears.
        const id = idOf[2];
        const spare = (await c.cephJson<{ standbys: { name: string }[] }>(["fs", "dump"])).standbys.map((s) => s.name);
        assert.equal(spare.length, 1, JSON.stringify(spare));
        const osdStop = Date.now();
        await Promise.all([c.stopDaemon(`osd.${id}`), c.stopDaemon(`mds.${spare[0]}`)]);
        const osdFired = await fire(`CephOsdDown (osd.${id}) firing`, osdStop, (f) => f.some((a) => a.labels.alertname === "CephOsdDown" && a.labels.ceph_daemon === `osd.${id}` && a.labels.storage === FS && a.labels.severity === "warning"));
        const mdsFired = await fire("CephMdsNoStandby firing", osdStop, (f) => f.some((a) => a.labels.alertname === "CephMdsNoStandby" && a.labels.storage === FS));
        assert.deepEqual((await firing()).filter((a) => a.labels.alertname === "CephOsdDown").map((a) => a.labels.ceph_daemon), [`osd.${id}`]);
        const whileDown = named(await firing());
        const osdStart = Date.now();
        c.osdDaemon(`osd.${id}`, c.osdWorkloads()[2]);
        c.cephDaemon("mds", spare[0]);
        const osdCleared = await clear("CephOsdDown cleared", osdStart, ["CephOsdDown"]);
        const mdsCleared = await clear("CephMdsNoStandby cleared", osdStart, ["CephMdsNoStandby"]);
        figures.push(`monitoring: mon.c stopped: both mon alerts firing after ${monFired} s (for: 4s), cleared ${monCleared} s after its start; osd.${id} stopped: CephOsdDown firing after ${osdFired} s, cleared ${osdCleared} s after its start; mds.${spare[0]} (standby) stopped: CephMdsNoStandby after ${mdsFired} s, cleared ${mdsCleared} s`);
        figures.push(`monitoring: firing while osd.${id} and mds.${spare[0]} were down: ${whileDown.join(", ")}`);

        // 4. every query of the dashboard from Ceph's metrics returns series for this storage
        const panels = (mon.dashboard as unknown as { panels: { title: string; targets: { expr: string }[] }[] }).panels;
        const exprs = panels.flatMap((p) => p.targets.map((t) => ({ title: p.title, expr: t.expr.replaceAll("$storage", FS) })));
        // "Volumes used" reads the kubelets' volume stats and kube-state-metrics: no Kubernetes here
        assert.deepEqual([...new Set(exprs.filter((e) => !/\bceph_/.test(e.expr)).map((e) => e.title))], ["Volumes used"]);
        for (const e of exprs.filter((x) => /\bceph_/.test(x.expr))) {
            const result = await series(e.expr, e.title);
            assert.ok(result.every((r) => r.metric.storage === FS), `${e.title}: ${JSON.stringify(result)}`);
        }
        // ceph_pool_percent_used is a ratio (0..1): `ceph df`'s percent_used, used / (used + max_avail x size).
        // The scraped value follows `ceph df` a collection or two late (the OSDs report their
        // statistics to the manager every few seconds, the module caches its output): compared
        // until they agree within 10 %, bounded.
        const sizes = new Map((await c.cephJson<{ pool_id: number; size: number }[]>(["osd", "pool", "ls", "detail"])).map((p) => [p.pool_id, p.size]));
        let last = "";
        const agreed = await waitFor(`ceph_pool_percent_used of ${POOL} within 10 % of ceph df's percent_used`, 60_000, async () => {
            const df = await c.cephJson<{ pools: { id: number; name: string; stats: { percent_used: number; bytes_used: number; max_avail: number } }[] }>(["df"]);
            const data = df.pools.find((p) => p.name === POOL)!;
            assert.ok(data.stats.bytes_used >= 3 * (4 << 20) && data.stats.percent_used > 0, JSON.stringify(data));
            const ratio = data.stats.bytes_used / (data.stats.bytes_used + data.stats.max_avail * sizes.get(data.id)!);
            assert.ok(Math.abs(data.stats.percent_used - ratio) < 0.01 * ratio, `ceph df percent_used ${data.stats.percent_used} vs used/(used + max_avail x size) ${ratio}`);
            const at = Date.now() / 1000;
            const scraped = await query(`ceph_pool_percent_used{storage="${FS}",pool_id="${data.id}"}`, at);
            const value = Number(scraped[0]?.value[1]);
            last = `ceph_pool_percent_used ${value} vs ceph df ${data.stats.percent_used}`;
            return value > 0 && value < 1 && Math.abs(value - data.stats.percent_used) < 0.1 * data.stats.percent_used ? { value, at } : undefined;
        }).catch((e) => assert.fail(`${(e as Error).message}; last: ${last}`));
        // The rules' used share is that ratio in percent, for the same samples.
        const used = await query(poolUsedPercent(FS), agreed.at);
        assert.ok(Math.abs(Number(used.find((r) => r.metric.name === POOL)!.value[1]) - agreed.value * 100) < 1e-9 * 100, JSON.stringify(used));

        // 5. every metric and label the storage's rules read, in Ceph 20.2.4's output or known to appear only with an event
        const names = new Set((await series(`count by (__name__) ({storage="${FS}"})`, "the metric names")).map((r) => r.metric.__name__));
        const ruleMetrics = [...new Set(group.rules.flatMap((r) => [...r.expr.matchAll(/\b([a-z_]+)\{/g)].map((m) => m[1])))].filter((m) => m.startsWith("ceph_")).sort();
        assert.deepEqual(ruleMetrics.filter((m) => !names.has(m)), [], `metrics the rules read that Ceph does not serve (${[...names].length} served)`);
        const checks = (await series(`ceph_health_detail{storage="${FS}"}`, "the health checks")).map((r) => r.metric.name).sort();
        const ruleChecks = [...new Set(group.rules.flatMap((r) => [...r.expr.matchAll(/ceph_health_detail\{[^}]*name="([A-Z_]+)"/g)].map((m) => m[1])))].sort();
        // ceph_health_detail has a series for each check the module has seen raised (1 while
        // raised, 0 after): the stopped mon, OSD and mds raised theirs. SLOW_OPS and RECENT_CRASH
        // appear only once Ceph raises them (a blocked request, a crash).
        for (const n of ["MON_DOWN", "OSD_DOWN", "MDS_INSUFFICIENT_STANDBY"]) assert.ok(checks.includes(n), `${n} in ${JSON.stringify(checks)}`);
        assert.deepEqual(ruleChecks, ["MDS_INSUFFICIENT_STANDBY", "RECENT_CRASH", "SLOW_OPS"]);
        figures.push(`monitoring: health checks the rules read: ${ruleChecks.join(", ")}; seen on this cluster: ${checks.join(", ")}`);
        await stopPrometheus();
        timings.push(["monitoring (metrics Job, Prometheus, a mon and an OSD stopped and back, dashboard queries)", Date.now() - t0]);
        await waitFor("every PG active and clean after the OSD's return", 180_000, async () => {
            const pg = await pgCounts(c);
            return pg.total > 0 && pg.clean === pg.total ? true : undefined;
        }, 500);
    });

    it("shrunk to one host (replicas: 1 set): the default's fewer copies refused first; both removed hosts' drains, started together, run one after the other; mons c then b leave the monmap; the quorum holds and every object reads back", async () => {
        const t0 = Date.now();
        const rados = (...args: string[]) => c.exec(["rados", "--conf", c.conf, "--name", "client.admin", "--keyfile", c.keyFile("admin"), "-p", POOL, ...args]);
        fs.mkdirSync(path.join(c.tmp, "scratch"), { recursive: true });
        const dir = fs.mkdtempSync(path.join(c.tmp, "scratch", "shrink-"));
        const written: { name: string; sum: string }[] = [];
        for (let i = 0; i < 12; i++) {
            const file = path.join(dir, `obj-${i}`);
            fs.writeFileSync(file, Buffer.from(Array.from({ length: 65536 }, (_, k) => (k * 31 + i * 7) % 251)));
            ok(await rados("put", `shrink-${i}`, file));
            written.push({ name: `shrink-${i}`, sum: sha(fs.readFileSync(file)) });
        }
        const one = { storage: FS, hosts: { [NODES[0]]: [devices[0]] }, wipeStorage: "roll-wipe", wipeHosts: { "zc-roll-9": ["/dev/disk/by-id/zc-roll-unused"] }, kubeContext: "ceph-tier" };
        const [byDefault, onPurpose] = await Promise.all([CephPlan.plan(one), CephPlan.plan({ ...one, replicas: 1 })]);
        const sizes = async () =>
            (await c.cephJson<{ pool_name: string; size: number; min_size: number }[]>(["osd", "pool", "ls", "detail"])).map((p) => `${p.pool_name} ${p.size}/${p.min_size}`).sort();
        const before = await sizes();
        assert.deepEqual(before, [`${FS}-data 3/2`, `${FS}-metadata 3/2`, ".mgr 3/2"].sort());

        // replicas left to its default (min(3, hosts) = 1): ceph-fs.sh refuses before any pool changes
        const refused = await c.container(byDefault.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 120_000 });
        assert.equal(refused.code, 1, `${refused.stdout}${refused.stderr}`);
        assert.deepEqual(decisions(refused.stderr), [
            `zcloud: pool ${FS}-metadata: refused: keeps size 3, min_size 2; the default for 1 host(s) is size 1, min_size 1: fewer copies are set only when the stack config sets cephfs replicas itself (replicas: 1, after checking that 1 copies are enough); nothing was changed`,
        ]);
        assert.deepEqual(await sizes(), before, "no pool changed");
        // replicas: 1 in the config: the storage's pools and the manager's are lowered
        const lowered = ok(await c.container(onPurpose.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 120_000 }));
        assert.ok(decisions(lowered.stdout).includes(`zcloud: ${FS}: replicas 1, min_size 1 for 1 host(s) (replicas set in the config)`), lowered.stdout);
        assert.deepEqual(await sizes(), [`${FS}-data 1/1`, `${FS}-metadata 1/1`, ".mgr 1/1"].sort());

        // Pulumi's deletes: both hosts' drains in one round (test/plan/ceph-shrink.test.ts), started together here
        const drainOf = async (i: number) => {
            const node = NODES[i];
            const drain = plan.drain(node, devices[i]);
            const workload = cephNames(FS).osd(node, devices[i]);
            const started = Date.now();
            const { r } = await runPlannedLocalCommand(c, drain.delete, drain.environment, plan, ADMIN_POD, (d) => {
                fs.writeFileSync(path.join(d, "nodes", node), devices[i]);
                fs.writeFileSync(path.join(d, "pods", workload), String(c.daemonPid(`osd.${idOf[i]}`)));
            });
            return { node, r, started, ended: Date.now() };
        };
        const drained = await Promise.all([drainOf(1), drainOf(2)]);
        for (const d of drained) assert.equal(d.r.code, 0, `${d.node}: ${d.r.stdout}${d.r.stderr}`);
        const waited = drained.filter((d) => /waiting up to \d+s for the drain of zc-roll-\d \/dev\/\S+: drains of one storage run one at a time/.test(d.r.stdout));
        assert.equal(waited.length, 1, drained.map((d) => d.r.stdout).join("\n"));
        const first = drained.find((d) => d !== waited[0])!;
        const held = decisions(waited[0].r.stdout).find((l) => l.includes("waiting up to"))!;
        assert.ok(held.includes(`for the drain of ${first.node} ${devices[NODES.indexOf(first.node)]}:`), held);
        // the waiting drain marked its OSD out only after the first one's purge and zap
        const at = (text: string, re: RegExp) => decisions(text).findIndex((l) => re.test(l));
        assert.ok(at(waited[0].r.stdout, /waiting up to/) < at(waited[0].r.stdout, / marked out;/), waited[0].r.stdout);
        assert.ok(waited[0].ended > first.ended - 1000, "the waiting drain ends after the first");
        for (const d of drained) {
            const i = NODES.indexOf(d.node);
            assert.ok(decisions(d.r.stdout).includes(`zcloud: ${d.node} ${devices[i]}: osd.${idOf[i]} drained, purged and zapped`), d.r.stdout);
        }
        figures.push(`shrink: two hosts' drains one after the other: ${drained.map((d) => `${d.node} ${((d.ended - d.started) / 1000).toFixed(1)} s`).join(", ")}`);
        const tree = await c.cephJson<{ nodes: { id: number; type: string }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.filter((n) => n.type === "osd").map((n) => n.id), [idOf[0]]);

        // then the mons' leaves, c before b (their dependency), each while the others hold a quorum
        const quorum = async () => (await c.cephJson<{ quorum_names: string[]; monmap: { mons: { name: string }[] } }>(["quorum_status"]));
        for (const [id, after] of [["c", ["a", "b"]], ["b", ["a"]]] as const) {
            const leave = plan.monLeave(id);
            const started = Date.now();
            const { r, calls } = await runPlannedLocalCommand(c, leave.delete, leave.environment, plan, ADMIN_POD);
            assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
            assert.deepEqual(decisions(r.stdout), [`zcloud: mon.${id}: removed from the monmap`, `zcloud: mon.${id}: the quorum holds without it: [${after.join(",")}]`]);
            assert.deepEqual(calls.map((x) => x.filter((w) => ["get", "exec", "configmap", "pods"].includes(w)).join(" ")), ["get configmap", "get configmap", "get configmap", "get pods", "exec"]);
            const q = await quorum();
            assert.deepEqual([q.quorum_names.sort(), q.monmap.mons.map((m) => m.name).sort()], [[...after], [...after]]);
            // the removed mon's daemon stops by itself (it is no longer in the map); its Deployment's delete follows
            await waitFor(`mon.${id}'s daemon to exit`, 60_000, async () => (c.daemonPid(`mon.${id}`) === undefined ? true : undefined), 500);
            figures.push(`shrink: mon.${id} left the monmap in ${((Date.now() - started) / 1000).toFixed(1)} s`);
            // a second run (pulumi up again after a failure) finds nothing to do
            const again = await runPlannedLocalCommand(c, leave.delete, leave.environment, plan, ADMIN_POD);
            assert.deepEqual(decisions(again.r.stdout), [`zcloud: mon.${id}: not in the monmap; nothing to remove`]);
        }
        for (const o of written) {
            const out = path.join(dir, `${o.name}.back`);
            ok(await rados("get", o.name, out));
            assert.equal(sha(fs.readFileSync(out)), o.sum, o.name);
        }
        // Health: one copy is what the config asked for (POOL_NO_REDUNDANCY); TOO_FEW_OSDS compares
        // the one OSD with ceph.conf's osd_pool_default_size, which the tier's daemons still read
        // from the three-host plan: the shrunk plan's ceph.conf, which the roll of every daemon
        // carries on a real cluster, says 1.
        assert.match(onPurpose.conf, /^osd_pool_default_size = 1$/m);
        const health = await c.cephJson<{ checks: Record<string, unknown> }>(["health"]);
        assert.deepEqual(Object.keys(health.checks).filter((k) => !MONMAP_AES_CHECKS.includes(k) && k !== "POOL_NO_REDUNDANCY" && k !== "TOO_FEW_OSDS").sort(), [], JSON.stringify(health.checks));
        timings.push(["shrink to one host (refusal, pools lowered, two drains, two mons leave)", Date.now() - t0]);
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

/** Placement group counts as the mgr reports them: total, active, active and clean (scrubbing or not). */
async function pgCounts(k: CephTestCluster): Promise<{ total: number; active: number; clean: number }> {
    const st = (await k.cephJson<{ pg_summary: { num_pgs: number; num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"])).pg_summary;
    const sum = (f: (s: string[]) => boolean) => st.num_pg_by_state.filter((x) => f(x.name.split("+"))).reduce((n, x) => n + x.num, 0);
    return { total: st.num_pgs, active: sum((s) => s.includes("active")), clean: sum((s) => s.includes("active") && s.includes("clean")) };
}

/** The cluster-wide OSD flags Ceph warns of (noout, norebalance, ...), from the osdmap. */
async function osdFlags(k: CephTestCluster): Promise<string[]> {
    const line = /^flags (\S+)$/m.exec(ok(await k.ceph(["osd", "dump"])).stdout)?.[1] ?? "";
    return line.split(",").filter((f) => ["noout", "norebalance", "nobackfill", "norecover", "nodown", "noup", "noin", "pause"].includes(f));
}

/** Prometheus's address, in the cluster's network namespace (its own loopback: only the cluster's daemons listen there, on 3300, 6789, 6800-7568 and 9283). */
const PROM = "http://127.0.0.1:9090";

/**
 * Debian's Prometheus server (test/monitoring/tools.ts) in the cluster's mount and network
 * namespaces (the host's files, the cluster's loopback: it reaches the managers, and the holder's
 * teardown kills it if the test dies); its TSDB and log under `dir`.
 */
function startPrometheus(k: CephTestCluster, dir: string): ChildProcess {
    const fd = fs.openSync(path.join(dir, "prometheus.log"), "a");
    const child = spawn("nsenter", ["-t", String(k.nsTarget), "-m", "-n", "--", prometheus(), `--config.file=${path.join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${path.join(dir, "data")}`, `--web.listen-address=${PROM.slice("http://".length)}`], {
        stdio: ["ignore", fd, fd],
    });
    fs.closeSync(fd);
    return child;
}

/** An HTTP GET in the cluster's namespace (python3 of the chroot): the status and the body. */
async function httpGet(k: CephTestCluster, url: string): Promise<{ status: number; body: string }> {
    const py = [
        "import sys, urllib.request, urllib.error",
        "try:",
        "    r = urllib.request.urlopen(sys.argv[1], timeout=10); status, body = r.status, r.read()",
        "except urllib.error.HTTPError as e:",
        "    status, body = e.code, e.read()",
        "sys.stdout.write(str(status) + '\\n' + body.decode())",
    ].join("\n");
    const r = await k.exec(["python3", "-c", py, url], { timeoutMs: 20_000 });
    if (r.code !== 0) throw new Error(`GET ${url}: exit ${r.code} ${r.stderr.trim().split("\n").pop()}`);
    const nl = r.stdout.indexOf("\n");
    return { status: Number(r.stdout.slice(0, nl)), body: r.stdout.slice(nl + 1) };
}

/** The tier stack's storage as the config model gives it, with monitoring on (its `alerts` resolved). */
function tierStorage(stack: TierStack): CephFsConfig {
    const nodes = Object.fromEntries(Object.keys(stack.hosts).map((n, i) => [n, { address: `127.0.0.${i + 1}` }]));
    const parsed = parseStackConfig({ ssh: { user: "root", privateKey: "k" }, nodes, monitoring: {}, cephfs: [{ name: stack.storage, hosts: stack.hosts }] });
    assert.deepEqual(parsed.errors, []);
    return parsed.model!.cephfs[0];
}
