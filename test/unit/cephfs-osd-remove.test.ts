import assert from "node:assert/strict";
import { execFile } from "node:child_process";
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
