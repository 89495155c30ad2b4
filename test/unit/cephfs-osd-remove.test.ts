import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

const script = path.join(__dirname, "../../components/node/cephfs-osd-remove.sh");
const fsid = "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90";
const base = ["--namespace", "zcloud-storage", "--fsid", fsid, "--node", "n1", "--device", "/dev/sdb", "--devices-annotation", "storage.zcloud.io/cephfs-devices", "--admin-selector", "a=b", "--osd-deployment", "ceph-fs-osd-n1-sdb", "--osd-selector", "storage.zcloud.io/ceph-osd=ceph-fs-osd-n1-sdb", "--script-configmap", "ceph-fs-scripts-osd-drain-0123456789ab", "--library-configmap", "ceph-fs-scripts-library-0123456789ab"];

/** The drain's delete step as the local command runs it, with a PATH that holds no kubectl (nothing at all). */
function remove(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env: { PATH: "/nonexistent", ...env } }, (err, stdout, stderr) =>
            resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        ),
    );
}

describe("cephfs-osd-remove.sh: which cluster it acts on", () => {
    test("without kubernetes:context or kubernetes:kubeconfig the cluster cannot be known: refused before any kubectl call", async () => {
        const r = await remove(base);
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            "zcloud: n1 /dev/sdb: refused: cannot tell which Kubernetes cluster the stack's provider uses (neither kubernetes:context nor kubernetes:kubeconfig is set); refusing to run kubectl against its current context - set one of them and run again; nothing was drained or deleted\n",
        );
        assert.equal(r.stdout, "");
    });

    test("a context gets past that check (then kubectl is looked for)", async () => {
        const r = await remove([...base, "--context", "prod-admin"]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^zcloud: n1 \/dev\/sdb: refused: kubectl is not installed where pulumi runs/);
    });

    test("--kubeconfig-from-env needs the content in the environment", async () => {
        const r = await remove([...base, "--kubeconfig-from-env"]);
        assert.equal(r.code, 1);
        assert.equal(r.stderr, "zcloud: n1 /dev/sdb: refused: --kubeconfig-from-env but ZCLOUD_DRAIN_KUBECONFIG is empty; nothing was drained or deleted\n");
    });

    test("the devices annotation key is required and must be a plain key", async () => {
        const at = base.indexOf("--devices-annotation");
        const without = base.filter((_, i) => i !== at && i !== at + 1);
        assert.equal((await remove([...without, "--context", "c"])).code, 2);
        const bad = base.map((a) => (a === "storage.zcloud.io/cephfs-devices" ? "x}{.metadata" : a));
        assert.equal((await remove([...bad, "--context", "c"])).code, 2);
    });

    test("the storage's fsid is required and must look like one", async () => {
        const noFsid = base.filter((_, i) => i !== 2 && i !== 3);
        assert.equal((await remove([...noFsid, "--context", "c"])).code, 2);
        const bad = base.map((a) => (a === fsid ? "$(reboot)" : a));
        assert.equal((await remove([...bad, "--context", "c"])).code, 2);
    });
});

/**
 * A stand-in kubectl (no API server in this tier): records each call's words on one line and
 * answers `get configmap` with NotFound (exit 1) or with `$ZCLOUD_TEST_SCRIPT` (may be empty);
 * with ZCLOUD_TEST_CM=library, only the library is there.
 */
