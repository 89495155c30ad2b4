import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as path from "node:path";
import { describe, test } from "node:test";

const script = path.join(__dirname, "../../components/node/cephfs-osd-remove.sh");
const fsid = "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90";
const base = ["--namespace", "zcloud-storage", "--fsid", fsid, "--node", "n1", "--device", "/dev/sdb", "--devices-annotation", "storage.zcloud.io/cephfs-devices", "--admin-selector", "a=b", "--osd-deployment", "ceph-fs-osd-n1-sdb", "--osd-selector", "storage.zcloud.io/ceph-osd=ceph-fs-osd-n1-sdb"];

/** The drain's delete step as the local command runs it, with a PATH that holds no kubectl (nothing at all). */
function remove(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env: { PATH: "/nonexistent", ZCLOUD_CEPH_DRAIN_SCRIPT: "true", ...env } }, (err, stdout, stderr) =>
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
