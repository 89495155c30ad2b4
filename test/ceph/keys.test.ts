/**
 * Ceph tier, per-entity key types on the shipped release: a new two-host cluster (mon, mgr, mds,
 * two OSDs on two CRUSH hosts, the file system) from the planned commands, with the keys as the
 * program makes them for the shipped image (cephKeyBytes per entity: mon., client.admin and
 * client.bootstrap-osd AES-256, the CSI user's AES-128 by default) and no insecure setting of the
 * test's own: the monmap's ciphers are what the rendered `ceph-mon-init.sh --allow-aes-keys`
 * makes. Checks: the daemons' keys are AES-256 (`aes256k`), client.csi's AES-128 (`aes`); the CSI
 * key authenticates (`ceph -n client.csi -s`), provisions a subvolume and mounts it with ceph-fuse
 * as ceph-csi's fuse mounter would; the health is what docs/cephfs.md "Keys on Ceph 20" says
 * (HEALTH_WARN, exactly the checks the AES-128 CSI key brings); `ceph health mute` of them, as
 * documented there, gives HEALTH_OK and is lifted when another AES-128 client key appears.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, KEY_NAMES, missingPrerequisites, RunResult, waitFor } from "./cluster";
import { CephPlan } from "./planned";
import { TIER_RELEASE, tierRoot } from "./release";
import { cephKeyBytes, monmapAllowsAesKeys } from "../../components/cephfs/cluster";
import { images } from "../../components/images";
import { parseCephStatus } from "../../tools/status/cluster";
import { aesCsiKeyChecks, expectedCephWarning } from "../../tools/status/evaluate";
import { scriptArgv } from "../helpers/cephScripts";

const FS = "keys-fs";
const NODES = ["zc-keys-1", "zc-keys-2"];

function show(r: RunResult): string {
    return `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
}
function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, show(r));
    return r;
}
/** Ceph's key type of a key in base64: le16 type 1 = aes, 2 = aes256k. */
function keyType(key: string): string {
    const t = Buffer.from(key, "base64").readUInt16LE(0);
    return t === 1 ? "aes" : t === 2 ? "aes256k" : `type ${t}`;
}

interface Health {
    status: string;
    checks: Record<string, { severity: string; summary: { message: string }; detail?: { message: string }[]; muted?: boolean }>;
    mutes?: { code: string; sticky: boolean; summary: string; count: number }[];
}

