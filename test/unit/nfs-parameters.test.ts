import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { images } from "../../components/images";
import { nfsControllerClusterRules, nfsControllerNamespaceRules } from "../../components/nfs/rbac";
import { nfsDriverName, nfsStorageClassParameters, nfsSubDirPattern } from "../../components/nfs/parameters";

describe("nfsStorageClassParameters", () => {
    test("server, share, subDir pattern and onDelete, exactly as configured", () => {
        assert.deepEqual(nfsStorageClassParameters({ server: "10.0.0.60", path: "/exports/k8s/", onDelete: "retain" }), {
            server: "10.0.0.60",
            share: "/exports/k8s/",
            subDir: "${pvc.metadata.namespace}/${pvc.metadata.name}/${pv.metadata.name}",
            onDelete: "retain",
        });
    });

    test("IPv6 servers stay bare (the driver brackets them for mount)", () => {
        assert.equal(nfsStorageClassParameters({ server: "fd00::60", path: "/", onDelete: "archive" }).server, "fd00::60");
    });

    test("the subDir pattern uses only placeholders csi-driver-nfs replaces", () => {
        const placeholders = nfsSubDirPattern.match(/\$\{[^}]+\}/g);
        assert.deepEqual(placeholders, ["${pvc.metadata.namespace}", "${pvc.metadata.name}", "${pv.metadata.name}"]);
        assert.equal(nfsSubDirPattern.replace(/\$\{[^}]+\}/g, "x"), "x/x/x");
    });

    test("driver name", () => {
        assert.equal(nfsDriverName, "nfs.csi.k8s.io");
    });
});

describe("csi-driver-nfs controller permissions", () => {
    const all = [...nfsControllerClusterRules, ...nfsControllerNamespaceRules];
    const verbsOf = (resource: string) => all.filter((r) => (r.resources as string[]).includes(resource)).flatMap((r) => r.verbs as string[]);

    test("no secrets, no snapshots, no wildcards", () => {
        const resources = all.flatMap((r) => r.resources as string[]);
        assert.ok(!resources.includes("secrets"));
        assert.ok(!all.some((r) => (r.apiGroups as string[]).includes("snapshot.storage.k8s.io")));
        assert.ok(!all.some((r) => [...(r.verbs as string[]), ...resources].includes("*")));
    });

    test("what the provisioner and the resizer need", () => {
        assert.deepEqual(verbsOf("persistentvolumes").sort(), ["create", "delete", "get", "list", "patch", "update", "watch"]);
        assert.deepEqual(verbsOf("persistentvolumeclaims").sort(), ["get", "list", "update", "watch"]);
        assert.deepEqual(verbsOf("persistentvolumeclaims/status").sort(), ["patch", "update"]);
        assert.deepEqual(verbsOf("storageclasses").sort(), ["get", "list", "watch"]);
    });

    test("leases only in the namespace", () => {
        assert.ok(!nfsControllerClusterRules.some((r) => (r.resources as string[]).includes("leases")));
        assert.deepEqual(nfsControllerNamespaceRules, [
            { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list", "watch", "create", "update", "patch"] },
        ]);
    });
});

test("NFS images are pinned to exact tags from registry.k8s.io/sig-storage", () => {
    const nfsImages = [images.nfsPlugin, images.nfsProvisioner, images.nfsResizer, images.nfsLivenessProbe, images.nfsNodeDriverRegistrar];
    for (const image of nfsImages) {
        assert.match(image, /^registry\.k8s\.io\/sig-storage\/[a-z-]+:v\d+\.\d+\.\d+$/);
    }
    assert.equal(images.nfsPlugin, "registry.k8s.io/sig-storage/nfsplugin:v4.13.5");
});
