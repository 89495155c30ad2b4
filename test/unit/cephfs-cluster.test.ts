import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
    cephKey,
    cephKeyBytes,
    monmapAllowsAesKeys,
    usesAes256Bytes,
    generatedKeys,
    cephKeySecret,
    cephNames,
    deviceSlug,
    initialMonIds,
    mgrIds,
    monCount,
    monHost,
    monInitArgs,
    monPlacement,
    poolReplicas,
    renderCephConf,
    renderCsiConfig,
} from "../../components/cephfs/cluster";
import { cephLibraryBundle, cephLibraryName, cephScriptBundle, cephScriptCall, cephScriptCommand, cephScriptSetName, cephScriptText, compactScript, scriptSetsValue } from "../../components/cephfs/scripts";
import { readNodeScript } from "../../components/node/script";

describe("cephKey", () => {
    it("encodes type 1, the fixed creation time, length 16 and the secret, little-endian", () => {
        const secret = Buffer.from("00112233445566778899aabbccddeeff", "hex");
        const key = cephKey(secret.toString("base64"));
        const record = Buffer.from(key, "base64");
        assert.equal(record.length, 28);
        assert.equal(record.subarray(0, 12).toString("hex"), "0100" + "00000000" + "00000000" + "1000");
        assert.deepEqual(record.subarray(12), secret);
        assert.match(key, /^AQ[A-Za-z0-9+/]{36}==$/);
    });
    it("is a pure function of the bytes and round-trips", () => {
        const b64 = Buffer.alloc(16, 7).toString("base64");
        assert.equal(cephKey(b64), cephKey(b64));
        assert.equal(cephKeySecret(cephKey(b64)), b64);
        assert.equal(cephKey(b64), "AQAAAAAAAAAAABAABwcHBwcHBwcHBwcHBwcHBw==");
    });
    it("encodes 32 bytes as an AES-256 key: type 2, length 32, 60 characters (the shape Ceph 20's ceph-authtool prints)", () => {
        const secret = Buffer.alloc(32, 9);
        const key = cephKey(secret.toString("base64"));
        const record = Buffer.from(key, "base64");
        assert.equal(record.length, 44);
        assert.equal(record.subarray(0, 12).toString("hex"), "0200" + "00000000" + "00000000" + "2000");
        assert.deepEqual(record.subarray(12), secret);
        assert.match(key, /^Ag[A-Za-z0-9+/]{57}=$/);
        assert.equal(key, "AgAAAAAAAAAAACAACQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=");
        assert.equal(cephKeySecret(key), secret.toString("base64"));
    });
    it("refuses anything but 16 or 32 bytes, and a header that does not match its length", () => {
        assert.throws(() => cephKey(Buffer.alloc(15).toString("base64")), /exactly 16 \(AES-128\) or 32 \(AES-256\) secret bytes in base64, got 15 bytes/);
        assert.throws(() => cephKey(Buffer.alloc(24).toString("base64")), /got 24 bytes/);
        assert.throws(() => cephKeySecret("AAAA"), /not a Ceph AES-128 or AES-256 key/);
        const wrongType = Buffer.from(cephKey(Buffer.alloc(16, 1).toString("base64")), "base64");
        wrongType.writeUInt16LE(2, 0);
        assert.throws(() => cephKeySecret(wrongType.toString("base64")), /not a Ceph AES-128 or AES-256 key/);
    });
});

describe("cephKeyBytes", () => {
    it("daemon and admin keys: 32 bytes (AES-256) from Tentacle 20 on, 16 (AES-128) before", () => {
        for (const entity of ["mon", "admin", "bootstrap-osd"] as const) {
            assert.equal(cephKeyBytes("quay.io/ceph/ceph:v19.2.4", entity), 16, entity);
            assert.equal(cephKeyBytes("quay.io/ceph/ceph:v18.2.7", entity), 16, entity);
            assert.equal(cephKeyBytes("quay.io/ceph/ceph:v20.2.4", entity), 32, entity);
            assert.equal(cephKeyBytes("registry.local:5000/ceph/ceph:v21.2.0", entity), 32, entity);
            // the CSI key's type does not move them
            assert.equal(cephKeyBytes("quay.io/ceph/ceph:v20.2.4", entity, "aes256"), 32, entity);
            assert.equal(cephKeyBytes("quay.io/ceph/ceph:v19.2.4", entity, "aes"), 16, entity);
        }
    });
    it("the CSI user's key: 16 bytes (AES-128, every kernel client) whatever the release, 32 only when asked", () => {
        assert.equal(cephKeyBytes("quay.io/ceph/ceph:v20.2.4", "csi"), 16);
        assert.equal(cephKeyBytes("quay.io/ceph/ceph:v20.2.4", "csi", "aes"), 16);
        assert.equal(cephKeyBytes("quay.io/ceph/ceph:v19.2.4", "csi"), 16);
        assert.equal(cephKeyBytes("quay.io/ceph/ceph:v20.2.4", "csi", "aes256"), 32);
    });
    it("refuses an image whose tag is not a release", () => {
        assert.throws(() => cephKeyBytes("quay.io/ceph/ceph:latest", "admin"), /cannot tell the Ceph release of image quay.io\/ceph\/ceph:latest \(expected a tag vX.Y.Z\)/);
        assert.throws(() => cephKeyBytes("quay.io/ceph/ceph:latest", "csi"), /cannot tell the Ceph release of image quay.io\/ceph\/ceph:latest \(expected a tag vX.Y.Z\)/);
    });
});

