import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { containerLogs, heldLeases, inClusterEnter, pvcAndPodList, timer, until } from "../drivers/clusterPods";

describe("clusterPods: what the through-the-sidecars tests share", () => {
    test("until returns the first value the check gives, after polling", async () => {
        let calls = 0;
        const v = await until("a value", () => (++calls >= 2 ? "ready" : undefined), 5_000, () => "never");
        assert.equal(v, "ready");
        assert.equal(calls, 2);
    });

    test("until fails with what it waited for, the time and the explanation", async () => {
        await assert.rejects(until("the PVC bound", () => false, 10, () => "pvc data Pending"), { message: "the PVC bound: not within 10 ms\npvc data Pending" });
    });

    test("timer records each label with its seconds, also when the step fails", async () => {
        const timings: string[] = [];
        const timed = timer(timings);
        assert.equal(await timed("plan", async () => 7), 7);
        await assert.rejects(timed("boot", async () => assert.fail("no guest")), { message: "no guest" });
        assert.equal(timings.length, 2);
        assert.match(timings[0], /^plan \d+\.\d s$/);
        assert.match(timings[1], /^boot \d+\.\d s$/);
    });

    test("containerLogs heads each container's last lines with its name", () => {
        const out = containerLogs({ "csi-provisioner": { output: () => "a\nb\nc" }, "csi-resizer": { output: () => "x" } }, 2);
        assert.equal(out, "--- csi-provisioner:\nb\nc\n--- csi-resizer:\nx");
    });

    test("inClusterEnter writes the ServiceAccount's files and enters the pod network, then a mount namespace that puts them at the fixed path", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cluster-pods-"));
        try {
            const r = inClusterEnter({ dir, network: { enter: ["nsenter", "--net=/proc/1/ns/net", "--"], close: () => {} }, serviceAccount: "csi-driver-nfs-controller", namespace: "zcloud-storage", caData: Buffer.from("CA PEM").toString("base64"), token: "tok", apiPort: 6443 });
            const sa = path.join(dir, "sa-csi-driver-nfs-controller");
            assert.equal(fs.readFileSync(path.join(sa, "token"), "utf8"), "tok");
            assert.equal(fs.statSync(path.join(sa, "token")).mode & 0o777, 0o600);
            assert.equal(fs.readFileSync(path.join(sa, "ca.crt"), "utf8"), "CA PEM");
            assert.equal(fs.readFileSync(path.join(sa, "namespace"), "utf8"), "zcloud-storage");
            assert.deepEqual(r.env, { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: "6443" });
            assert.deepEqual(r.enter.slice(0, 8), ["nsenter", "--net=/proc/1/ns/net", "--", "unshare", "--mount", "--propagation", "private", "--"]);
            assert.match(r.enter[10], /mkdir -p \/var\/run\/secrets\/kubernetes\.io\/serviceaccount && cp/);
            assert.equal(r.enter[11], sa);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    test("heldLeases names the Leases with a holder, sorted; a Lease without one is not held", () => {
        const lease = (name: string, holderIdentity?: string) => ({ metadata: { name }, spec: holderIdentity ? { holderIdentity } : {} });
        const list = { items: [lease("nfs-csi-k8s-io", "csi-driver-nfs-controller-0"), lease("external-resizer-nfs-csi-k8s-io", "csi-driver-nfs-controller-0"), lease("kube-scheduler")] };
        assert.deepEqual(heldLeases(list), ["external-resizer-nfs-csi-k8s-io", "nfs-csi-k8s-io"]);
        assert.deepEqual(heldLeases({ items: [] }), []);
    });

    test("pvcAndPodList: the claim data of the class and access mode, 1Gi; the pod app mounts it, pinned to the node only when one is given", () => {
        const claim = { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: "data" }, spec: { storageClassName: "nfs-delete", accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } } };
        const podSpec = { containers: [{ name: "app", image: "registry.local/app:1" }], volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }] };
        assert.deepEqual(pvcAndPodList({ storageClass: "nfs-delete", accessMode: "ReadWriteMany" }), { apiVersion: "v1", kind: "List", items: [claim, { apiVersion: "v1", kind: "Pod", metadata: { name: "app" }, spec: podSpec }] });
        const pinned = pvcAndPodList({ storageClass: "scfast", accessMode: "ReadWriteOnce", node: "zc-node-1" }) as any;
        assert.deepEqual(pinned.items[0].spec.accessModes, ["ReadWriteOnce"]);
        assert.equal(pinned.items[0].spec.storageClassName, "scfast");
        assert.deepEqual(pinned.items[1].spec, { nodeSelector: { "kubernetes.io/hostname": "zc-node-1" }, ...podSpec });
    });
});
