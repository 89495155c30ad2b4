/**
 * Ceph tier: a real one-host cluster (mon, mgr, mds, OSDs on loop devices) brought up by the
 * commands the program renders for a small cephfs stack (the offline plan: container commands,
 * env, ceph.conf, node disk commands, the OSD drain), from Debian's ceph packages.
 * Steps run in order and share the cluster; see test/ceph/README.md.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, KEY_NAMES, missingPrerequisites, RunResult, waitFor } from "./cluster";
import { diffPlans } from "../../tools/plan/diff";
import { runPlannedLocalCommand } from "./localCommand";
import { CephPlan, PlannedContainer, withDevices } from "./planned";
import { performCopies } from "../helpers/planned";
import { cephScriptSetName, cephScriptText } from "../../components/cephfs/scripts";
import { deviceSlug } from "../../components/cephfs/cluster";
import { aesCsiKeyChecks } from "../../tools/status/evaluate";
import { scriptArgv } from "../helpers/cephScripts";

const FS = "shared-fs";
/** The node's SSH user's home and bundle store: the test host stands in for the nodes. */
const nodeHome = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ceph-node-"));
after(() => fs.rmSync(nodeHome, { recursive: true, force: true }));
const NODE1 = "zc-node-1";
const NODE2 = "zc-node-2";
const WIPE_FS = "wipe-fs";
const WIPE_NODE = "zc-node-3";
/** The third host the storage grows to (planned only: its mons run, its OSDs do not). */
const NODE4 = "zc-node-4";
const CONTEXT = "ceph-tier";
/** The admin pod the fake kubectl reports on every node. */
const ADMIN_POD = `ceph-${FS}-admin-tier`;

/**
 * Runs a planned node command as the remote command would: `sh -c '<command>'` as root on the
 * host (outside the Ceph namespace, no Ceph settings in its environment; ZCLOUD_ALLOW_LOOP=1 lets
 * the node guards take the tier's loop devices).
 */
function onNode(command: string, stdin = ""): Promise<RunResult> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
        // The SSH user's home (where script copies are staged) and the bundle store: the tier's own.
        const env = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ZCLOUD_ALLOW_LOOP: "1", ZCLOUD_SCRIPT_STORE: path.join(nodeHome, "store") };
        const child = spawn("/bin/sh", ["-c", command], { cwd: nodeHome, env, stdio: ["pipe", "pipe", "pipe"] });
        child.stdin.end(stdin);
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += String(d)));
        child.stderr.on("data", (d) => (stderr += String(d)));
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.on("error", reject);
        child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, stdout, stderr, ms: Date.now() - started });
        });
    });
}

/** The planned OSD container with its action word replaced (`run` -> `prepare`). */
function osdAction(c: PlannedContainer, action: string): PlannedContainer {
    assert.deepEqual(scriptArgv(c.command).slice(0, 2), ["/etc/zcloud/scripts/ceph-osd.sh", "run"], `${c.id}: the runner, <scripts volume>/ceph-osd.sh, the hashes, run ...`);
    return { ...c, command: [...c.command.slice(0, 6), action, ...c.command.slice(7)] };
}
/**
 * Health checks this single-host test cluster may show at the end: Ceph 20's reports of the CSI
 * user's AES-128 key (the monmap allows `aes` for it; docs/cephfs.md "Keys on Ceph 20"), nothing
 * else.
 */