describe("usesAes256Bytes", () => {
    it("keys: aes256 moves mon., client.admin and client.bootstrap-osd; csiKey: aes256 the CSI user's alone", () => {
        const of = (flags: { keys?: "aes256"; csiKey?: "aes256" }) => generatedKeys.filter((e) => usesAes256Bytes(e, flags));
        assert.deepEqual(of({}), []);
        assert.deepEqual(of({ keys: "aes256" }), ["mon", "admin", "bootstrap-osd"]);
        assert.deepEqual(of({ csiKey: "aes256" }), ["csi"]);
        assert.deepEqual(of({ keys: "aes256", csiKey: "aes256" }), ["mon", "admin", "bootstrap-osd", "csi"]);
    });
});

describe("monmapAllowsAesKeys", () => {
    it("Ceph 20+ with the AES-128 CSI key: the first monmap allows aes beside aes256k", () => {
        assert.equal(monmapAllowsAesKeys("quay.io/ceph/ceph:v20.2.4"), true);
        assert.equal(monmapAllowsAesKeys("quay.io/ceph/ceph:v20.2.4", "aes"), true);
    });
    it("an AES-256 CSI key keeps Ceph 20's default (aes256k only); before 20 monmaps know no ciphers", () => {
        assert.equal(monmapAllowsAesKeys("quay.io/ceph/ceph:v20.2.4", "aes256"), false);
        assert.equal(monmapAllowsAesKeys("quay.io/ceph/ceph:v19.2.4"), false);
    });
});

describe("mons, mgrs, replicas", () => {
    it("one mon for one or two hosts, three from three", () => {
        assert.deepEqual([1, 2, 3, 4, 9].map(monCount), [1, 1, 3, 3, 3]);
        assert.throws(() => monCount(0), /at least one host/);
    });
    it("places mons on the first hosts in name order, whatever the config order", () => {
        assert.deepEqual(monPlacement(["node5", "node3", "node4", "node6"]), [
            { id: "a", node: "node3" },
            { id: "b", node: "node4" },
            { id: "c", node: "node5" },
        ]);
        assert.deepEqual(monPlacement(["b", "a"]), [{ id: "a", node: "a" }]);
    });
    it("only the first placed mon may start a cluster, whether the storage has one host or grew to three", () => {
        // Growing 2 -> 3 hosts keeps a where it is and adds b, c: the initial set does not move.
        assert.deepEqual(initialMonIds(monPlacement(["node4", "node3"])), ["a"]);
        assert.deepEqual(initialMonIds(monPlacement(["node4", "node3", "node5"])), ["a"]);
        assert.throws(() => initialMonIds([]), /at least one mon/);
        const mons = [
            { id: "a", ip: "10.96.0.10" },
            { id: "b", ip: "10.96.0.11" },
        ];
        assert.deepEqual(monInitArgs("b", mons, ["a"]), ["--id", "b", "--mon", "a=10.96.0.10", "--mon", "b=10.96.0.11", "--initial", "a"]);
        assert.deepEqual(monInitArgs("b", mons, ["a"], true), ["--id", "b", "--mon", "a=10.96.0.10", "--mon", "b=10.96.0.11", "--initial", "a", "--allow-aes-keys"]);
    });
    it("mgr standby only with a second host", () => {
        assert.deepEqual(mgrIds(1), ["a"]);
        assert.deepEqual(mgrIds(2), ["a", "b"]);
    });
    it("replicas default to min(3, hosts) and never exceed the hosts", () => {
        assert.deepEqual([1, 2, 3, 5].map((h) => poolReplicas(h)), [1, 2, 3, 3]);
        assert.equal(poolReplicas(5, 4), 4);
        assert.throws(() => poolReplicas(2, 3), /replicas 3 must be an integer from 1 to the number of hosts \(2\)/);
    });
});

