/**
 * Ceph tier, upgrade: a cluster created at the previous release (Reef 18.2.7, Debian trixie's
 * packages in a chroot of their own) by the commands the program renders for a three-host stack,
 * then upgraded daemon by daemon to the release to move to (Tentacle 20.2.4; the program still
 * ships Squid 19.2.4) in Ceph's documented order: `noout`; mons one at a time (each back in the
 * quorum at the new version before the next); the mgr; OSDs one host at a time (`ok-to-stop`
 * first, up and every PG active after); the mds; then `require-osd-release tentacle` and `noout`
 * cleared. Objects written with checksums before read back equal after. Each daemon restarts
 * with its planned command from the new release's root (what a pod on the new image does).
 * Prints the time per daemon.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, missingPrerequisites, RunResult, waitFor } from "./cluster";
import { CephPlan } from "./planned";
import { TIER_RELEASE, tierRoot, UPGRADE_FROM } from "./release";

const FS = "up-fs";
const NODES = ["zc-up-1", "zc-up-2", "zc-up-3"];
const POOL = `${FS}-data`;
const OBJECTS = 16;

function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`);
    return r;
}
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe(`ceph tier: upgrade ${UPGRADE_FROM.version} -> ${TIER_RELEASE.version}, daemon by daemon`, { timeout: 900_000 }, () => {
    let c: CephTestCluster;
    let plan: CephPlan;
    let oldRoot: string;
    const devices: string[] = [];
    const sums = new Map<string, string>();
    const timings: [string, number][] = [];
    const workloads = () => c.osdWorkloads();

    /** The daemon types' versions as `ceph versions` counts them: type -> X.Y.Z -> count. */
    async function versions(): Promise<Record<string, Record<string, number>>> {
        const v = await c.cephJson<Record<string, Record<string, number>>>(["versions"]);
        const out: Record<string, Record<string, number>> = {};
        for (const [type, byVersion] of Object.entries(v)) {
            out[type] = {};
            for (const [line, n] of Object.entries(byVersion)) {
                const x = /^ceph version (\d+\.\d+\.\d+)/.exec(line)![1];
                out[type][x] = (out[type][x] ?? 0) + n;
            }
        }
        return out;
    }
    /** Until every PG is active (bounded); the longest this took is the inactive window measured. */
    async function pgsActive(what: string): Promise<void> {
        await waitFor(`every PG active after ${what}`, 180_000, async () => {
            const s = await c.cephJson<{ pg_summary?: { num_pg_by_state: { name: string; num: number }[]; num_pgs: number }; num_pg_by_state?: { name: string; num: number }[]; num_pgs?: number }>(["pg", "stat"]);
            const summary = s.pg_summary ?? (s as { num_pg_by_state: { name: string; num: number }[]; num_pgs: number });
            const active = summary.num_pg_by_state.filter((x) => x.name.split("+").includes("active")).reduce((n, x) => n + x.num, 0);
            return summary.num_pgs > 0 && active === summary.num_pgs ? true : undefined;
        }, 500);
    }
    /** Restarts one daemon from the root in use (the new release): stop, start its planned command, wait for `ready`. */
    async function roll(name: string, start: () => void, ready: () => Promise<unknown>): Promise<void> {
        const t0 = Date.now();
        await c.stopDaemon(name);
        start();
        await ready();
        timings.push([name, Date.now() - t0]);
    }

    before(async () => {
        const missing = missingPrerequisites();
        if (missing.length > 0) throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
        oldRoot = tierRoot(UPGRADE_FROM);
        c = CephTestCluster.create(tierRoot(TIER_RELEASE), [oldRoot]);
        for (const n of ["a", "b", "c"]) devices.push(c.loop(`up-osd-${n}`, 3072));
        plan = await CephPlan.plan({
            storage: FS,
            hosts: Object.fromEntries(NODES.map((n, i) => [n, [devices[i]]])),
            wipeStorage: "up-wipe",
            wipeHosts: { "zc-up-9": ["/dev/disk/by-id/zc-up-unused"] },
            kubeContext: "ceph-tier",
        });
        c.useRoot(oldRoot);
        // 18.2.7 knows only AES-128 keys: the keys an existing stack made before Ceph 20 has
        c.keyBytes = 16;
        await c.boot(plan, Object.values(plan.monIps).filter((ip) => ip !== plan.monIps.a));
    });

    after(async () => {
        if (c) await c.stop();
        const total = timings.filter(([w]) => !w.startsWith("create")).reduce((s, [, ms]) => s + ms, 0);
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
        console.log(`  ${(total / 1000).toFixed(1).padStart(6)} s  upgrade, all daemons`);
    });

    it(`creates the cluster at ${UPGRADE_FROM.version} from the planned commands: 3 mons, mgr, 3 OSDs on 3 hosts, mds, the file system; objects written`, async () => {
        const t0 = Date.now();
        assert.deepEqual(Object.keys(plan.monIps), ["a", "b", "c"]);
        for (const id of ["a", "b", "c"]) {
            ok(await c.container(plan.container(`ceph-${FS}-mon-${id}`, "mon-init")));
            c.cephDaemon("mon", id);
            await waitFor(`mon.${id} in the quorum`, 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes(id) ? true : undefined));
        }
        for (const type of ["mgr", "mds"] as const) {
            ok(await c.container(plan.container(`ceph-${FS}-${type}-a`, "keyring")));
            c.cephDaemon(type, "a");
        }
        // one after the other, so that osd.<i> is the i-th host's
        for (const [i, w] of workloads().entries()) {
            c.osdDaemon(`osd.${i}`, w);
            await waitFor(`osd.${i} up`, 180_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === i + 1 ? true : undefined));
            assert.match(c.daemonLog(`osd.${i}`), new RegExp(`zcloud-osd: ${devices[i]} ${i} `));
        }
        // The filesystem Job: pools and file system; Debian trixie's 18.2.7 mgr cannot load its
        // `volumes` module (PyO3 extensions refuse the mgr's subinterpreters: a packaging issue of
        // that suite, not of Ceph's image), so the subvolume group step fails here; the Job runs
        // again at 20.2.4 below, as its replaced Job does on an upgrade.
        const job = await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 240_000 });
        assert.equal(job.code, 1, job.stdout + job.stderr);
        assert.match(job.stdout, new RegExp(`zcloud: ${FS}: file system created on ${FS}-metadata and ${FS}-data`));
        assert.match(job.stderr, new RegExp(`zcloud: ${FS}: failed: subvolumegroup create csi`));
        await pgsActive("creation");
        assert.deepEqual(await versions().then((v) => v.overall), { [UPGRADE_FROM.version]: 8 });
        const tree = await c.cephJson<{ nodes: { name: string; type: string; children?: number[] }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.filter((n) => n.type === "host").map((n) => n.name).sort(), NODES);
        for (let i = 0; i < OBJECTS; i++) {
            const data = randomBytes(256 * 1024);
            const file = path.join(c.tmp, "scratch", `obj-${i}`);
            fs.writeFileSync(file, data);
            ok(await c.exec(["rados", "--conf", c.conf, "--name", "client.admin", "--keyfile", c.keyFile("admin"), "-p", POOL, "put", `obj-${i}`, file]));
            sums.set(`obj-${i}`, sha(data));
        }
        timings.push([`create at ${UPGRADE_FROM.version}`, Date.now() - t0]);
    });

    it(`upgrades to ${TIER_RELEASE.version} in Ceph's order (noout; mons; mgr; OSDs host by host behind ok-to-stop; mds; require-osd-release tentacle); every object reads back equal`, async () => {
        c.useRoot(undefined);
        ok(await c.ceph(["osd", "set", "noout"]));
        const at = (type: string, n: number) => async () => ((await versions())[type]?.[TIER_RELEASE.version] === n ? true : undefined);
        for (const [i, id] of ["a", "b", "c"].entries()) {
            await roll(`mon.${id}`, () => c.cephDaemon("mon", id), async () => {
                await waitFor(`mon.${id} back in the quorum`, 120_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.length === 3 ? true : undefined));
                await waitFor(`mon.${id} at ${TIER_RELEASE.version}`, 60_000, at("mon", i + 1));
            });
        }
        await roll("mgr.a", () => c.cephDaemon("mgr", "a"), async () => {
            await waitFor("mgr.a active", 120_000, async () => ((await c.cephJson<{ available: boolean; active_name: string }>(["mgr", "stat"])).available ? at("mgr", 1)() : undefined));
            await pgsActive("mgr.a");
        });
        for (const [i, w] of workloads().entries()) {
            // one failure domain (host) at a time: each host has one OSD here
            // ok-to-stop answers EAGAIN (exit 11) while PG states are unknown (a new mgr has no
            // stats yet): asked again, bounded, until it answers yes
            await waitFor(`ok-to-stop osd.${i}`, 60_000, async () => {
                const r = await c.ceph(["osd", "ok-to-stop", String(i)]);
                if (r.code !== 0 && r.code !== 11) throw new Error(`ok-to-stop osd.${i}: exit ${r.code} ${r.stdout} ${r.stderr}`);
                return r.code === 0 ? true : undefined;
            });
            await roll(`osd.${i}`, () => c.osdDaemon(`osd.${i}`, w), async () => {
                await waitFor(`osd.${i} up`, 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 3 ? at("osd", i + 1)() : undefined));
                await pgsActive(`osd.${i}`);
            });
            assert.match(c.daemonLog(`osd.${i}`), new RegExp(`zcloud: ${devices[i]}: already osd\\.${i} of this cluster .*; activating, not preparing`));
        }
        await roll("mds.a", () => c.cephDaemon("mds", "a"), () => waitFor("mds.a active", 120_000, async () => {
            const dump = await c.cephJson<{ filesystems: { mdsmap: { info: Record<string, { name: string; state: string }> } }[] }>(["fs", "dump"]);
            const active = Object.values(dump.filesystems[0]?.mdsmap.info ?? {}).some((m) => m.name === "a" && m.state === "up:active");
            return active ? at("mds", 1)() : undefined;
        }));
        ok(await c.ceph(["osd", "require-osd-release", "tentacle"]));
        // the filesystem Job (replaced on the new image) completes against the upgraded cluster
        const job = ok(await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 240_000 }));
        assert.match(job.stdout, new RegExp(`zcloud: ${FS}: subvolume group csi created`));
        ok(await c.ceph(["osd", "unset", "noout"]));
        assert.deepEqual((await versions()).overall, { [TIER_RELEASE.version]: 8 });
        const dump = await c.cephJson<{ require_osd_release: string; flags: string }>(["osd", "dump"]);
        assert.equal(dump.require_osd_release, "tentacle");
        assert.doesNotMatch(dump.flags, /noout/);
        await pgsActive("the upgrade");
        for (const [name, sum] of sums) {
            const out = path.join(c.tmp, "scratch", `${name}.back`);
            ok(await c.exec(["rados", "--conf", c.conf, "--name", "client.admin", "--keyfile", c.keyFile("admin"), "-p", POOL, "get", name, out]));
            assert.equal(sha(fs.readFileSync(out)), sum, name);
        }
        // Health: Ceph 20 reports AES-128 keys as insecure: the program's keys (client and daemon
        // entities, `AQ...`) and the service keys the mons made at 18.2.7; the service ones are
        // HEALTH_ERR. The program does not rotate keys to AES-256 yet (docs/cephfs.md, "Upgrading
        // Ceph"): these checks, and no other, are what the upgrade leaves.
        const health = await c.cephJson<{ status: string; checks: Record<string, { severity: string }> }>(["health", "detail"]);
        console.log(`health after the upgrade: ${health.status} ${Object.entries(health.checks).map(([k, v]) => `${k}=${v.severity}`).join(" ")}`);
        assert.deepEqual(Object.keys(health.checks).sort(), [
            "AUTH_INSECURE_CLIENT_KEY_TYPE",
            "AUTH_INSECURE_KEYS_ALLOWED",
            "AUTH_INSECURE_KEYS_CREATABLE",
            "AUTH_INSECURE_ROTATING_SERVICE_KEY_TYPE",
            "AUTH_INSECURE_SERVICE_KEY_TYPE",
            "AUTH_INSECURE_SERVICE_TICKETS",
        ], JSON.stringify(health.checks));
    });
});
