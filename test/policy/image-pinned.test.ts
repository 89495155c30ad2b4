import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkImagePinned, parseImage, unpinnedReason } from "../../policy/policies";
import { UNKNOWN_STRING, workload } from "./fixtures";

const DIGEST = "sha256:" + "0123456789abcdef".repeat(4);

describe("storage-image-pinned", () => {
    it("parses registry ports, tags and digests", () => {
        assert.deepEqual(parseImage("registry.local:5000/ceph/ceph"), { repository: "registry.local:5000/ceph/ceph", tag: undefined, digest: undefined });
        assert.deepEqual(parseImage("registry.local:5000/ceph/ceph:v19.2.3"), { repository: "registry.local:5000/ceph/ceph", tag: "v19.2.3", digest: undefined });
        assert.deepEqual(parseImage(`quay.io/ceph/ceph:v19.2.3@${DIGEST}`), { repository: "quay.io/ceph/ceph", tag: "v19.2.3", digest: DIGEST });
    });

    it("accepts version tags and digests, rejects latest, no tag and malformed digests", () => {
        for (const ok of ["ghcr.io/topolvm/topolvm-with-sidecar:0.41.0", `busybox@${DIGEST}`, `busybox:latest@${DIGEST}`, "registry.local:5000/nfsplugin:v4.13.1"]) {
            assert.equal(unpinnedReason(ok), undefined, ok);
        }
        assert.equal(unpinnedReason("busybox"), "has no tag, so Kubernetes pulls ':latest'");
        assert.equal(unpinnedReason("registry.local:5000/busybox"), "has no tag, so Kubernetes pulls ':latest'");
        assert.equal(unpinnedReason("busybox:"), "has no tag, so Kubernetes pulls ':latest'");
        assert.equal(unpinnedReason("busybox:latest"), "is pinned to ':latest'");
        assert.equal(unpinnedReason("busybox:LATEST"), "is pinned to ':latest'");
        assert.equal(unpinnedReason("busybox@sha256:abc"), "has a malformed digest '@sha256:abc'");
    });

    it("passes a workload with pinned images everywhere", () => {
        const ds = workload("DaemonSet", "topolvm-node", {
            namespace: "zcloud-storage",
            initContainers: [{ name: "init", image: "ghcr.io/topolvm/topolvm-with-sidecar:0.41.0" }],
            containers: [{ name: "topolvm-node", image: "ghcr.io/topolvm/topolvm-with-sidecar:0.41.0" }],
        });
        assert.deepEqual(checkImagePinned(ds), []);
    });

    it("reports each unpinned container, init and ephemeral container with an exact message", () => {
        const deploy = workload("Deployment", "shared-fs-mgr", {
            initContainers: [{ name: "chown", image: "busybox" }],
            containers: [{ name: "mgr", image: "quay.io/ceph/ceph:latest" }, { name: "ok", image: "quay.io/ceph/ceph:v19.2.3" }],
            ephemeralContainers: [{ name: "debug", image: "nicolaka/netshoot" }],
        });
        assert.deepEqual(checkImagePinned(deploy), [
            "Deployment 'shared-fs-mgr' init container 'chown' image 'busybox' has no tag, so Kubernetes pulls ':latest': " +
                "a moving tag lets nodes run different builds, and neither a rollback nor an air-gapped mirror can " +
                "reproduce what ran. Pin a release tag (busybox:<version>) or a digest (busybox@sha256:<digest>).",
            "Deployment 'shared-fs-mgr' container 'mgr' image 'quay.io/ceph/ceph:latest' is pinned to ':latest': " +
                "a moving tag lets nodes run different builds, and neither a rollback nor an air-gapped mirror can " +
                "reproduce what ran. Pin a release tag (quay.io/ceph/ceph:<version>) or a digest (quay.io/ceph/ceph@sha256:<digest>).",
            "Deployment 'shared-fs-mgr' ephemeral container 'debug' image 'nicolaka/netshoot' has no tag, so Kubernetes " +
                "pulls ':latest': a moving tag lets nodes run different builds, and neither a rollback nor an air-gapped " +
                "mirror can reproduce what ran. Pin a release tag (nicolaka/netshoot:<version>) or a digest " +
                "(nicolaka/netshoot@sha256:<digest>).",
        ]);
    });

    it("covers every workload kind, including a bare Pod and a Job", () => {
        for (const kind of ["DaemonSet", "Deployment", "StatefulSet", "Job", "Pod"] as const) {
            const w = workload(kind, "w", { containers: [{ name: "c", image: "busybox" }] });
            assert.equal(checkImagePinned(w).length, 1, kind);
        }
    });

    it("skips images not known during preview and tolerates missing specs", () => {
        const w = workload("DaemonSet", "w", {
            containers: [{ name: "c", image: UNKNOWN_STRING }, { name: "d" }, { name: "e", image: "[unknown]" }],
        });
        assert.deepEqual(checkImagePinned(w), []);
        assert.deepEqual(checkImagePinned({ ...w, props: { spec: UNKNOWN_STRING } }), []);
        assert.deepEqual(checkImagePinned({ ...w, props: undefined }), []);
        assert.deepEqual(checkImagePinned({ ...w, props: { spec: { template: { spec: { containers: UNKNOWN_STRING } } } } }), []);
    });
});