describe("ceph.conf and ceph-csi config", () => {
    const mons = [
        { id: "a", ip: "10.96.0.10" },
        { id: "b", ip: "fd00::20" },
    ];
    it("mon_host lists both messenger versions per mon, IPv6 bracketed", () => {
        assert.equal(monHost(mons), "[v2:10.96.0.10:3300,v1:10.96.0.10:6789],[v2:[fd00::20]:3300,v1:[fd00::20]:6789]");
    });
    it("ceph.conf carries fsid and mon_host and no key", () => {
        const conf = renderCephConf({ fsid: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", mons, replicas: 3 });
        assert.match(conf, /^\[global\]\nfsid = 1b4e28ba-2fa1-11d2-883f-0016d3cca427\nmon_host = \[v2:10\.96\.0\.10:3300/);
        assert.doesNotMatch(conf, /AQ[A-Za-z0-9+/]{20}|^key/m);
        assert.match(conf, /^auth_allow_insecure_global_id_reclaim = false$/m);
    });
    it("ceph.conf sets the pool defaults to the storage's replicas (the mgr's own pool follows them)", () => {
        const conf = (replicas: number) => renderCephConf({ fsid: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", mons, replicas });
        assert.match(conf(1), /^osd_pool_default_size = 1\nosd_pool_default_min_size = 1$/m);
        assert.match(conf(2), /^osd_pool_default_size = 2\nosd_pool_default_min_size = 1$/m);
        assert.match(conf(3), /^osd_pool_default_size = 3\nosd_pool_default_min_size = 2$/m);
    });
    it("csi config: clusterID = fsid, msgr1 monitors, subvolume group", () => {
        assert.deepEqual(JSON.parse(renderCsiConfig([{ clusterID: "f2", mons, subvolumeGroup: "csi" }, { clusterID: "f1", mons: [mons[0]], subvolumeGroup: "csi" }])), [
            { clusterID: "f1", monitors: ["10.96.0.10:6789"], cephFS: { subvolumeGroup: "csi" } },
            { clusterID: "f2", monitors: ["10.96.0.10:6789", "[fd00::20]:6789"], cephFS: { subvolumeGroup: "csi" } },
        ]);
    });
});

describe("names", () => {
    it("device slugs are short, DNS-safe and unique for long by-id names", () => {
        assert.equal(deviceSlug("/dev/sdb"), "sdb");
        const a = deviceSlug("/dev/disk/by-id/nvme-SAMSUNG_MZQL21T9HCJR-00A07_S64GNE0R100001");
        const b = deviceSlug("/dev/disk/by-id/nvme-SAMSUNG_MZQL21T9HCJR-00A07_S64GNE0R100002");
        assert.notEqual(a, b);
        assert.ok(a.length <= 24 && /^[a-z0-9][a-z0-9-]*[a-z0-9]$/.test(a), a);
    });
    it("object names carry the storage and, for OSDs, node and device", () => {
        const n = cephNames("shared-fs");
        assert.equal(n.mon("a"), "ceph-shared-fs-mon-a");
        assert.equal(n.osd("node5", "/dev/sdc"), "ceph-shared-fs-osd-node5-sdc");
        assert.ok(n.osd("a-very-long-node-name-in-some-datacenter", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4e5f6").length <= 63);
        assert.equal(n.hostDir, "/var/lib/zcloud/ceph/shared-fs");
    });
});

describe("container commands", () => {
    it("run the script set from the pod's scripts volume through the runner, with both hashes and plain arguments", () => {
        const command = cephScriptCommand("ceph-fs.sh", ["apply", "--fs", "x", "--hosts", "3"]);
        assert.deepEqual(command.slice(0, 2), ["sh", "-c"]);
        assert.equal(command[2], compactScript("ceph/ceph-run.sh"));
        assert.ok(command[2].length < 800, `runner: ${command[2].length} bytes`);
        assert.deepEqual(command.slice(3), ["/etc/zcloud/scripts/ceph-fs.sh", cephLibraryBundle().sha256, cephScriptBundle("ceph-fs.sh").sha256, "apply", "--fs", "x", "--hosts", "3"]);
        assert.deepEqual(cephScriptCall(command), { path: "/etc/zcloud/scripts/ceph-fs.sh", librarySha256: cephLibraryBundle().sha256, setSha256: cephScriptBundle("ceph-fs.sh").sha256, args: ["apply", "--fs", "x", "--hosts", "3"] });
        assert.equal(cephScriptCall(["sh", "/etc/zcloud/scripts/ceph-fs.sh", "apply"]), undefined);
    });

    it("the library (lib.sh + ceph-lib.sh) travels once; a Ceph set is its script alone, named by its sha256; ConfigMap names carry the ids", () => {
        const library = cephLibraryBundle();
        assert.deepEqual(library.files, ["lib.sh", "ceph/ceph-lib.sh"]);
        assert.equal(library.text, ["lib.sh", "ceph/ceph-lib.sh"].map(readNodeScript).join("\n"));
        assert.equal(cephLibraryName("shared-fs"), `ceph-shared-fs-scripts-library-${library.id}`);
        const set = cephScriptBundle("ceph-osd-drain.sh");
        assert.deepEqual(set.files, ["ceph/ceph-osd-drain.sh"]);
        assert.equal(set.text, readNodeScript("ceph/ceph-osd-drain.sh"));
        assert.equal(set.sha256, createHash("sha256").update(set.text).digest("hex"));
        assert.equal(set.id, set.sha256.slice(0, 12));
        assert.equal(cephScriptSetName("shared-fs", "ceph-osd-drain.sh"), `ceph-shared-fs-scripts-osd-drain-${set.id}`);
        assert.equal(cephScriptSetName("shared-fs", "ceph-mon-init.sh"), `ceph-shared-fs-scripts-mon-init-${cephScriptBundle("ceph-mon-init.sh").id}`);
        assert.notEqual(cephScriptBundle("ceph-osd.sh").id, set.id);
        // what runs: the library, then the set (each file ends in one newline, as `$(...)` and the hash checks need)
        assert.equal(cephScriptText("ceph-osd-drain.sh"), [library.text, set.text].map((t) => t.replace(/\n$/, "")).join("\n"));
        for (const t of [library.text, set.text]) assert.match(t, /[^\n]\n$/);
        assert.equal(
            scriptSetsValue(["ceph-fs.sh", "ceph-keyring.sh"]),
            `ceph-library.sh=${library.sha256},ceph-fs.sh=${cephScriptBundle("ceph-fs.sh").sha256},ceph-keyring.sh=${cephScriptBundle("ceph-keyring.sh").sha256}`,
        );
    });

    /** The runner of a container command, run by sh with the scripts volume at `dir`. */
    const runIn = (dir: string, command: string[]) => {
        const r = spawnSync("/bin/sh", ["-c", command[2], path.join(dir, path.basename(command[3])), ...command.slice(4)], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    /** A scripts volume as the kubelet projects it: the library and the set, as planned. */
    const volume = (library: string, set: string | undefined) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-scripts-"));
        fs.writeFileSync(path.join(dir, "ceph-library.sh"), library);
        if (set !== undefined) fs.writeFileSync(path.join(dir, "ceph-keyring.sh"), set);
        return dir;
    };

    it("the runner checks both hashes, then runs library + set as the script's name with the arguments intact", () => {
        const command = cephScriptCommand("ceph-keyring.sh", ["daemon", "mgr", "it's a b"]);
        const dir = volume(cephLibraryBundle().text, cephScriptBundle("ceph-keyring.sh").text);
        const r = runIn(dir, command);
        // ceph-keyring.sh's own refusal of the id (zcc_usage, a library function): the set ran after the library, its argument intact
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.stderr, "usage: daemon id 'it's a b' must be letters, digits, - or _\n");
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("a missing or altered library or set: one refusal naming it, nothing run", () => {
        const command = cephScriptCommand("ceph-keyring.sh", ["daemon", "mgr", "a"]);
        const lib = cephLibraryBundle();
        const set = cephScriptBundle("ceph-keyring.sh").text;
        for (const [library, script, said] of [
            ["", set, "ceph-library.sh is missing or empty (its script-set ConfigMap is not mounted)"],
            [lib.text + "touch /tmp/zcloud-altered\n", set, `ceph-library.sh is not the script set ${lib.sha256} the pod was made with (altered)`],
            [lib.text, undefined, "ceph-keyring.sh is missing or empty (its script-set ConfigMap is not mounted)"],
            [lib.text, set.replace("ceph-keyring", "ceph-keyrinG"), `ceph-keyring.sh is not the script set ${cephScriptBundle("ceph-keyring.sh").sha256} the pod was made with (altered)`],
        ] as const) {
            const dir = volume(library, script);
            const r = runIn(dir, command);
            assert.equal(r.code, 1, said);
            assert.equal(r.stderr, `zcloud: ceph-keyring: refused: ${dir}/${said}; nothing was run\n`);
            assert.equal(r.stdout, "");
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
