/**
 * Ceph tier: a real one-host cluster (mon, mgr, mds, OSDs on loop devices) brought up by the
 * node scripts in components/node/ceph, on 127.0.0.1, from Debian's ceph packages.
 * Steps run in order and share the cluster; see test/ceph/README.md.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, KEY_NAMES, missingPrerequisites, RunResult, waitFor } from "./cluster";

const FS = "shared-fs";
/** Health checks this single-host test cluster may show at the end: none. */
const ALLOWED_HEALTH_CHECKS = new Set<string>();


function show(r: RunResult): string {
    return `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
}
function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, show(r));
    return r;
}
/** The `zcloud: <subject>: <decision>` lines of an output. */
function decisions(text: string): string[] {
    return text.split("\n").filter((l) => l.startsWith("zcloud: "));
}

/** Names, sizes, modes and content hashes of every file under dir (mtimes change on reads). */
function snapshot(dir: string): string[] {
    const out: string[] = [];
    const walk = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
            const p = path.join(d, e.name);
            const st = fs.statSync(p);
            if (e.isDirectory()) {
                out.push(`${path.relative(dir, p)}/ ${st.mode.toString(8)} ${st.mtimeMs}`);
                walk(p);
            } else {
                const hash = createHash("sha256").update(fs.readFileSync(p)).digest("hex");
                out.push(`${path.relative(dir, p)} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${hash}`);
            }
        }
    };
    walk(dir);
    return out;
}

describe("ceph tier: one-host cluster from the node scripts", { timeout: 900_000 }, () => {
    let c: CephTestCluster;
    const devices: Record<string, string> = {};
    const timings: [string, number][] = [];
    let mark = Date.now();
    const lap = (what: string) => {
        const now = Date.now();
        timings.push([what, now - mark]);
        mark = now;
    };
    let mountDir = "";
    let osd0Uuid = "";

    before(async () => {
        // A tier that cannot run fails (it never skips): say what is missing.
        const missing = missingPrerequisites();
        if (missing.length > 0) {
            throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
        }
        c = await CephTestCluster.start();
        devices.a = c.loop("osd-a", 3072);
        devices.b = c.loop("osd-b", 3072);
        devices.c = c.loop("osd-c", 3072);
        devices.foreign = c.loop("foreign", 64);
        lap("setup (temp dir, keys, namespace, loop devices)");
    });

    after(async () => {
        const started = Date.now();
        if (c) await c.stop();
        timings.push(["teardown", Date.now() - started]);
        const total = timings.reduce((s, [, ms]) => s + ms, 0);
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
        console.log(`  ${(total / 1000).toFixed(1).padStart(6)} s  total`);
    });

    it("mon init creates the store once, leaves an existing store untouched, refuses another cluster's", async () => {
        const monArgs = ["--id", c.monId, "--mon", `${c.monId}=[v2:127.0.0.1:${c.port}]`];
        const first = ok(await c.script("ceph-mon-init", monArgs));
        assert.match(first.stdout, /^zcloud: mon\.a: created store at \/var\/lib\/ceph\/mon\/ceph-a for cluster /m);
        const store = path.join(c.dataDir, "mon", "ceph-a");
        const keyring = fs.readFileSync(path.join(store, "keyring"), "utf8");
        assert.doesNotMatch(keyring, /client\.admin/, "the store's keyring holds only the mon. key");
        const before = snapshot(store);

        const again = ok(await c.script("ceph-mon-init", monArgs));
        assert.deepEqual(decisions(again.stdout), ["zcloud: mon.a: store exists at /var/lib/ceph/mon/ceph-a; left untouched"]);
        assert.deepEqual(snapshot(store), before);

        const otherConf = path.join(c.tmp, "etc", "other.conf");
        c.writeConf(otherConf, "00000000-1111-2222-3333-444444444444");
        const foreign = await c.script("ceph-mon-init", monArgs, { env: c.env({ CEPH_CONF: otherConf }) });
        assert.equal(foreign.code, 1, show(foreign));
        assert.match(foreign.stderr, /zcloud: mon\.a: refused: store .* belongs to cluster [0-9a-f-]+, not 00000000-/);
        assert.deepEqual(snapshot(store), before);

        c.cephDaemon("mon", c.monId);
        await waitFor("mon quorum", 60_000, async () => {
            const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]);
            return q.quorum_names.includes("a") ? true : undefined;
        });
        lap("mon: init x3, start, quorum");
    });

    it("keyrings: Secret keys imported, daemon keys created, idempotent, a changed key refused", async () => {
        const csi = ["import", "client.csi", "csi", "--key-file", c.keyFile("csi"), "--fs", FS];
        const boot = ["import", "client.bootstrap-osd", "bootstrap-osd", "--key-file", c.keyFile("bootstrap-osd")];
        // bootstrap-osd came with the mon store (mkfs keyring); csi is new.
        assert.deepEqual(decisions(ok(await c.script("ceph-keyring", boot)).stdout), ["zcloud: client.bootstrap-osd: exists; caps match role bootstrap-osd"]);
        assert.match(ok(await c.script("ceph-keyring", csi)).stdout, /zcloud: client\.csi: created with the key from .* and role csi caps/);
        assert.match(ok(await c.script("ceph-keyring", ["daemon", "mgr", "a"])).stdout, /zcloud: mgr\.a: created with role mgr caps\nzcloud: mgr\.a: keyring written to/);
        assert.match(ok(await c.script("ceph-keyring", ["daemon", "mds", "a"])).stdout, /zcloud: mds\.a: created/);

        assert.deepEqual(decisions(ok(await c.script("ceph-keyring", csi)).stdout), ["zcloud: client.csi: exists; caps match role csi"]);
        assert.deepEqual(decisions(ok(await c.script("ceph-keyring", ["daemon", "mgr", "a"])).stdout), [
            "zcloud: mgr.a: exists; caps match role mgr",
            "zcloud: mgr.a: keyring /var/lib/ceph/mgr/ceph-a/keyring in place",
        ]);

        // caps that drifted are set again
        ok(await c.ceph(["auth", "caps", "client.csi", "mon", "allow r"]));
        assert.deepEqual(decisions(ok(await c.script("ceph-keyring", csi)).stdout), ["zcloud: client.csi: exists; caps set to role csi"]);
        const got = await c.cephJson<{ caps: Record<string, string> }[]>(["auth", "get", "client.csi"]);
        assert.equal(got[0].caps.mds, `allow r fsname=${FS} path=/volumes, allow rws fsname=${FS} path=/volumes/csi`);

        // a different key for an existing entity is a rotation: refused, nothing changed
        const other = c.writeKey("csi-rotated", c.genKey());
        const rotated = await c.script("ceph-keyring", ["import", "client.csi", "csi", "--key-file", other, "--fs", FS]);
        assert.equal(rotated.code, 1, show(rotated));
        assert.match(rotated.stderr, /zcloud: client\.csi: refused: exists with another key/);
        const key = (await c.ceph(["auth", "get-key", "client.csi"])).stdout.trim();
        assert.equal(key, c.key("csi"));
        fs.rmSync(other);

        const mgrKeyring = path.join(c.dataDir, "mgr", "ceph-a", "keyring");
        assert.equal(fs.statSync(mgrKeyring).mode & 0o777, 0o600);
        c.cephDaemon("mgr", "a");
        c.cephDaemon("mds", "a");
        lap("keyrings: import, daemon keys, re-runs, refusal; start mgr + mds");
    });

    it("OSDs: two clean loop devices are prepared, activated and come up under crush host <node>", async () => {
        c.osdDaemon("osd.0", devices.a);
        // one at a time: ids follow the order, and the machine has two cores
        await waitFor("osd.0 up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds >= 1 ? true : undefined));
        c.osdDaemon("osd.1", devices.b);
        await waitFor("2 OSDs up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        for (const [name, dev] of [["osd.0", devices.a], ["osd.1", devices.b]]) {
            const log = c.daemonLog(name);
            assert.match(log, new RegExp(`zcloud: ${dev}: clean device; preparing a new OSD`));
            assert.match(log, new RegExp(`zcloud-osd: ${dev} ${name.slice(4)} [0-9a-f-]{36}`));
            assert.match(log, new RegExp(`zcloud: ${name}: starting the daemon \\(crush location root=default host=${c.host}\\)`));
        }
        osd0Uuid = /zcloud-osd: \S+ 0 (\S+)/.exec(c.daemonLog("osd.0"))![1];
        const tree = await c.cephJson<{ nodes: { name: string; type: string; children?: number[] }[] }>(["osd", "tree"]);
        const host = tree.nodes.find((n) => n.type === "host");
        assert.equal(host?.name, c.host);
        assert.deepEqual([...(host?.children ?? [])].sort(), [0, 1]);
        lap("OSDs: prepare + activate + start two");
    });

    it("fs: pools sized by hosts, the file system and the csi subvolume group; a re-run changes nothing", async () => {
        // replicas above the host count are refused before anything is created
        const tooMany = await c.script("ceph-fs", ["apply", "--fs", FS, "--hosts", "1", "--replicas", "2"]);
        assert.equal(tooMany.code, 1, show(tooMany));
        assert.match(tooMany.stderr, /zcloud: shared-fs: refused: replicas 2 exceed the 1 host\(s\)/);

        // crush places this test's replicas on OSDs (chooseleaf type 0): two OSDs act as two hosts
        const first = ok(await c.script("ceph-fs", ["apply", "--fs", FS, "--hosts", "2", "--timeout", "120"], { timeoutMs: 240_000 }));
        assert.deepEqual(decisions(first.stdout), [
            "zcloud: shared-fs: replicas 2, min_size 1 for 2 host(s)",
            "zcloud: pool shared-fs-metadata: created",
            "zcloud: pool shared-fs-metadata: size is 2",
            "zcloud: pool shared-fs-metadata: min_size is 1",
            "zcloud: pool shared-fs-data: created",
            "zcloud: pool shared-fs-data: size is 2",
            "zcloud: pool shared-fs-data: min_size is 1",
            "zcloud: shared-fs: file system created on shared-fs-metadata and shared-fs-data",
            ...decisions(first.stdout).filter((l) => l.includes("waiting up to")),
            "zcloud: shared-fs: subvolume group csi created",
        ]);
        const again = ok(await c.script("ceph-fs", ["apply", "--fs", FS, "--hosts", "2"]));
        for (const line of decisions(again.stdout)) assert.doesNotMatch(line, /created|set to/, line);
        assert.ok(decisions(again.stdout).includes("zcloud: shared-fs: subvolume group csi exists"), again.stdout);

        const fsls = await c.cephJson<{ name: string; metadata_pool: string; data_pools: string[] }[]>(["fs", "ls"]);
        assert.deepEqual(fsls, [{ ...fsls[0], name: FS, metadata_pool: `${FS}-metadata`, data_pools: [`${FS}-data`] }]);
        const groups = await c.cephJson<{ name: string }[]>(["fs", "subvolumegroup", "ls", FS]);
        assert.deepEqual(groups.map((g) => g.name), ["csi"]);

        const health = await waitFor("HEALTH_OK (or only allowed checks)", 180_000, async () => {
            const h = await c.cephJson<{ status: string; checks: Record<string, unknown> }>(["health"]);
            const unexpected = Object.keys(h.checks).filter((k) => !ALLOWED_HEALTH_CHECKS.has(k));
            return unexpected.length === 0 ? h : undefined;
        }, 2000);
        assert.ok(["HEALTH_OK", "HEALTH_WARN"].includes(health.status));
        lap("fs: refusal, apply, re-run, HEALTH_OK");
    });

    it("a CSI-style subvolume, created and mounted as the CSI user, keeps a file written through ceph-fuse", async () => {
        ok(await c.ceph(["fs", "subvolume", "create", FS, "pvc-0001", "--group_name", "csi", "--size", String(100 << 20)], "csi"));
        const subPath = ok(await c.ceph(["fs", "subvolume", "getpath", FS, "pvc-0001", "--group_name", "csi"], "csi")).stdout.trim();
        assert.match(subPath, /^\/volumes\/csi\/pvc-0001\/[0-9a-f-]+$/);
        mountDir = path.join(c.tmp, "mnt");
        c.daemon("ceph-fuse", ["ceph-fuse", "-f", "--conf", c.conf, "--name", "client.csi", "--keyfile", c.keyFile("csi"), "--client_fs", FS, "-r", subPath, mountDir]);
        await waitFor("the ceph-fuse mount", 60_000, async () => {
            const r = await c.exec(["findmnt", "-n", "-o", "FSTYPE", mountDir]);
            return r.stdout.includes("fuse") ? true : undefined;
        });
        ok(await c.exec(["sh", "-c", 'printf "zcloud cephfs data\\n" > "$1/hello.txt" && sync', "write", mountDir]));
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("subvolume as CSI user, ceph-fuse write + read");
    });

    it("prepare on a device that already is an OSD of this cluster activates it, never prepares again", async () => {
        await c.stopDaemon("osd.0");
        const r = ok(await c.script("ceph-osd", ["prepare", "--device", devices.a, "--host", c.host]));
        assert.deepEqual(decisions(r.stdout), [
            `zcloud: ${devices.a}: already osd.0 of this cluster (uuid ${osd0Uuid}); activating, not preparing`,
            `zcloud: ${devices.a}: activated osd.0 at /var/lib/ceph/osd/ceph-0`,
        ]);
        assert.match(r.stdout, new RegExp(`^zcloud-osd: ${devices.a} 0 ${osd0Uuid}$`, "m"));
        fs.renameSync(path.join(c.tmp, "log", "osd.0.out"), path.join(c.tmp, "log", "osd.0-first.out"));
        c.osdDaemon("osd.0", devices.a);
        await waitFor("osd.0 up again", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        assert.match(c.daemonLog("osd.0"), /already osd\.0 of this cluster/);
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("OSD restart: prepare re-run activates");
    });

    it("a device of another cluster, or with a filesystem, is refused and left untouched", async () => {
        // a bluestore label from another cluster: this cluster's label with a foreign fsid
        ok(await c.exec(["dd", `if=${devices.a}`, `of=${devices.foreign}`, "bs=4096", "count=1", "conv=fsync", "status=none"]));
        const otherFsid = "11111111-2222-3333-4444-555555555555";
        ok(await c.exec(["ceph-bluestore-tool", "set-label-key", "--dev", devices.foreign, "-k", "ceph_fsid", "-v", otherFsid]));
        const r = await c.script("ceph-osd", ["prepare", "--device", devices.foreign, "--host", c.host]);
        assert.equal(r.code, 1, show(r));
        assert.match(r.stderr, new RegExp(`zcloud: ${devices.foreign}: refused: carries an OSD of another Ceph cluster \\(fsid ${otherFsid}, osd\\.0\\)`));
        const zap = await c.script("ceph-osd-drain", ["zap", "--device", devices.foreign]);
        assert.equal(zap.code, 1, show(zap));
        assert.match(zap.stderr, /refused: carries an OSD of another Ceph cluster/);
        const label = ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.foreign]));
        assert.match(label.stdout, new RegExp(`"ceph_fsid": "${otherFsid}"`), "label untouched");

        ok(await c.exec(["wipefs", "-a", "-q", devices.foreign]));
        ok(await c.exec(["mkfs.ext4", "-q", devices.foreign]));
        const ext4 = await c.script("ceph-osd", ["prepare", "--device", devices.foreign, "--host", c.host]);
        assert.equal(ext4.code, 1, show(ext4));
        assert.match(ext4.stderr, /refused: carries signatures \(ext4\)/);
        assert.equal(ok(await c.exec(["blkid", "-o", "value", "-s", "TYPE", devices.foreign])).stdout.trim(), "ext4");
        lap("refusals: foreign fsid, ext4");
    });

    it("drain refuses to take out an OSD whose data has nowhere to go; zap and purge refuse too", async () => {
        // two OSDs, two replicas: without osd.1 no pool fits
        const r = await c.script("ceph-osd-drain", ["drain", "--id", "1", "--timeout", "8"]);
        assert.equal(r.code, 1, show(r));
        assert.match(r.stderr, /zcloud: osd\.1: refused: draining it would leave pools without room for their replicas \(.*shared-fs-data needs 2 osds, 1 would remain.*\); add capacity or lower replicas first - not marked out/);
        const dump = await c.cephJson<{ osds: { osd: number; in: number }[] }>(["osd", "dump"]);
        assert.equal(dump.osds.find((o) => o.osd === 1)?.in, 1, "osd.1 is still in");

        const zap = await c.script("ceph-osd-drain", ["zap", "--device", devices.b]);
        assert.equal(zap.code, 1, show(zap));
        assert.match(zap.stderr, /zcloud: .*: refused: osd\.1 still exists in this cluster; drain and purge it before zapping/);
        const purge = await c.script("ceph-osd-drain", ["purge", "--id", "1", "--timeout", "3"]);
        assert.equal(purge.code, 3, show(purge));
        assert.match(purge.stderr, /zcloud: osd\.1: refused: still up after 3s; stop its daemon before purging/);
        ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]));
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("drain/zap/purge refusals");
    });

    it("with a third OSD the drain moves the data (bounded while held back): out, safe, stop, purge, zap; the file stays readable", async () => {
        c.osdDaemon("osd.2", devices.c);
        await waitFor("3 OSDs up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 3 ? true : undefined));

        // data that cannot move yet (backfill held back): the wait is bounded and says why
        for (const flag of ["nobackfill", "norecover", "norebalance"]) ok(await c.ceph(["osd", "set", flag]));
        const held = await c.script("ceph-osd-drain", ["drain", "--id", "1", "--timeout", "8"]);
        assert.equal(held.code, 3, show(held));
        assert.deepEqual(decisions(held.stdout), ["zcloud: osd.1: marked out; its placement groups move to other OSDs", "zcloud: osd.1: waiting up to 8s for safe-to-destroy (data moved off it)"]);
        assert.match(held.stderr, /zcloud: osd\.1: refused: not safe to destroy after 8s: .*(pgs currently mapped|not active\+clean|still reports \d+ placement groups).* it stays out and nothing was destroyed/);
        assert.ok(held.ms < 40_000, `bounded: took ${held.ms} ms`);
        for (const flag of ["nobackfill", "norecover", "norebalance"]) ok(await c.ceph(["osd", "unset", flag]));

        const drain = ok(await c.script("ceph-osd-drain", ["drain", "--id", "1", "--timeout", "180"], { timeoutMs: 240_000 }));
        assert.equal(decisions(drain.stdout)[0], "zcloud: osd.1: already out");
        assert.equal(decisions(drain.stdout).at(-1), "zcloud: osd.1: safe to destroy; stop its daemon, then purge");
        await c.stopDaemon("osd.1");
        assert.deepEqual(decisions(ok(await c.script("ceph-osd-drain", ["purge", "--id", "1", "--timeout", "60"])).stdout).filter((l) => !l.includes("waiting")), [
            "zcloud: osd.1: purged (osdmap, crush and auth entries removed)",
        ]);
        // stand-in for v19's label copy at 1 GiB (16.2 writes none): the zap must clear it too
        ok(await c.exec(["dd", "if=/dev/urandom", `of=${devices.b}`, "bs=4096", "seek=262144", "count=1", "conv=notrunc", "status=none"]));
        const zap = ok(await c.script("ceph-osd-drain", ["zap", "--device", devices.b]));
        assert.match(zap.stdout, new RegExp(`zcloud: ${devices.b}: zapped \\(label of purged osd\\.1, uuid [0-9a-f-]{36}, erased\\)`));
        const label = await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]);
        assert.notEqual(label.code, 0, "no bluestore label left");
        // where v19 BlueStore keeps a label copy (1 GiB on this 3 GiB device): zeroed as well
        const copy = ok(await c.exec(["sh", "-c", 'dd if="$1" bs=4096 skip=262144 count=1 status=none | od -An -v -tx1 | tr -d " \n0"', "read", devices.b]));
        assert.equal(copy.stdout, "", "4 KiB at 1 GiB are zero");
        // re-runs are no-ops
        assert.deepEqual(decisions(ok(await c.script("ceph-osd-drain", ["purge", "--id", "1"])).stdout), ["zcloud: osd.1: already purged"]);
        assert.deepEqual(decisions(ok(await c.script("ceph-osd-drain", ["zap", "--device", devices.b])).stdout), [`zcloud: ${devices.b}: no bluestore label; nothing to zap`]);

        const tree = await c.cephJson<{ nodes: { id: number }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.map((n) => n.id).filter((id) => id >= 0).sort(), [0, 2]);
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        await waitFor("HEALTH_OK after the removal", 180_000, async () => {
            const h = await c.cephJson<{ checks: Record<string, unknown> }>(["health"]);
            return Object.keys(h.checks).filter((k) => !ALLOWED_HEALTH_CHECKS.has(k)).length === 0 ? true : undefined;
        }, 2000);
        lap("third OSD, bounded drain timeout, drain, stop, purge, zap, HEALTH_OK");
    });

    it("no key ever appears in what the scripts and daemons printed", () => {
        const logs = [path.join(c.tmp, "log"), path.join(c.tmp, "varlog")].flatMap((d) => fs.readdirSync(d).map((f) => path.join(d, f)));
        const printed = c.transcript.join("\n") + logs.map((f) => fs.readFileSync(f, "utf8")).join("\n");
        for (const k of KEY_NAMES) assert.ok(!printed.includes(c.key(k)), `key ${k} leaked into output`);
        assert.doesNotMatch(printed, /AQ[A-Za-z0-9+/]{38}==/, "no key-shaped string in output");
    });
});