function standInKubectl(): { dir: string; calls: () => string[] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-remove-"));
    fs.writeFileSync(
        path.join(dir, "kubectl"),
        `#!/bin/sh
printf '%s\\n' "$*" >>"${dir}/calls"
case "$*" in
*"get configmap ceph-fs-scripts-library-"*" --output jsonpath={.data.ceph-library\\\\.sh}")
    [ -n "\${ZCLOUD_TEST_CM:-}" ] || { echo 'Error from server (NotFound): configmaps "x" not found' >&2; exit 1; }
    printf '%s' 'zc_lib() { :; }' ;;
*"get configmap"*)
    [ "\${ZCLOUD_TEST_CM:-}" = present ] || { echo 'Error from server (NotFound): configmaps "x" not found' >&2; exit 1; }
    printf '%s' "\${ZCLOUD_TEST_SCRIPT:-}" ;;
*) echo "unexpected call" >&2; exit 1 ;;
esac
`,
        { mode: 0o755 },
    );
    return { dir, calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n") };
}

describe("cephfs-osd-remove.sh: the drain's script set", () => {
    test("--script-configmap and --library-configmap are required and must be ConfigMap names", async () => {
        for (const flag of ["--script-configmap", "--library-configmap"]) {
            const at = base.indexOf(flag);
            assert.equal((await remove([...base.filter((_, i) => i !== at && i !== at + 1), "--context", "c"])).code, 2, flag);
        }
        assert.equal((await remove([...base.map((a) => (a.startsWith("ceph-fs-scripts-") ? "x;reboot" : a)), "--context", "c"])).code, 2);
    });

    test("a missing library fails the delete loudly before anything else is asked of the cluster", async () => {
        const k = standInKubectl();
        const r = await remove([...base, "--context", "prod-admin"], { PATH: `${k.dir}:/usr/bin:/bin` });
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            'Error from server (NotFound): configmaps "x" not found\n' +
                "zcloud: n1 /dev/sdb: refused: cannot read the drain's library script set, ConfigMap ceph-fs-scripts-library-0123456789ab (see above); nothing was drained or deleted\n",
        );
        assert.deepEqual(k.calls(), ["--context prod-admin --namespace zcloud-storage get configmap ceph-fs-scripts-library-0123456789ab --output jsonpath={.data.ceph-library\\.sh}"]);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a missing set fails the delete loudly before anything else is asked of the cluster", async () => {
        const k = standInKubectl();
        const r = await remove([...base, "--context", "prod-admin"], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "library" });
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            'Error from server (NotFound): configmaps "x" not found\n' +
                "zcloud: n1 /dev/sdb: refused: cannot read the drain's script set, ConfigMap ceph-fs-scripts-osd-drain-0123456789ab (see above); nothing was drained or deleted\n",
        );
        assert.deepEqual(k.calls().slice(1), ["--context prod-admin --namespace zcloud-storage get configmap ceph-fs-scripts-osd-drain-0123456789ab --output jsonpath={.data.ceph-osd-drain\\.sh}"]);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a library whose text is not the id its name ends with (altered) refuses", async () => {
        const k = standInKubectl();
        const r = await remove([...base, "--context", "prod-admin"], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "present", ZCLOUD_TEST_SCRIPT: "echo drain" });
        assert.equal(r.code, 1);
        assert.equal(r.stderr, "zcloud: n1 /dev/sdb: refused: ConfigMap ceph-fs-scripts-library-0123456789ab does not hold the drain's library script set 0123456789ab (altered); nothing was drained or deleted\n");
        assert.equal(k.calls().length, 2);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a ConfigMap without the script refuses too", async () => {
        const k = standInKubectl();
        const r = await remove([...base, "--context", "prod-admin"], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "present" });
        assert.equal(r.code, 1);
        assert.equal(r.stderr, "zcloud: n1 /dev/sdb: refused: ConfigMap ceph-fs-scripts-osd-drain-0123456789ab holds no ceph-osd-drain.sh; nothing was drained or deleted\n");
        assert.equal(k.calls().length, 2);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });
});

/**
 * The drains of one storage, one at a time (docs/cephfs.md "Shrinking a storage"): two drains run
 * at once against a stand-in kubectl that serves the two script sets (named by their hashes),
 * one admin pod, the node's annotation, the OSD id from the label, and runs each Ceph step as a
 * recorded sleep. The lock lives in this user's private directory under $TMPDIR.
 */