describe(`ceph tier: per-entity key types at ${TIER_RELEASE.version} (daemons AES-256, the CSI user AES-128)`, { timeout: 900_000 }, () => {
    let c: CephTestCluster;
    let plan: CephPlan;
    const timings: [string, number][] = [];
    let mark = Date.now();
    const lap = (what: string) => {
        const now = Date.now();
        timings.push([what, now - mark]);
        mark = now;
    };
    const health = () => c.cephJson<Health>(["health", "detail"]);

    before(async () => {
        const missing = missingPrerequisites();
        if (missing.length > 0) throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
        // The proof is about the shipped image: a Ceph 20 image with the default CSI key type.
        assert.equal(monmapAllowsAesKeys(images.ceph), true, `${images.ceph}: the shipped image's new monmap allows AES-128 keys (the CSI user's)`);
        c = CephTestCluster.create(tierRoot(TIER_RELEASE));
        const devices = NODES.map((_, i) => c.loop(`keys-osd-${i}`, 3072));
        plan = await CephPlan.plan({
            storage: FS,
            hosts: Object.fromEntries(NODES.map((n, i) => [n, [devices[i]]])),
            wipeStorage: "keys-wipe",
            wipeHosts: { "zc-keys-9": ["/dev/disk/by-id/zc-keys-unused"] },
            kubeContext: "ceph-tier",
        });
        // The keys as the program makes them for the shipped image, entity by entity.
        c.keyBytesOf = Object.fromEntries(KEY_NAMES.map((k) => [k, cephKeyBytes(images.ceph, k)]));
        await c.boot(plan);
        lap("setup: loop devices, plan, keys, namespace");
    });

    after(async () => {
        if (c) await c.stop();
        console.log(timings.map(([w, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${w}`).join("\n"));
    });

    it("keys as the program makes them: mon., client.admin and client.bootstrap-osd AES-256, client.csi AES-128", () => {
        assert.deepEqual(Object.fromEntries(KEY_NAMES.map((k) => [k, keyType(c.key(k))])), { admin: "aes256k", mon: "aes256k", "bootstrap-osd": "aes256k", csi: "aes" });
    });

    it("creates the cluster from the planned commands; the first monmap allows aes beside aes256k, as rendered", async () => {
        const init = plan.container(`ceph-${FS}-mon-a`, "mon-init");
        assert.deepEqual(scriptArgv(init.command), ["/etc/zcloud/scripts/ceph-mon-init.sh", "--id", "a", "--mon", `a=${c.monIp}`, "--initial", "a", "--allow-aes-keys"]);
        ok(await c.container(init));
        c.cephDaemon("mon", "a");
        await waitFor("mon quorum", 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes("a") ? true : undefined));
        const map = await c.cephJson<{ auth_allowed_ciphers: { name: string }[]; auth_preferred_cipher: { name: string }; auth_service_cipher: { name: string } }>(["mon", "dump"]);
        assert.deepEqual(map.auth_allowed_ciphers.map((x) => x.name).sort(), ["aes", "aes256k"]);
        // new keys Ceph makes itself (mgr, mds, OSDs) stay AES-256
        assert.equal(map.auth_preferred_cipher.name, "aes256k");
        assert.equal(map.auth_service_cipher.name, "aes256k");
        for (const type of ["mgr", "mds"] as const) {
            ok(await c.container(plan.container(`ceph-${FS}-${type}-a`, "keyring")));
            c.cephDaemon(type, "a");
        }
        c.osdWorkloads().forEach((w, i) => c.osdDaemon(`osd.${i}`, w));
        await waitFor("2 OSDs up", 240_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === 2 ? true : undefined));
        const fsJob = ok(await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 240_000 }));
        assert.match(fsJob.stdout, /zcloud: keys-fs: subvolume group csi created/);
        const csiUser = ok(await c.container(plan.container(`${FS}-filesystem`, "csi-user")));
        assert.match(csiUser.stdout, /zcloud: client\.csi: created with the key from .* and role csi caps/);
        lap("create: mon, mgr, mds, 2 OSDs, file system, client.csi");
    });

    it("every daemon and admin key in the cluster is aes256k; client.csi alone is aes", async () => {
        const dump = await c.cephJson<{ data: { secrets: { entity: { type_str: string; id: string }; auth: { key: { type_str: string } } }[] } }>(["auth", "dump-keys"]);
        const types = Object.fromEntries(dump.data.secrets.map((s) => [`${s.entity.type_str}.${s.entity.id}`, s.auth.key.type_str]));
        assert.equal(types["client.csi"], "aes");
        const others = Object.entries(types).filter(([e]) => e !== "client.csi");
        for (const e of ["client.admin", "client.bootstrap-osd", "mgr.a", "mds.a", "osd.0", "osd.1"]) assert.ok(e in types, `${e} in the auth database: ${JSON.stringify(types)}`);
        assert.deepEqual(others.filter(([, t]) => t !== "aes256k"), [], JSON.stringify(types));
        // mon. lives in the store's keyring (the program's Secret key)
        assert.equal(keyType(/key = (\S+)/.exec(ok(await c.exec(["cat", path.join(c.dataDir, "mon", "ceph-a", "keyring")])).stdout)![1]), "aes256k");
    });

    it("the AES-128 CSI key authenticates: ceph -s, a subvolume provisioned and mounted with ceph-fuse as client.csi", async () => {
        const status = await c.cephJson<{ fsid: string }>(["-s"], "csi");
        assert.equal(status.fsid, c.fsid);
        ok(await c.ceph(["fs", "subvolume", "create", FS, "pvc-keys", "--group_name", "csi", "--size", String(64 << 20)], "csi"));
        const subPath = ok(await c.ceph(["fs", "subvolume", "getpath", FS, "pvc-keys", "--group_name", "csi"], "csi")).stdout.trim();
        const mnt = path.join(c.tmp, "mnt");
        c.daemon("ceph-fuse", ["ceph-fuse", "-f", "--conf", c.conf, "--name", "client.csi", "--keyfile", c.keyFile("csi"), "--client_fs", FS, "-r", subPath, mnt]);
        await waitFor("the ceph-fuse mount", 60_000, async () => ((await c.exec(["findmnt", "-n", "-o", "FSTYPE", mnt])).stdout.includes("fuse") ? true : undefined));
        ok(await c.exec(["sh", "-c", 'printf "aes csi key\\n" > "$1/f.txt" && sync', "write", mnt]));
        assert.equal(ok(await c.exec(["cat", path.join(mnt, "f.txt")])).stdout, "aes csi key\n");
        ok(await c.exec(["umount", mnt]));
        await c.stopDaemon("ceph-fuse");
        lap("client.csi: ceph -s, subvolume, ceph-fuse write + read");
    });

    it("health: HEALTH_WARN with exactly the AES-128 CSI key's checks (docs/cephfs.md); muted as documented: HEALTH_OK, lifted by another AES-128 client key", async () => {
        const EXPECTED = aesCsiKeyChecks;
        const h = await waitFor("only the AES-128 key checks", 180_000, async () => {
            const now = await health();
            return Object.keys(now.checks).sort().join() === EXPECTED.join() ? now : undefined;
        }, 2000).catch(async (e) => {
            throw new Error(`${(e as Error).message}; health: ${JSON.stringify(await health())}`);
        });
        console.log(`  health with the AES-128 CSI key: ${JSON.stringify(h)}`);
        assert.equal(h.status, "HEALTH_WARN");
        for (const code of EXPECTED) assert.equal(h.checks[code].severity, "HEALTH_WARN", code);
        assert.deepEqual(h.checks.AUTH_INSECURE_CLIENT_KEY_TYPE.detail?.map((d) => d.message), ["entity client.csi using insecure key type: aes"]);
        // npm run status reads `ceph status`: the warning is expected, no problem
        const st = parseCephStatus(ok(await c.ceph(["status", "--format", "json"])).stdout);
        assert.deepEqual(st.checks, {
            AUTH_INSECURE_CLIENT_KEY_TYPE: "1 auth client entities with insecure key types",
            AUTH_INSECURE_KEYS_ALLOWED: "Monitors are configured to allow auth using insecure key types",
            AUTH_INSECURE_KEYS_CREATABLE: "Monitors are configured to allow creation of insecure key types",
        });
        assert.match(expectedCephWarning(st) ?? "", /^expected: the CSI user's AES-128 key/, JSON.stringify(st));
        // The documented mute (docs/cephfs.md): without --sticky, so it lifts when a check grows.
        for (const code of EXPECTED) ok(await c.ceph(["health", "mute", code]));
        const muted = await waitFor("HEALTH_OK once muted", 60_000, async () => {
            const now = await health();
            return now.status === "HEALTH_OK" ? now : undefined;
        });
        assert.deepEqual(Object.keys(muted.checks).sort(), EXPECTED);
        // Another client with an AES-128 key: the client-key check grows, its mute is lifted.
        ok(await c.ceph(["auth", "get-or-create", "client.other", "mon", "allow r", "--key-type", "aes"]));
        const lifted = await waitFor("the client-key mute lifted", 60_000, async () => {
            const now = await health();
            return now.status === "HEALTH_WARN" ? now : undefined;
        });
        assert.deepEqual(Object.entries(lifted.checks).filter(([, v]) => !v.muted).map(([k]) => k), ["AUTH_INSECURE_CLIENT_KEY_TYPE"]);
        ok(await c.ceph(["auth", "rm", "client.other"]));
        lap("health: the AES-128 checks, mute, lifted");
    });
});