const ALLOWED_HEALTH_CHECKS = new Set<string>(aesCsiKeyChecks);


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
/** The distinct `uid:gid` owners of a directory and everything in it. */
function owners(dir: string): string[] {
    const seen = new Set<string>();
    const walk = (p: string) => {
        const st = fs.lstatSync(p);
        seen.add(`${st.uid}:${st.gid}`);
        if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    };
    walk(dir);
    return [...seen].sort();
}

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
    let plan: CephPlan;
    /** The same storage grown to three hosts: mons b and c are added. */
    let grown: CephPlan;
    /** OSD workload names (= Deployment names) by device key. */
    const osdWorkload: Record<string, string> = {};

    /** A planned local command run as the command provider would (test/ceph/localCommand.ts), with this file's admin pod. */
    const runLocalCommand = (command: string, environment: Record<string, string> | undefined, from: CephPlan, prepare: (dir: string) => void = () => undefined) =>
        runPlannedLocalCommand(c, command, environment, from, ADMIN_POD, prepare);

    /**
     * Runs the planned delete of the drain resource of (device key, node) as the local command
     * would (runLocalCommand); returns the result and the kubectl argv it made: `local`, the
     * stub's read of the local script set (cephfs-osd-remove.sh's ConfigMap; undefined when it
     * made none), and `calls`, the others. `declared` is what the node's devices annotation holds
     * when the delete runs (the new config's list: Pulumi deletes last); undefined: the
     * annotation cannot be read. `tamper` edits the served ConfigMaps (<dir>/configmaps) first.
     */
    async function removeOsd(
        key: string,
        node: string,
        declared: string | undefined,
        edit: (del: string) => string = (d) => d,
        tamper: (dir: string) => void = () => undefined,
    ): Promise<{ r: RunResult; local?: string[]; calls: string[][] }> {
        const drain = plan.drain(node, devices[key]);
        const { r, calls } = await runLocalCommand(edit(drain.delete), drain.environment, plan, (dir) => {
            tamper(dir);
            if (declared !== undefined) fs.writeFileSync(path.join(dir, "nodes", node), declared);
            const pid = c.daemonPid(`osd.${key === "b" ? 1 : key === "c" ? 2 : 0}`);
            if (pid !== undefined) fs.writeFileSync(path.join(dir, "pods", osdWorkload[key]), String(pid));
        });
        const isLocalRead = (call: string[] | undefined) => call !== undefined && call.at(-1) === "jsonpath={.data.cephfs-osd-remove\\.sh}";
        assert.ok(!calls.slice(1).some(isLocalRead), "the stub reads the local set once, first");
        return isLocalRead(calls[0]) ? { r, local: calls[0], calls: calls.slice(1) } : { r, calls };
    }

    /** After a refused drain of osd.1: its daemon runs, no OSD was purged, its label is intact. */
    async function osd1Untouched(): Promise<void> {
        assert.ok(c.daemonPid("osd.1") !== undefined, "osd.1's daemon still runs");
        const tree = await c.cephJson<{ nodes: { id: number }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.map((n) => n.id).filter((id) => id >= 0).sort(), [0, 1, 2], "no OSD purged");
        ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]));
    }

    before(async () => {
        // A tier that cannot run fails (it never skips): say what is missing.
        const missing = missingPrerequisites();
        if (missing.length > 0) {
            throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
        }
        c = CephTestCluster.create();
        devices.a = c.loop("osd-a", 3072);
        devices.b = c.loop("osd-b", 3072);
        devices.c = c.loop("osd-c", 3072);
        devices.foreign = c.loop("foreign", 64);
        // The test host as two Kubernetes nodes (two crush hosts), and a wipe storage on a third.
        plan = await CephPlan.plan({
            storage: FS,
            hosts: { [NODE1]: [devices.a], [NODE2]: [devices.b, devices.c] },
            wipeStorage: WIPE_FS,
            wipeHosts: { [WIPE_NODE]: [devices.foreign] },
            kubeContext: CONTEXT,
        });
        grown = await CephPlan.plan({
            storage: FS,
            hosts: { [NODE1]: [devices.a], [NODE2]: [devices.b, devices.c], [NODE4]: ["/dev/disk/by-id/zc-tier-grown"] },
            wipeStorage: WIPE_FS,
            wipeHosts: { [WIPE_NODE]: [devices.foreign] },
            kubeContext: CONTEXT,
        });
        // What the engine does before any disk command: each node's script copy.
        const disks = [...Object.keys(plan.stack.hosts).map((n) => plan.disks(FS, n)), ...Object.keys(plan.stack.wipeHosts).map((n) => plan.disks(WIPE_FS, n))];
        await performCopies(onNode, disks.map((d) => d.copy));
        lap("setup: loop devices, plans (two hosts, grown to three)");
        const [wa, wb, wc] = c.osdWorkloadsOf(plan);
        Object.assign(osdWorkload, { a: wa, b: wb, c: wc });
        await c.boot(plan, Object.values(grown.monIps).filter((ip) => ip !== plan.monIp));
        lap("setup: keys, ceph.conf, namespace");
    });

    after(async () => {
        const started = Date.now();
        if (c) await c.stop();
        timings.push(["teardown", Date.now() - started]);
        const total = timings.reduce((s, [, ms]) => s + ms, 0);
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
        console.log(`  ${(total / 1000).toFixed(1).padStart(6)} s  total`);
    });

    it("mon init creates the store once, leaves an existing store untouched (but hands one of another uid to the ceph user), refuses another cluster's", async () => {
        // What the mon workload renders: the init's --mon is the Service ClusterIP that
        // ceph.conf's mon_host names; the daemon advertises it and binds the pod IP.
        const init = plan.container(`ceph-${FS}-mon-a`, "mon-init");
        assert.deepEqual(scriptArgv(init.command), ["/etc/zcloud/scripts/ceph-mon-init.sh", "--id", "a", "--mon", `a=${c.monIp}`, "--initial", "a", "--allow-aes-keys"]);
        const mon = plan.container(`ceph-${FS}-mon-a`, "mon");
        assert.deepEqual(mon.command, ["ceph-mon", "--foreground", "--id", "a", "--setuser", "ceph", "--setgroup", "ceph", `--public-addr=${c.monIp}`, "--public-bind-addr=$(POD_IP)"]);
        assert.deepEqual(mon.env.find((e) => e.name === "POD_IP"), { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } });
        for (const ct of [init, mon]) {
            assert.deepEqual(ct.env.filter((e) => e.name !== "POD_IP"), [
                { name: "CEPH_CONF", value: "/etc/ceph/ceph.conf" },
                { name: "ZCLOUD_CEPH_KEYS", value: "/etc/zcloud/ceph-keys" },
                { name: "ZCLOUD_CEPH_DATA", value: "/var/lib/ceph" },
            ]);
        }
        const first = ok(await c.container(init));
        assert.match(first.stdout, /^zcloud: mon\.a: created store at \/var\/lib\/ceph\/mon\/ceph-a for cluster /m);
        const store = path.join(c.dataDir, "mon", "ceph-a");
        const keyring = fs.readFileSync(path.join(store, "keyring"), "utf8");
        assert.doesNotMatch(keyring, /client\.admin/, "the store's keyring holds only the mon. key");
        const before = snapshot(store);

        const again = ok(await c.container(init));
        assert.deepEqual(decisions(again.stdout), ["zcloud: mon.a: store exists at /var/lib/ceph/mon/ceph-a; left untouched"]);
        assert.deepEqual(snapshot(store), before);

        // A store written under another uid (an image whose ceph user differs: Debian's 64045,
        // quay.io's 167) is handed to this image's ceph user; nothing else in it changes.
        const owner = `${fs.statSync(store).uid}:${fs.statSync(store).gid}`;
        assert.notEqual(owner, "0:0", "the store belongs to the ceph user");
        execFileSync("chown", ["-R", "4242:4243", store]);
        // a hand-over cut short: one file already the ceph user's
        fs.chownSync(path.join(store, "keyring"), Number(owner.split(":")[0]), Number(owner.split(":")[1]));
        const reowned = ok(await c.container(init));
        assert.deepEqual(decisions(reowned.stdout), [
            `zcloud: mon.a: store at /var/lib/ceph/mon/ceph-a was owned by 4242:4243, not by this image's ceph user (${owner}): handed to it`,
            "zcloud: mon.a: store exists at /var/lib/ceph/mon/ceph-a; left untouched but for its owner",
        ]);
        assert.deepEqual(snapshot(store), before);
        assert.deepEqual(owners(store), [owner]);
        const unchanged = ok(await c.container(init));
        assert.deepEqual(decisions(unchanged.stdout), ["zcloud: mon.a: store exists at /var/lib/ceph/mon/ceph-a; left untouched"]);

        const otherConf = path.join(c.tmp, "etc", "other.conf");
        c.writeConf(otherConf, "00000000-1111-2222-3333-444444444444");
        const foreign = await c.container(init, { env: { CEPH_CONF: otherConf } });
        assert.equal(foreign.code, 1, show(foreign));
        assert.match(foreign.stderr, /zcloud: mon\.a: refused: store .* belongs to cluster [0-9a-f-]+, not 00000000-/);
        assert.deepEqual(snapshot(store), before);

        // Grown to three hosts, mon b is not initial: with no listed mon answering (a is not
        // running yet) its planned init refuses after the bound, exit 3, and creates no store.
        const bInit = grown.container(`ceph-${FS}-mon-b`, "mon-init");
        const refused = await c.container(bInit, { env: { ZCLOUD_CEPH_TIMEOUT: "3" } });
        assert.equal(refused.code, 3, show(refused));
        assert.deepEqual(decisions(refused.stderr), ["zcloud: mon.b: refused: no quorum answered within 3s and this mon is not initial (a); no store created, retry later"]);
        assert.deepEqual(fs.readdirSync(path.join(c.dataDir, "mon")), ["ceph-a"]);
        // A new three-host storage: mon a (initial) finds no quorum and starts the cluster with
        // a monmap of a alone (b and c join it later); here on a data root of its own.
        const freshInit = grown.container(`ceph-${FS}-mon-a`, "mon-init");
        const fresh = ok(await c.container(freshInit, { env: { ZCLOUD_CEPH_TIMEOUT: "3", ZCLOUD_CEPH_DATA: "/var/lib/ceph/fresh3" } }));
        assert.deepEqual(decisions(fresh.stdout), [
            "zcloud: mon.a: no quorum answered within 3s; initial mon starts the cluster",
            `zcloud: mon.a: created store at /var/lib/ceph/fresh3/mon/ceph-a for cluster ${c.fsid} (initial monmap: a)`,
        ]);
        const freshMap = ok(await c.exec(["sh", "-c", 'ceph-mon --id a --mon-data "$1" --extract-monmap "$2" >/dev/null 2>&1 && monmaptool --print "$2"', "x", "/var/lib/ceph/fresh3/mon/ceph-a", path.join(c.tmp, "scratch", "fresh3.monmap")]));
        assert.deepEqual(freshMap.stdout.split("\n").filter((l) => / mon\./.test(l)), [`0: [v2:${c.monIp}:3300/0,v1:${c.monIp}:6789/0] mon.a`]);
        fs.rmSync(path.join(c.dataDir, "fresh3"), { recursive: true });

        c.cephDaemon("mon", c.monId);
        await waitFor("mon quorum", 60_000, async () => {
            const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]);
            return q.quorum_names.includes("a") ? true : undefined;
        });
        const monmap = await c.cephJson<{ mons: { name: string; public_addrs: { addrvec: { type: string; addr: string }[] } }[] }>(["mon", "dump"]);
        assert.deepEqual(monmap.mons.map((m) => [m.name, m.public_addrs.addrvec.map((a) => `${a.type}:${a.addr}`)]), [["a", [`v2:${c.monIp}:3300`, `v1:${c.monIp}:6789`]]]);
        lap("mon: init x3, mon b refused, fresh 3-host mon a, start, quorum");
    });

    it("keyrings: Secret keys imported, daemon keys created, idempotent, a changed key refused", async () => {
        // the filesystem Job's csi-user container and the mgr/mds keyring init containers
        const csi = plan.container(`${FS}-filesystem`, "csi-user");
        assert.deepEqual(scriptArgv(csi.command), ["/etc/zcloud/scripts/ceph-keyring.sh", "import", "client.csi", "csi", "--key-file", "/etc/zcloud/ceph-keys/csi", "--fs", FS]);
        const keyring = (type: "mgr" | "mds", id: string) => {
            const k = plan.container(`ceph-${FS}-${type}-${id}`, "keyring");
            assert.deepEqual(scriptArgv(k.command), ["/etc/zcloud/scripts/ceph-keyring.sh", "daemon", type, id]);
            return k;
        };
        const boot = ["import", "client.bootstrap-osd", "bootstrap-osd", "--key-file", c.keyFile("bootstrap-osd")];
        // bootstrap-osd came with the mon store (mkfs keyring); csi is new.
        assert.deepEqual(decisions(ok(await c.script("ceph-keyring", boot)).stdout), ["zcloud: client.bootstrap-osd: exists; caps match role bootstrap-osd"]);
        assert.match(ok(await c.container(csi)).stdout, /zcloud: client\.csi: created with the key from .* and role csi caps/);
        assert.match(ok(await c.container(keyring("mgr", "a"))).stdout, /zcloud: mgr\.a: created with role mgr caps\nzcloud: mgr\.a: keyring written to/);
        assert.match(ok(await c.container(keyring("mds", "a"))).stdout, /zcloud: mds\.a: created/);

        assert.deepEqual(decisions(ok(await c.container(csi)).stdout), ["zcloud: client.csi: exists; caps match role csi"]);
        assert.deepEqual(decisions(ok(await c.container(keyring("mgr", "a"))).stdout), [
            "zcloud: mgr.a: exists; caps match role mgr",
            "zcloud: mgr.a: keyring /var/lib/ceph/mgr/ceph-a/keyring in place",
        ]);

        // caps that drifted are set again
        ok(await c.ceph(["auth", "caps", "client.csi", "mon", "allow r"]));
        assert.deepEqual(decisions(ok(await c.container(csi)).stdout), ["zcloud: client.csi: exists; caps set to role csi"]);
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

    it("node disk commands pass clean devices; two OSD workloads prepare, activate and start under crush host <node>", async () => {
        // the planned `<storage>-<node>-disks` create, run on the host as root (it guards, never prepares)
        for (const [node, devs] of [[NODE1, [devices.a]], [NODE2, [devices.b, devices.c]]] as const) {
            const disks = plan.disks(FS, node);
            assert.equal(disks.update, disks.create);
            // the stub runs the cephfs-disks bundle: `cephfs-disks <staged> <sha256> apply ...`
            assert.match(disks.create, / cephfs-disks \S+ [0-9a-f]{64} apply /);
            assert.ok(disks.create.endsWith(` apply --node ${node} --fsid ${c.fsid} ${devs.join(" ")}`), disks.create.slice(-200));
            assert.ok(disks.delete.endsWith(` release --fsid ${c.fsid} ${devs.join(" ")}`), disks.delete.slice(-200));
            const r = ok(await onNode(disks.create));
            assert.equal(r.stderr, "");
            for (const dev of devs) {
                assert.ok(decisions(r.stdout).includes(`zcloud: ${dev}: ready for a new OSD`), r.stdout);
                assert.match(r.stdout, new RegExp(`^zcloud-device: ${dev} \\S+$`, "m"));
            }
        }

        // the planned OSD workloads: sh -c '<scripts>' ceph-osd run --device <dev> --host <node>
        for (const [k, node] of [["a", NODE1], ["b", NODE2], ["c", NODE2]]) {
            const osd = plan.container(osdWorkload[k], "osd");
            assert.deepEqual(scriptArgv(osd.command), ["/etc/zcloud/scripts/ceph-osd.sh", "run", "--device", devices[k], "--host", node]);
            const keyDir = c.containerEnv(osd).ZCLOUD_CEPH_KEYS;
            assert.deepEqual(fs.readdirSync(keyDir), ["bootstrap-osd"], "the OSD gets the bootstrap-osd key only");
            assert.equal(fs.readFileSync(path.join(keyDir, "bootstrap-osd"), "utf8").trim(), c.key("bootstrap-osd"));
        }
        c.osdDaemon("osd.0", osdWorkload.a);
        // one at a time: ids follow the order, and the machine has two cores
        await waitFor("osd.0 up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds >= 1 ? true : undefined));
        c.osdDaemon("osd.1", osdWorkload.b);
        await waitFor("2 OSDs up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        for (const [name, dev, node] of [["osd.0", devices.a, NODE1], ["osd.1", devices.b, NODE2]]) {
            const log = c.daemonLog(name);
            assert.match(log, new RegExp(`zcloud: ${dev}: clean device; preparing a new OSD`));
            assert.match(log, new RegExp(`zcloud-osd: ${dev} ${name.slice(4)} [0-9a-f-]{36}`));
            assert.match(log, new RegExp(`zcloud: ${name}: starting the daemon \\(crush location root=default host=${node}\\)`));
        }
        osd0Uuid = /zcloud-osd: \S+ 0 (\S+)/.exec(c.daemonLog("osd.0"))![1];
        const tree = await c.cephJson<{ nodes: { name: string; type: string; children?: number[] }[] }>(["osd", "tree"]);
        const hosts = Object.fromEntries(tree.nodes.filter((n) => n.type === "host").map((n) => [n.name, [...(n.children ?? [])].sort()]));
        assert.deepEqual(hosts, { [NODE1]: [0], [NODE2]: [1] });

        // a device carrying this cluster's real OSD label passes the disk command untouched
        const again = ok(await onNode(plan.disks(FS, NODE1).create));
        assert.deepEqual(decisions(again.stdout), [
            `zcloud: ${devices.a}: already osd.0 of this cluster; left as it is`,
            `zcloud: ${devices.a}: no /dev/disk/by-id name, using ${devices.a}`,
        ]);
        ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.a]));
        lap("disk commands; OSDs: prepare + activate + start two");
    });

    it("fs: pools sized by hosts, the file system and the csi subvolume group; a re-run changes nothing", async () => {
        // replicas above the host count are refused before anything is created
        const tooMany = await c.script("ceph-fs", ["apply", "--fs", FS, "--hosts", "1", "--replicas", "2"]);
        assert.equal(tooMany.code, 1, show(tooMany));
        assert.match(tooMany.stderr, /zcloud: shared-fs: refused: replicas 2 exceed the 1 host\(s\)/);

        // the filesystem Job: init container ceph-fs.sh apply, then the csi-user container
        const job = plan.container(`${FS}-filesystem`, "filesystem");
        assert.deepEqual(scriptArgv(job.command), ["/etc/zcloud/scripts/ceph-fs.sh", "apply", "--fs", FS, "--hosts", "2", "--replicas", "2"]);
        const first = ok(await c.container(job, { timeoutMs: 240_000 }));
        // the manager's pool `.mgr`, once the mgr made it, is sized like the storage's (ceph.conf's default made it so already)
        const mgrPool = (text: string) => decisions(text).filter((l) => l.startsWith("zcloud: pool .mgr: "));
        assert.ok([[], ["zcloud: pool .mgr: size is 2", "zcloud: pool .mgr: min_size is 1"]].some((x) => JSON.stringify(x) === JSON.stringify(mgrPool(first.stdout))), first.stdout);
        assert.deepEqual(decisions(first.stdout).filter((l) => !l.startsWith("zcloud: pool .mgr: ")), [
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
        assert.deepEqual(decisions(ok(await c.container(plan.container(`${FS}-filesystem`, "csi-user"))).stdout), ["zcloud: client.csi: exists; caps match role csi"]);
        // the Job re-runs (host count changed, pod retried): nothing changes
        const again = ok(await c.container(job));
        for (const line of decisions(again.stdout)) assert.doesNotMatch(line, /created|set to/, line);
        assert.ok(decisions(again.stdout).includes("zcloud: shared-fs: subvolume group csi exists"), again.stdout);

        const fsls = await c.cephJson<{ name: string; metadata_pool: string; data_pools: string[] }[]>(["fs", "ls"]);
        assert.deepEqual(fsls, [{ ...fsls[0], name: FS, metadata_pool: `${FS}-metadata`, data_pools: [`${FS}-data`] }]);
        const groups = await c.cephJson<{ name: string }[]>(["fs", "subvolumegroup", "ls", FS]);
        assert.deepEqual(groups.map((g) => g.name), ["csi"]);

        const health = await waitFor("only the AES-128 CSI key's checks", 180_000, async () => {
            const h = await c.cephJson<{ status: string; checks: Record<string, unknown> }>(["health"]);
            return Object.keys(h.checks).sort().join() === aesCsiKeyChecks.join() ? h : undefined;
        }, 2000);
        assert.equal(health.status, "HEALTH_WARN");
        lap("fs: refusal, apply, re-run, HEALTH_WARN of the AES-128 CSI key only");
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
        // the OSD workload's command with `prepare` for `run`
        const r = ok(await c.container(osdAction(plan.container(osdWorkload.a, "osd"), "prepare")));
        assert.deepEqual(decisions(r.stdout), [
            `zcloud: ${devices.a}: already osd.0 of this cluster (uuid ${osd0Uuid}); activating, not preparing`,
            `zcloud: ${devices.a}: activated osd.0 at /var/lib/ceph/osd/ceph-0`,
        ]);
        assert.match(r.stdout, new RegExp(`^zcloud-osd: ${devices.a} 0 ${osd0Uuid}$`, "m"));
        fs.renameSync(path.join(c.tmp, "log", "osd.0.out"), path.join(c.tmp, "log", "osd.0-first.out"));
        c.osdDaemon("osd.0", osdWorkload.a);
        await waitFor("osd.0 up again", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        assert.match(c.daemonLog("osd.0"), /already osd\.0 of this cluster/);
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("OSD restart: prepare re-run activates");
    });

    it("a device path renamed (another name of one disk): the new path's workload waits for the disk, the old path's drain keeps the OSD (same id, uuid, data); two names of one disk are refused", async () => {
        const alias = `/dev/zc-tier-${process.pid}-osd-a`;
        fs.symlinkSync(devices.a, alias);
        try {
            const renamed = await CephPlan.plan({ ...plan.stack, hosts: { ...plan.stack.hosts, [NODE1]: [alias] } });
            // a new OSD workload and drain for the new path; the old path's are deleted (last)
            const newWorkload = c.osdWorkloadsOf(renamed)[0];
            const changes = diffPlans(plan.run.resources, renamed.run.resources).map((ch) => `${ch.kind} ${ch.resource.name}`).sort();
            assert.deepEqual(
                changes,
                [
                    `create ${newWorkload}`,
                    `create ${FS}-${NODE1}-osd-${deviceSlug(alias)}-drain`,
                    // and its prepare Job, which finds the disk's OSD and prepares nothing (docs/cephfs.md "Creation")
                    `create ${FS}-${NODE1}-osd-${deviceSlug(alias)}-prepare`,
                    `delete ${osdWorkload.a}`,
                    `delete ${FS}-${NODE1}-osd-${deviceSlug(devices.a)}-drain`,
                    `delete ${FS}-${NODE1}-osd-${deviceSlug(devices.a)}-prepare`,
                    `update ${FS}-${NODE1}-disks`,
                    `update ${FS}-${NODE1}-label`,
                    // the host's gates guard its OSDs' templates: they run again around the change
                    // (and roll-start, which guards every daemon)
                    `update ${FS}-gate-${NODE1}-ok-to-stop`,
                    `update ${FS}-gate-${NODE1}-osd-up`,
                    `update ${FS}-gate-noout-set`,
                    `update ${FS}-gate-noout-unset`,
                    `update ${FS}-gate-roll-start`,
                ].sort(),
            );
            // the node's disk command: the disk already is osd.0 of this cluster
            const disks = ok(await onNode(renamed.disks(FS, NODE1).create));
            assert.ok(decisions(disks.stdout).includes(`zcloud: ${alias}: already osd.0 of this cluster; left as it is`), disks.stdout);
            // two names of one disk in one list: refused, naming both, nothing done
            const both = await onNode(withDevices(plan.disks(FS, NODE1).create, [devices.a], [devices.a, alias]));
            assert.equal(both.code, 1, show(both));
            assert.equal(both.stderr, `zcloud: ${alias}: refused: is the same disk as ${devices.a} (both resolve to ${devices.a}); list each disk once\n`);
            assert.equal(both.stdout, "");

            // Pulumi creates the new Deployment before it deletes the old one: its pod (a mount
            // namespace of its own without the old pod's OSD mount, its own emptyDir and run
            // dir, as a pod has) activates osd.0 from the label, then ceph-osd cannot
            // open the block device the running osd.0 holds open exclusively (EBUSY) and exits;
            // osd.0 stays up.
            const newOsd = renamed.container(newWorkload, "osd");
            const argv = c.containerArgv(newOsd);
            const podOwn = [
                `for m in $(awk '$2 ~ "^/var/lib/ceph/osd/" { print $2 }' /proc/mounts); do umount -l "$m"; done`,
                'mount -t tmpfs pod-osd-data /var/lib/ceph/osd && mount -t tmpfs pod-run "$0" && exec "$@"',
            ].join("; ");
            const waiting = c.daemon("osd.0-new-pod", ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", podOwn, path.join(c.tmp, "run"), "/bin/sh", ...argv.slice(1)], c.containerEnv(newOsd));
            const exit = await new Promise<number | null>((resolve) => {
                const timer = setTimeout(() => waiting.kill("SIGKILL"), 120_000);
                waiting.once("exit", (code) => {
                    clearTimeout(timer);
                    resolve(code);
                });
            });
            const waitLog = c.daemonLog("osd.0-new-pod");
            assert.notEqual(exit, 0, waitLog);
            assert.match(waitLog, new RegExp(`zcloud: ${alias}: already osd\\.0 of this cluster \\(uuid ${osd0Uuid}\\); activating, not preparing`));
            // Which of BlueStore's two exclusive holds refuses first depends on timing (seen under
            // load): the block device's exclusive open (EBUSY) or the fsid file's lock (EAGAIN); and
            // ceph-osd, exiting at once, does not always flush its log (seen 2 of 6 runs at 20.2.4; once
            // only its start-up lines):
            // what it printed, if anything, is one of those refusals.
            // (Its start-up lines, which it flushes first, say nothing either way: left out.)
            const startUp = / set uid:gid to | ceph version \d| pidfile_write: /;
            const daemonSaid = waitLog.slice(waitLog.indexOf("zcloud: osd.0: starting the daemon")).split("\n").slice(1).filter((l) => !startUp.test(l)).join("\n").trim();
            if (daemonSaid !== "") {
                assert.match(daemonSaid, /bdev\(.*\/var\/lib\/ceph\/osd\/ceph-0\/block\) open open got: \(16\) Device or resource busy|_lock_fsid failed to lock .*is another ceph-osd still running/, waitLog);
            }
            assert.ok(c.daemonPid("osd.0") !== undefined, "the old pod's osd.0 still runs");
            assert.equal((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds, 2);

            // then the old path's drain (its delete runs after the label holds the new list):
            // the disk is still declared, as the alias, so osd.0 is kept: not out, not purged
            const kept = await removeOsd("a", NODE1, alias);
            assert.deepEqual(decisions(ok(kept.r).stdout), [
                `zcloud: cluster ${c.fsid}: the admin pod's ceph.conf and the cluster it reaches are this storage's`,
                `zcloud: ${devices.a}: kept osd.0: same disk is declared as ${alias}`,
            ]);
            assert.equal(kept.r.stderr, "");
            assert.deepEqual(kept.calls.map((call) => call[4]), ["get", "get", "get", "exec", "get", "exec"], "library, script set, admin pod, cluster check, annotation, label: no drain, scale, purge or zap");
            assert.deepEqual(kept.calls[5].slice(-4), ["cephfs-osd-id", devices.a, c.fsid, alias]);
            const dump = await c.cephJson<{ osds: { osd: number; up: number; in: number }[] }>(["osd", "dump"]);
            assert.deepEqual(dump.osds.map((o) => `osd.${o.osd} up=${o.up} in=${o.in}`), ["osd.0 up=1 in=1", "osd.1 up=1 in=1"]);
            ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.a]));

            // the old Deployment is deleted; the new pod's next restart activates the same OSD
            await c.stopDaemon("osd.0");
            fs.renameSync(path.join(c.tmp, "log", "osd.0.out"), path.join(c.tmp, "log", "osd.0-before-rename.out"));
            c.containerDaemon("osd.0", newOsd);
            await waitFor("osd.0 up after the rename", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
            assert.match(c.daemonLog("osd.0"), new RegExp(`zcloud: ${alias}: already osd\\.0 of this cluster \\(uuid ${osd0Uuid}\\); activating, not preparing`));
            assert.match(c.daemonLog("osd.0"), new RegExp(`^zcloud-osd: ${alias} 0 ${osd0Uuid}$`, "m"));
            const tree = await c.cephJson<{ nodes: { id: number }[] }>(["osd", "tree"]);
            assert.deepEqual(tree.nodes.map((n) => n.id).filter((id) => id >= 0).sort(), [0, 1], "no new OSD");
            assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        } finally {
            fs.rmSync(alias, { force: true });
        }
        lap("rename: new pod waits for the busy disk, old drain keeps osd.0; two names refused");
    });

    it("a device of another cluster, or with a filesystem, is refused and left untouched", async () => {
        // a bluestore label from another cluster: this cluster's label with a foreign fsid
        ok(await c.exec(["dd", `if=${devices.a}`, `of=${devices.foreign}`, "bs=4096", "count=1", "conv=fsync", "status=none"]));
        const otherFsid = "11111111-2222-3333-4444-555555555555";
        ok(await c.exec(["ceph-bluestore-tool", "set-label-key", "--dev", devices.foreign, "-k", "ceph_fsid", "-v", otherFsid]));
        const r = await c.script("ceph-osd", ["prepare", "--device", devices.foreign, "--host", NODE1]);
        assert.equal(r.code, 1, show(r));
        assert.match(r.stderr, new RegExp(`zcloud: ${devices.foreign}: refused: carries an OSD of another Ceph cluster \\(fsid ${otherFsid}, osd\\.0\\)`));
        const zap = await c.script("ceph-osd-drain", ["zap", "--device", devices.foreign, "--fsid", c.fsid]);
        assert.equal(zap.code, 1, show(zap));
        assert.match(zap.stderr, /refused: carries an OSD of another Ceph cluster/);
        // the node disk command (node 1's, device swapped) and the wipe storage's own refuse it too
        const disks1 = (devs: string[]) => withDevices(plan.disks(FS, NODE1).create, [devices.a], devs);
        const wipeDisks = plan.disks(WIPE_FS, WIPE_NODE).create;
        assert.ok(wipeDisks.includes(` apply --node ${WIPE_NODE} --wipe-on-create --fsid `), "wipe: true renders --wipe-on-create");
        for (const cmd of [disks1([devices.foreign]), disks1([devices.foreign, devices.a]), wipeDisks]) {
            const d = await onNode(cmd);
            assert.equal(d.code, 1, show(d));
            assert.match(d.stderr, new RegExp(`^zcloud: ${devices.foreign}: refused: carries an OSD of another Ceph cluster \\(fsid ${otherFsid}\\); not touching it$`, "m"));
            assert.equal(d.stdout, "", "nothing decided before every device passed");
        }
        const label = ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.foreign]));
        assert.match(label.stdout, new RegExp(`"ceph_fsid": "${otherFsid}"`), "label untouched");

        ok(await c.exec(["wipefs", "-a", "-q", devices.foreign]));
        ok(await c.exec(["mkfs.ext4", "-q", devices.foreign]));
        const ext4 = await c.script("ceph-osd", ["prepare", "--device", devices.foreign, "--host", NODE1]);
        assert.equal(ext4.code, 1, show(ext4));
        assert.match(ext4.stderr, /refused: carries signatures \(ext4\)/);
        const ext4Disks = await onNode(disks1([devices.foreign]));
        assert.equal(ext4Disks.code, 1, show(ext4Disks));
        assert.match(ext4Disks.stderr, new RegExp(`zcloud: ${devices.foreign}: refused: .*ext4`));
        assert.equal(ok(await c.exec(["blkid", "-o", "value", "-s", "TYPE", devices.foreign])).stdout.trim(), "ext4");
        // unless the storage says wipe: the wipe storage's disk command erases the signature
        const wiped = ok(await onNode(wipeDisks));
        assert.ok(decisions(wiped.stdout).includes(`zcloud: ${devices.foreign}: ready for a new OSD`), wiped.stdout);
        assert.equal((await c.exec(["blkid", "-o", "value", "-s", "TYPE", devices.foreign])).stdout.trim(), "");
        lap("refusals: foreign fsid, ext4 (OSD script and disk commands); wipe");
    });

    it("drain refuses to take out an OSD whose data has nowhere to go; zap and purge refuse too", async () => {
        // two OSDs, two replicas: without osd.1 no pool fits
        const r = await c.script("ceph-osd-drain", ["drain", "--id", "1", "--timeout", "8", "--fsid", c.fsid]);
        assert.equal(r.code, 1, show(r));
        assert.match(r.stderr, /zcloud: osd\.1: refused: draining it would leave pools without room for their replicas \(.*shared-fs-data needs 2 hosts, 1 would remain.*\); add capacity or lower replicas first - not marked out/);
        const dump = await c.cephJson<{ osds: { osd: number; in: number }[] }>(["osd", "dump"]);
        assert.equal(dump.osds.find((o) => o.osd === 1)?.in, 1, "osd.1 is still in");

        const zap = await c.script("ceph-osd-drain", ["zap", "--device", devices.b, "--fsid", c.fsid]);
        assert.equal(zap.code, 1, show(zap));
        assert.match(zap.stderr, /zcloud: .*: refused: osd\.1 still exists in this cluster; drain and purge it before zapping/);
        const purge = await c.script("ceph-osd-drain", ["purge", "--id", "1", "--timeout", "3", "--fsid", c.fsid]);
        assert.equal(purge.code, 3, show(purge));
        assert.match(purge.stderr, /zcloud: osd\.1: refused: still up after 3s; stop its daemon before purging/);
        ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]));
        // the node leaving (its disk command's delete) is refused while osd.1 is on its device
        const release = await onNode(plan.disks(FS, NODE2).delete);
        assert.equal(release.code, 1, show(release));
        assert.equal(release.stderr, `zcloud: ${devices.b}: refused: still holds osd.1 of this cluster; its drain (mark out, wait, purge, zap) has not finished\n`);
        assert.deepEqual(decisions(release.stdout), [`zcloud: ${devices.c}: holds no OSD of this cluster; released`]);
        ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]));
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("drain/zap/purge/release refusals");
    });

    it("with a third OSD the drain moves the data (bounded while held back): out, safe, stop, purge, zap; the file stays readable", async () => {
        c.osdDaemon("osd.2", osdWorkload.c);
        await waitFor("3 OSDs up", 120_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 3 ? true : undefined));

        // data that cannot move yet (backfill held back): the wait is bounded and says why
        for (const flag of ["nobackfill", "norecover", "norebalance"]) ok(await c.ceph(["osd", "set", flag]));
        const held = await c.script("ceph-osd-drain", ["drain", "--id", "1", "--timeout", "8", "--fsid", c.fsid]);
        assert.equal(held.code, 3, show(held));
        assert.deepEqual(decisions(held.stdout), ["zcloud: osd.1: marked out; its placement groups move to other OSDs", "zcloud: osd.1: waiting up to 8s for safe-to-destroy (data moved off it)"]);
        assert.match(held.stderr, /zcloud: osd\.1: refused: not safe to destroy after 8s: .*(pgs currently mapped|not active\+clean|still reports \d+ placement groups).* it stays out and nothing was destroyed/);
        assert.ok(held.ms < 40_000, `bounded: took ${held.ms} ms`);
        for (const flag of ["nobackfill", "norecover", "norebalance"]) ok(await c.ceph(["osd", "unset", flag]));

        // The planned delete of osd.1's drain resource, run where `pulumi up` runs, with a
        // kubectl that plays the API server (fake-kubectl.sh): `exec` runs in the cluster's
        // namespace with the admin container's env; scale/wait stop the OSD workload's daemon.
        // Before: keep osd.1's label block to put back later (stand-in for the copies below).
        const labelBlock = path.join(c.tmp, "scratch", "osd1-label");
        ok(await c.exec(["dd", `if=${devices.b}`, `of=${labelBlock}`, "bs=4096", "count=1", "status=none"]));
        // Ceph 20 keeps a copy of the label at 1 GiB on this 3 GiB device (what zap must clear too)
        const osd1Label = JSON.parse(ok(await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b])).stdout)[devices.b];
        assert.deepEqual(osd1Label.locations, ["0x0", "0x40000000"]);
        // bound to its cluster: the same delete carrying another fsid refuses in the admin pod
        // before reading the label, and changes nothing
        const otherFsid = "00000000-0000-4000-8000-000000000000";
        const wrong = await removeOsd("b", NODE2, devices.c, (d) => d.replace(` --fsid ${c.fsid} `, ` --fsid ${otherFsid} `));
        assert.equal(wrong.r.code, 1, show(wrong.r));
        assert.deepEqual(decisions(wrong.r.stderr), [
            `zcloud: cluster ${otherFsid}: refused: the admin pod's ceph.conf is of cluster ${c.fsid}, not this storage's cluster ${otherFsid}; nothing was changed`,
            `zcloud: ${NODE2} ${devices.b}: refused: the admin pod on ${NODE2} is not of this storage's cluster ${otherFsid} (see above); nothing was drained or deleted`,
        ]);
        assert.equal(wrong.calls.length, 4, "the library, the script set, get pods and the cluster check only");
        await osd1Untouched();
        // without the provider's context (or kubeconfig) the drain cannot know the cluster
        const unknown = await removeOsd("b", NODE2, devices.c, (d) => d.replace(` --context ${CONTEXT}`, ""));
        assert.equal(unknown.r.code, 1, show(unknown.r));
        assert.match(unknown.r.stderr, /refused: cannot tell which Kubernetes cluster the stack's provider uses/);
        assert.equal(unknown.r.stderr, "zcloud: cephfs-osd-remove: refused: cannot tell which Kubernetes cluster the stack's provider uses (neither kubernetes:context nor kubernetes:kubeconfig is set); nothing was run\n");
        assert.equal(unknown.local, undefined);
        assert.equal(unknown.calls.length, 0, "no kubectl call at all");
        // the drain's local set (its stub reads cephfs-osd-remove.sh from it) is gone: the delete
        // fails loudly before anything else is asked, never skips the drain
        const localSet = cephScriptSetName(FS, "cephfs-osd-remove.sh");
        assert.ok(plan.drain(NODE2, devices.b).delete.includes(`' cephfs-osd-remove ${localSet} `));
        const noLocal = await removeOsd("b", NODE2, devices.c, (d) => d.replace(`' cephfs-osd-remove ${localSet} `, "' cephfs-osd-remove ceph-x-scripts-cephfs-osd-remove-000000000000 "));
        assert.equal(noLocal.r.code, 1, show(noLocal.r));
        assert.equal(
            noLocal.r.stderr,
            'Error from server (NotFound): configmaps "ceph-x-scripts-cephfs-osd-remove-000000000000" not found\nzcloud: cephfs-osd-remove: refused: cannot read its script set, ConfigMap ceph-x-scripts-cephfs-osd-remove-000000000000 (see above); nothing was run\n',
        );
        assert.deepEqual(noLocal.local, ["--context", CONTEXT, "--namespace", "zcloud-storage", "get", "configmap", "ceph-x-scripts-cephfs-osd-remove-000000000000", "--output", "jsonpath={.data.cephfs-osd-remove\\.sh}"]);
        assert.deepEqual(noLocal.calls, []);
        await osd1Untouched();
        // the drain's script set is gone from the cluster: the delete fails, nothing else is asked
        const missingSet = "ceph-x-scripts-osd-drain-000000000000";
        assert.match(plan.drain(NODE2, devices.b).delete, / --script-configmap \S+ --library-configmap \S+ --context \S+$/);
        const missing = await removeOsd("b", NODE2, devices.c, (d) => d.replace(/ --script-configmap \S+( --library-configmap \S+ --context \S+)$/, ` --script-configmap ${missingSet}$1`));
        assert.equal(missing.r.code, 1, show(missing.r));
        assert.equal(
            missing.r.stderr,
            `Error from server (NotFound): configmaps "${missingSet}" not found\nzcloud: ${NODE2} ${devices.b}: refused: cannot read the drain's script set, ConfigMap ${missingSet} (see above); nothing was drained or deleted\n`,
        );
        assert.deepEqual(missing.calls.map((call) => call.slice(4, 6)), [["get", "configmap"], ["get", "configmap"]]);
        await osd1Untouched();
        // the storage's shared library is gone, or altered (its text no longer the id its name
        // ends with): the delete fails, nothing else is asked
        const missingLibrary = "ceph-x-scripts-library-000000000000";
        const noLibrary = await removeOsd("b", NODE2, devices.c, (d) => d.replace(/ --library-configmap \S+( --context \S+)$/, ` --library-configmap ${missingLibrary}$1`));
        assert.equal(noLibrary.r.code, 1, show(noLibrary.r));
        assert.equal(
            noLibrary.r.stderr,
            `Error from server (NotFound): configmaps "${missingLibrary}" not found\nzcloud: ${NODE2} ${devices.b}: refused: cannot read the drain's library script set, ConfigMap ${missingLibrary} (see above); nothing was drained or deleted\n`,
        );
        assert.deepEqual(noLibrary.calls.map((call) => call.slice(4, 6)), [["get", "configmap"]]);
        const librarySet = / --library-configmap (\S+) --context \S+$/.exec(plan.drain(NODE2, devices.b).delete)![1];
        const altered = await removeOsd("b", NODE2, devices.c, (d) => d, (dir) => fs.appendFileSync(path.join(dir, "configmaps", librarySet, "ceph-library.sh"), "zc_log altered\n"));
        assert.equal(altered.r.code, 1, show(altered.r));
        assert.equal(
            altered.r.stderr,
            `zcloud: ${NODE2} ${devices.b}: refused: ConfigMap ${librarySet} does not hold the drain's library script set ${librarySet.slice(-12)} (altered); nothing was drained or deleted\n`,
        );
        assert.deepEqual(altered.calls.map((call) => call.slice(4, 6)), [["get", "configmap"], ["get", "configmap"]]);
        await osd1Untouched();
        // the node's devices annotation cannot be read (or is empty): a renamed disk cannot be
        // told from a removed one, so nothing is drained
        const subject = `zcloud: ${NODE2} ${devices.b}: `;
        for (const [declared, reason] of [
            [undefined, `cannot read annotation storage.zcloud.io/cephfs-devices of node ${NODE2} (see above)`],
            ["", `node ${NODE2} has no annotation storage.zcloud.io/cephfs-devices`],
        ] as const) {
            const blind = await removeOsd("b", NODE2, declared);
            assert.equal(blind.r.code, 1, show(blind.r));
            assert.equal(
                blind.r.stderr.split("\n").filter((l) => l.startsWith(subject)).join("\n"),
                `${subject}refused: ${reason}, so cannot tell whether ${devices.b} is still declared under another name; nothing was drained or deleted`,
            );
            assert.deepEqual(blind.calls.map((call) => call[4]), ["get", "get", "get", "exec", "get"], "library, script set, admin pod, cluster check, node annotation; nothing after");
            assert.deepEqual(blind.calls[4].slice(4), ["get", "node", NODE2, "--output", "jsonpath={.metadata.annotations.storage\\.zcloud\\.io/cephfs-devices}"]);
        }
        await osd1Untouched();

        // osd.1's device (the first of node 2's two) is removed from the config: the annotation
        // now lists only the other device; exactly osd.1 is drained, osd.2 on that node stays
        const removal = await removeOsd("b", NODE2, devices.c);
        const out = ok(removal.r).stdout;
        const osd1 = decisions(out).filter((l) => l.startsWith("zcloud: osd.1: "));
        assert.equal(osd1[0], "zcloud: osd.1: already out");
        assert.ok(osd1.includes("zcloud: osd.1: safe to destroy; stop its daemon, then purge"), out);
        assert.deepEqual(osd1.filter((l) => /purged/.test(l)), ["zcloud: osd.1: purged (osdmap, crush and auth entries removed)"]);
        assert.deepEqual(decisions(out).filter((l) => l.startsWith(subject)), [
            `${subject}holds osd.1; draining before its workload is deleted`,
            `${subject}osd.1 workload ${osdWorkload.b} scaled to 0`,
            `${subject}osd.1 drained, purged and zapped`,
        ]);
        assert.match(out, new RegExp(`zcloud: ${devices.b}: zapped \\(label of purged osd\\.1, uuid [0-9a-f-]{36}, erased\\)`));
        assert.equal(c.daemonPid("osd.1"), undefined, "osd.1's daemon is gone");
        // the kubectl calls the drain made, as rendered
        const admin = plan.resource(`ceph-${FS}-admin`, "kubernetes:apps/v1:DaemonSet").inputs as { spec: { selector: { matchLabels: Record<string, string> } } };
        const adminSelector = Object.entries(admin.spec.selector.matchLabels).map(([k, v]) => `${k}=${v}`).join(",");
        const ctx = ["--context", CONTEXT, "--namespace", "zcloud-storage"];
        // the last arguments (the script's own usage text names the flag too)
        const drainSet = / --script-configmap (\S+) --library-configmap \S+ --context \S+$/.exec(plan.drain(NODE2, devices.b).delete)![1];
        assert.deepEqual(removal.local, [...ctx, "get", "configmap", localSet, "--output", "jsonpath={.data.cephfs-osd-remove\\.sh}"]);
        assert.deepEqual(removal.calls[0], [...ctx, "get", "configmap", librarySet, "--output", "jsonpath={.data.ceph-library\\.sh}"]);
        assert.deepEqual(removal.calls[1], [...ctx, "get", "configmap", drainSet, "--output", "jsonpath={.data.ceph-osd-drain\\.sh}"]);
        const calls = removal.calls.slice(2);
        const sorted = (sel: string) => sel.split(",").sort().join(",");
        assert.deepEqual([...calls[0].slice(0, 7), sorted(calls[0][7]), ...calls[0].slice(8)], [...ctx, "get", "pods", "--selector", sorted(adminSelector), "--field-selector", `spec.nodeName=${NODE2},status.phase=Running`, "--output", "jsonpath={.items[0].metadata.name}"]);
        // the library, then the set: each read with $(kubectl get ...), which drops the final newline
        const drainScript = plan.scriptSets[librarySet]["ceph-library.sh"] + plan.scriptSets[drainSet]["ceph-osd-drain.sh"];
        const inPod = (...args: string[]) => [...ctx, "exec", ADMIN_POD, "--", "sh", "-c", drainScript.replace(/\n+$/, ""), "ceph-osd-drain", ...args, "--fsid", c.fsid];
        assert.deepEqual(calls[1], inPod("check"));
        assert.deepEqual(calls[2], [...ctx, "get", "node", NODE2, "--output", "jsonpath={.metadata.annotations.storage\\.zcloud\\.io/cephfs-devices}"]);
        assert.deepEqual(calls[3].slice(0, 7), [...ctx, "exec", ADMIN_POD, "--"]);
        assert.deepEqual(calls[3].slice(calls[3].length - 4), ["cephfs-osd-id", devices.b, c.fsid, devices.c]);
        assert.deepEqual(calls.slice(4), [
            inPod("drain", "--id", "1", "--timeout", "600"),
            [...ctx, "get", "deployment", osdWorkload.b, "--ignore-not-found", "--output", "name"],
            [...ctx, "scale", "deployment", osdWorkload.b, "--replicas=0"],
            [...ctx, "wait", "--for=delete", "pod", "--selector", `storage.zcloud.io/ceph-osd=${osdWorkload.b}`, "--timeout", "600s"],
            inPod("purge", "--id", "1", "--timeout", "600"),
            inPod("zap", "--device", devices.b),
        ]);
        assert.equal(drainScript.replace(/\n+$/, ""), cephScriptText("ceph-osd-drain.sh"));
        let label = await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]);
        assert.notEqual(label.code, 0, "no bluestore label left");

        // with the old label put back and a stand-in copy at 1 GiB, zap (the drain script the
        // plan ships) clears both
        ok(await c.exec(["dd", `if=${labelBlock}`, `of=${devices.b}`, "bs=4096", "count=1", "conv=notrunc,fsync", "status=none"]));
        ok(await c.exec(["dd", "if=/dev/urandom", `of=${devices.b}`, "bs=4096", "seek=262144", "count=1", "conv=notrunc", "status=none"]));
        const inAdmin = (...args: string[]) => c.exec(["/bin/sh", "-c", drainScript, "ceph-osd-drain", ...args, "--fsid", c.fsid], { record: true });
        const zap = ok(await inAdmin("zap", "--device", devices.b));
        assert.match(zap.stdout, new RegExp(`zcloud: ${devices.b}: zapped \\(label of purged osd\\.1, uuid [0-9a-f-]{36}, erased\\)`));
        label = await c.exec(["ceph-bluestore-tool", "show-label", "--dev", devices.b]);
        assert.notEqual(label.code, 0, "no bluestore label left");
        // where BlueStore keeps a label copy (1 GiB on this 3 GiB device): zeroed as well
        const copy = ok(await c.exec(["sh", "-c", 'dd if="$1" bs=4096 skip=262144 count=1 status=none | od -An -v -tx1 | tr -d " \n0"', "read", devices.b]));
        assert.equal(copy.stdout, "", "4 KiB at 1 GiB are zero");
        // re-runs are no-ops: the scripts, and the whole planned drain again
        assert.deepEqual(decisions(ok(await inAdmin("purge", "--id", "1")).stdout), ["zcloud: osd.1: already purged"]);
        assert.deepEqual(decisions(ok(await inAdmin("zap", "--device", devices.b)).stdout), [`zcloud: ${devices.b}: no bluestore label; nothing to zap`]);
        const rerun = await removeOsd("b", NODE2, devices.c);
        assert.deepEqual(decisions(ok(rerun.r).stdout), [
            `zcloud: cluster ${c.fsid}: the admin pod's ceph.conf and the cluster it reaches are this storage's`,
            `${subject}no bluestore label on the device; nothing to drain`,
        ]);
        // a label that cannot be read fails the delete: an OSD is never deleted undrained
        ok(await c.exec(["sh", "-c", 'printf "bluestore block device\\nnot-a-uuid\\n" | dd of="$1" bs=4096 conv=sync,notrunc status=none', "garble", devices.b]));
        const unreadable = await removeOsd("b", NODE2, devices.c);
        assert.equal(unreadable.r.code, 1, show(unreadable.r));
        assert.match(unreadable.r.stderr, new RegExp(`${devices.b} has a bluestore label that ceph-bluestore-tool cannot read`));
        assert.match(unreadable.r.stderr, new RegExp(`^${subject}refused: cannot tell which OSD ${devices.b} holds \\(see above\\); nothing was drained or deleted$`, "m"));
        assert.equal(unreadable.calls.length, 6, "no drain, scale or purge after the label lookup failed");
        ok(await c.exec(["dd", "if=/dev/zero", `of=${devices.b}`, "bs=4096", "count=1", "conv=notrunc,fsync", "status=none"]));

        // the node's disk command may now let the device go (osd.2 on the other device still holds)
        const released = ok(await onNode(withDevices(plan.disks(FS, NODE2).delete, [devices.b, devices.c], [devices.b])));
        assert.deepEqual(decisions(released.stdout), [`zcloud: ${devices.b}: holds no OSD of this cluster; released`]);
        const stillHeld = await onNode(plan.disks(FS, NODE2).delete);
        assert.equal(stillHeld.code, 1, show(stillHeld));
        assert.match(stillHeld.stderr, new RegExp(`^zcloud: ${devices.c}: refused: still holds osd.2 of this cluster`));

        const tree = await c.cephJson<{ nodes: { id: number }[] }>(["osd", "tree"]);
        assert.deepEqual(tree.nodes.map((n) => n.id).filter((id) => id >= 0).sort(), [0, 2]);
        const left = await c.cephJson<{ osds: { osd: number; up: number; in: number }[] }>(["osd", "dump"]);
        assert.deepEqual(left.osds.map((o) => `osd.${o.osd} up=${o.up} in=${o.in}`), ["osd.0 up=1 in=1", "osd.2 up=1 in=1"], "the others, also osd.2 on the same node, stay up and in");
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        await waitFor("HEALTH_OK after the removal", 180_000, async () => {
            const h = await c.cephJson<{ checks: Record<string, unknown> }>(["health"]);
            return Object.keys(h.checks).filter((k) => !ALLOWED_HEALTH_CHECKS.has(k)).length === 0 ? true : undefined;
        }, 2000);
        lap("third OSD, bounded drain timeout, drain, stop, purge, zap, HEALTH_OK");
    });

    it("grown from two hosts to three, mons b and c join the running cluster; re-runs touch nothing", async () => {
        const ips = grown.monIps;
        assert.deepEqual(Object.keys(ips), ["a", "b", "c"]);
        assert.equal(ips.a, c.monIp, "mon a keeps its Service and address");
        assert.equal(grown.fsid, c.fsid, "same cluster");
        const mons = ["--mon", `a=${ips.a}`, "--mon", `b=${ips.b}`, "--mon", `c=${ips.c}`, "--initial", "a", "--allow-aes-keys"];
        // the ConfigMap now lists the three mons
        c.writeConf(c.conf, c.fsid, grown);
        // mon a's init with the grown config: its store is left as it is
        const aInit = grown.container(`ceph-${FS}-mon-a`, "mon-init");
        assert.deepEqual(scriptArgv(aInit.command), ["/etc/zcloud/scripts/ceph-mon-init.sh", "--id", "a", ...mons]);
        assert.deepEqual(decisions(ok(await c.container(aInit)).stdout), ["zcloud: mon.a: store exists at /var/lib/ceph/mon/ceph-a; left untouched"]);
        const fixed = (id: string) => ["keyring", "zcloud-fsid"].map((f) => fs.readFileSync(path.join(c.dataDir, "mon", `ceph-${id}`, f), "utf8"));
        for (const id of ["b", "c"]) {
            const init = grown.container(`ceph-${FS}-mon-${id}`, "mon-init");
            assert.deepEqual(scriptArgv(init.command), ["/etc/zcloud/scripts/ceph-mon-init.sh", "--id", id, ...mons]);
            const joined = ok(await c.container(init));
            assert.deepEqual(decisions(joined.stdout), [
                `zcloud: mon.${id}: a quorum of cluster ${c.fsid} answered; joining it`,
                `zcloud: mon.${id}: created store at /var/lib/ceph/mon/ceph-${id} from the monmap of running cluster ${c.fsid}`,
                `zcloud: mon.${id}: not in the monmap yet; the daemon asks the quorum to add it at [v2:${ips[id]}:3300,v1:${ips[id]}:6789]`,
            ]);
            assert.doesNotMatch(fs.readFileSync(path.join(c.dataDir, "mon", `ceph-${id}`, "keyring"), "utf8"), /client\./);
            c.containerDaemon(`mon.${id}`, grown.container(`ceph-${FS}-mon-${id}`, "mon"));
            await waitFor(`mon.${id} in the quorum`, 90_000, async () => {
                const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]);
                return q.quorum_names.includes(id) ? true : undefined;
            });
            const before = fixed(id);
            const again = ok(await c.container(init));
            assert.deepEqual(decisions(again.stdout), [`zcloud: mon.${id}: store exists at /var/lib/ceph/mon/ceph-${id}; left untouched`]);
            assert.deepEqual(fixed(id), before);
        }
        const q = await c.cephJson<{ quorum_names: string[] }>(["quorum_status"]);
        assert.deepEqual([...q.quorum_names].sort(), ["a", "b", "c"]);
        const monmap = await c.cephJson<{ fsid: string; mons: { name: string; public_addrs: { addrvec: { type: string; addr: string }[] } }[] }>(["mon", "dump"]);
        assert.equal(monmap.fsid, c.fsid);
        assert.deepEqual(
            monmap.mons.map((m) => [m.name, m.public_addrs.addrvec.map((a) => `${a.type}:${a.addr}`)]).sort(),
            ["a", "b", "c"].map((id) => [id, [`v2:${ips[id]}:3300`, `v1:${ips[id]}:6789`]]),
        );
        // the file system still answers through the grown quorum
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap("grow to three hosts: mons b, c join; re-runs untouched");
    });

    it("health gates (ceph-gate.sh): mon back in quorum, host ok-to-stop refuses what would make PGs inactive, host OSDs up + PGs active, noout, fs active", async () => {
        const gate = (...args: string[]) => c.script("ceph-gate", [...args, "--fsid", c.fsid]);
        const restart = (name: string, container: PlannedContainer) => {
            fs.renameSync(path.join(c.tmp, "log", `${name}.out`), path.join(c.tmp, "log", `${name}-before-gate.out`));
            c.containerDaemon(name, container);
        };
        // two gate resources as planned, run as the command provider runs them: their stub reads
        // cephfs-kube.sh + cephfs-gate.sh from its ConfigMap, which reads ceph-gate.sh's set and
        // runs it in the admin pod (fake-kubectl.sh: in the test cluster)
        for (const [from, name, said] of [
            [grown, `${FS}-gate-mon-c`, "zcloud: mon.c: in the quorum"],
            [plan, `${FS}-gate-${NODE2}-ok-to-stop`, `zcloud: host ${NODE2}: osd 2 ok to stop`],
        ] as const) {
            const planned = from.gate(name);
            const localSet = cephScriptSetName(FS, "cephfs-gate.sh");
            assert.ok(planned.create.includes(`' cephfs-gate ${localSet} `), name);
            const run = await runLocalCommand(planned.create, planned.environment, from);
            assert.deepEqual(decisions(ok(run.r).stdout), [said], name);
            assert.deepEqual(run.calls[0], ["--context", CONTEXT, "--namespace", "zcloud-storage", "get", "configmap", localSet, "--output", "jsonpath={.data.cephfs-gate\\.sh}"], name);
            assert.deepEqual(run.calls.map((call) => call.slice(4, 6)), [["get", "configmap"], ["get", "configmap"], ["get", "configmap"], ["get", "pods"], ["exec", ADMIN_POD]], name);
        }
        // mon: a stopped mon fails the gate with its name, the quorum and the health detail; back, it passes
        assert.deepEqual(decisions(ok(await gate("mon-quorum", "--id", "c")).stdout), ["zcloud: mon.c: in the quorum"]);
        let t0 = Date.now();
        await c.stopDaemon("mon.c");
        await waitFor("mon.c out of the quorum", 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes("c") ? undefined : true));
        // The health detail is what Ceph says at that moment: its MON_DOWN check may come a tick
        // after the quorum shrank (the cluster is HEALTH_OK before: AES-256 keys), so wait for it.
        await waitFor("MON_DOWN in the health checks", 30_000, async () => ("MON_DOWN" in (await c.cephJson<{ checks: Record<string, unknown> }>(["health"])).checks ? true : undefined));
        const monDown = await gate("mon-quorum", "--id", "c", "--timeout", "3");
        assert.equal(monDown.code, 3, show(monDown));
        assert.match(monDown.stderr, /^zcloud: mon\.c: refused: not in the quorum after 3s: quorum is \[a b\], not in it: \[c\] - health: HEALTH_WARN .*MON_DOWN/m);
        restart("mon.c", grown.container(`ceph-${FS}-mon-c`, "mon"));
        const monBack = ok(await gate("mon-quorum", "--id", "c", "--timeout", "120"));
        assert.equal(decisions(monBack.stdout).at(-1), "zcloud: mon.c: in the quorum");
        const monMs = Date.now() - t0;

        // OSDs of one CRUSH host: with min_size 1 the other host's copy keeps PGs active (ok);
        // with min_size 2 stopping the host would make them inactive: refused with Ceph's reason
        assert.deepEqual(decisions(ok(await gate("osd-ok-to-stop", "--host", NODE2)).stdout), [`zcloud: host ${NODE2}: osd 2 ok to stop`]);
        for (const pool of [`${FS}-metadata`, `${FS}-data`]) ok(await c.ceph(["osd", "pool", "set", pool, "min_size", "2"]));
        const refused = await gate("osd-ok-to-stop", "--host", NODE2);
        for (const pool of [`${FS}-metadata`, `${FS}-data`]) ok(await c.ceph(["osd", "pool", "set", pool, "min_size", "1"]));
        assert.equal(refused.code, 1, show(refused));
        assert.match(refused.stderr, new RegExp(`^zcloud: host ${NODE2}: refused: stopping osd 2 would make placement groups inactive: .+- not restarted$`, "m"));

        // the roll of one host: noout, stop, the after-gate holds until the OSD is up and PGs active
        t0 = Date.now();
        assert.deepEqual(decisions(ok(await gate("noout", "set")).stdout), [`zcloud: cluster ${c.fsid}: noout set`]);
        await c.stopDaemon("osd.2");
        await waitFor("osd.2 down", 60_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 1 ? true : undefined));
        const osdDown = await gate("osd-up", "--host", NODE2, "--timeout", "3");
        assert.equal(osdDown.code, 3, show(osdDown));
        assert.match(osdDown.stderr, new RegExp(`^zcloud: host ${NODE2} \\(osd 2\\): refused: not up with all placement groups active after 3s: osd\\.2 is down in - health: HEALTH_WARN .*noout`, "m"));
        restart("osd.2", plan.container(osdWorkload.c, "osd"));
        const osdBack = ok(await gate("osd-up", "--host", NODE2, "--timeout", "120"));
        assert.equal(decisions(osdBack.stdout).at(-1), `zcloud: host ${NODE2}: osd 2 up and in, all placement groups active`);
        const pgs = await c.cephJson<{ pg_summary?: { num_pg_by_state: { name: string; num: number }[] } }>(["pg", "stat"]);
        const states = (pgs.pg_summary ?? (pgs as any)).num_pg_by_state as { name: string }[];
        assert.ok(states.every((st) => st.name.split("+").includes("active")), JSON.stringify(states));
        assert.deepEqual(decisions(ok(await gate("noout", "unset")).stdout), [`zcloud: cluster ${c.fsid}: noout unset`]);
        const osdMs = Date.now() - t0;

        // mds: one active, no standby: the handover says so; the fs is active
        assert.deepEqual(decisions(ok(await gate("mds-handover", "--name", "a", "--fs", FS)).stdout), [
            `zcloud: mds.a: active for ${FS} with no standby; restarts without a handover (fs briefly unavailable)`,
        ]);
        assert.deepEqual(decisions(ok(await gate("fs-active", "--fs", FS)).stdout), [`zcloud: fs ${FS}: active`]);
        assert.equal(ok(await c.exec(["cat", path.join(mountDir, "hello.txt")])).stdout, "zcloud cephfs data\n");
        lap(`health gates: mon.c restart ${(monMs / 1000).toFixed(1)} s, ${NODE2} OSD roll ${(osdMs / 1000).toFixed(1)} s`);
    });

    it("no key ever appears in what the scripts and daemons printed", () => {
        const read = (d: string) => fs.readdirSync(d).map((f) => fs.readFileSync(path.join(d, f), "utf8")).join("\n");
        // what the pods print (their logs) and the scripts' output: no key of any shape
        const printed = c.transcript.join("\n") + read(path.join(c.tmp, "log"));
        // ceph-volume's own log file (/var/log/ceph in the container, not a volume: it goes with
        // the pod) holds the new OSD's own key, as Ceph writes it; no Secret key is in it
        const cephVolume = read(path.join(c.tmp, "varlog"));
        for (const k of KEY_NAMES) {
            assert.ok(!printed.includes(c.key(k)), `key ${k} leaked into output`);
            assert.ok(!cephVolume.includes(c.key(k)), `key ${k} leaked into ceph-volume's log`);
        }
        // AES-128 (the program's, `AQ`) and AES-256 (Ceph 20's, `Ag`) keys
        assert.doesNotMatch(printed, /AQ[A-Za-z0-9+/]{36}==|Ag[A-Za-z0-9+/]{57}=/, "no key-shaped string in output");
    });
});