describe("cephfs-osd-remove.sh: one drain of a storage at a time", () => {
    const id12 = (text: string) => createHash("sha256").update(`${text}\n`).digest("hex").slice(0, 12);
    const library = "zc_lib() { :; }";
    const set = "# ceph-osd-drain.sh stand-in";
    const libraryCm = `ceph-fs-scripts-library-${id12(library)}`;
    const setCm = `ceph-fs-scripts-osd-drain-${id12(set)}`;
    const args = (node: string, dev: string) => [
        ...base.map((a) => (a === "n1" ? node : a === "/dev/sdb" ? dev : a.startsWith("ceph-fs-scripts-osd-drain-") ? setCm : a.startsWith("ceph-fs-scripts-library-") ? libraryCm : a)),
        "--context",
        "prod-admin",
    ];

    function cluster(): { dir: string; tmp: string; log: () => string[] } {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-drains-"));
        const tmp = path.join(dir, "tmp");
        fs.mkdirSync(tmp);
        fs.writeFileSync(
            path.join(dir, "kubectl"),
            `#!/bin/sh
all="$*"
case $all in
*"get configmap ${libraryCm} "*) printf '%s' '${library}' ;;
*"get configmap ${setCm} "*) printf '%s' '${set}' ;;
*"get pods "*) printf 'admin-0' ;;
*"get node "*) printf '/dev/sdb,/dev/sdc' ;;
*" cephfs-osd-id "*) echo 7 ;;
*" ceph-osd-drain check "*) ;;
*" ceph-osd-drain drain "*) echo "drain $PPID" >>"${dir}/log"; sleep 1; echo "drained $PPID" >>"${dir}/log" ;;
*" ceph-osd-drain purge "*) echo "purge $PPID" >>"${dir}/log" ;;
*" ceph-osd-drain zap "*) sleep 0.5; echo "zap $PPID" >>"${dir}/log" ;;
*"get deployment "*) ;;
*"wait --for=delete "*) ;;
*) echo "unexpected call: $all" >&2; exit 1 ;;
esac
`,
            { mode: 0o755 },
        );
        return { dir, tmp, log: () => fs.readFileSync(path.join(dir, "log"), "utf8").trim().split("\n") };
    }
    const env = (k: { dir: string; tmp: string }) => ({ PATH: `${k.dir}:/usr/bin:/bin`, TMPDIR: k.tmp });
    const lockDir = (k: { tmp: string }) => path.join(k.tmp, `zcloud-storage-drains-${process.getuid!()}`);

    test("two drains started together: the second waits for the first (naming it), then drains; their steps never interleave; the lock is gone after", async () => {
        const k = cluster();
        const [one, two] = await Promise.all([remove(args("n1", "/dev/sdb"), env(k)), remove(args("n2", "/dev/sdc"), env(k))]);
        for (const r of [one, two]) assert.equal(r.code, 0, r.stderr);
        const waited = [one, two].filter((r) => /waiting up to 1800s for the drain of n[12] \/dev\/sd[bc]: drains of one storage run one at a time/.test(r.stdout));
        assert.equal(waited.length, 1, `${one.stdout}${two.stdout}`);
        // each drain's steps, in order, before the other's start: drain, drained, purge, zap twice, never mixed
        const steps = k.log().map((l) => l.split(" ")[0]);
        assert.deepEqual(steps, ["drain", "drained", "purge", "zap", "drain", "drained", "purge", "zap"]);
        const pids = k.log().map((l) => l.split(" ")[1]);
        assert.equal(new Set(pids.slice(0, 4)).size, 1);
        assert.equal(new Set(pids.slice(4)).size, 1);
        assert.deepEqual(fs.readdirSync(lockDir(k)), [], "no lock left");
        assert.equal(fs.statSync(lockDir(k)).mode & 0o777, 0o700);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a lock whose holder process is gone (a killed pulumi up) is taken over", async () => {
        const k = cluster();
        fs.mkdirSync(lockDir(k), { mode: 0o700 });
        fs.symlinkSync("2147483646 n9 /dev/sdz", path.join(lockDir(k), `cephfs-drain-${fsid}`));
        const r = await remove(args("n1", "/dev/sdb"), env(k));
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^zcloud: n1 \/dev\/sdb: took over the lock of a drain that is gone \(n9 \/dev\/sdz\)$/m);
        assert.deepEqual(k.log().map((l) => l.split(" ")[0]), ["drain", "drained", "purge", "zap"]);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a lock directory others may write in is refused before anything is drained", async () => {
        const k = cluster();
        fs.mkdirSync(lockDir(k));
        fs.chmodSync(lockDir(k), 0o777);
        const r = await remove(args("n1", "/dev/sdb"), env(k));
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr.trim().split("\n").at(-1),
            `zcloud: n1 /dev/sdb: refused: ${lockDir(k)} is not a private directory (mode drwxrwxrwx): remove it, or set TMPDIR to a directory of your own; nothing was drained or deleted`,
        );
        assert.equal(fs.existsSync(path.join(k.dir, "log")), false, "nothing drained");
        fs.rmSync(k.dir, { recursive: true, force: true });
    });
});
