import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import * as yaml from "js-yaml";
import { evaluatePolicies } from "../../policy/policies";
import { DAEMON_SET, DEPLOYMENT, PlannedResource, STORAGE_CLASS, planBefore, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";

const subDir = "${pvc.metadata.namespace}/${pvc.metadata.name}/${pv.metadata.name}";

/** Two NFS storages and nothing else: no ssh, no nodes needed. */
const twoShares = {
    nfs: [
        { name: "nas", default: true, server: "10.0.0.60", path: "/exports/k8s", mountOptions: ["nfsvers=4.1", "hard"] },
        { name: "nas-keep", server: "fd00::60", path: "/srv/keep/", onDelete: "retain" },
    ],
};

const podSpec = (r: PlannedResource) => (r.inputs.spec as any).template.spec;

const run = planBefore(twoShares);

describe("NFS graph", () => {
    test("one shared csi-driver-nfs for two NFS storages", () => {
        assert.deepEqual(resourcesOfType(run(), "zcloud:storage:NfsStorage").map((r) => r.name).sort(), ["nas", "nas-keep"]);
        assert.deepEqual(resourcesOfType(run(), "zcloud:storage:CsiDriverNfs").map((r) => r.name), ["csi-driver-nfs"]);
        const driver = resourcesOfType(run(), "kubernetes:storage.k8s.io/v1:CSIDriver");
        assert.equal(driver.length, 1);
        assert.deepEqual((driver[0].inputs as any).spec, { attachRequired: false, volumeLifecycleModes: ["Persistent"], fsGroupPolicy: "File" });
        assert.deepEqual(resourcesOfType(run(), DEPLOYMENT).map((r) => r.name), ["csi-driver-nfs-controller"]);
        assert.deepEqual(resourcesOfType(run(), DAEMON_SET).map((r) => r.name), ["csi-driver-nfs-node"]);
        // No per-storage daemons: each NfsStorage holds exactly its StorageClass.
        for (const storage of resourcesOfType(run(), "zcloud:storage:NfsStorage")) {
            assert.deepEqual(run().resources.filter((r) => r.parent === storage.urn).map((r) => r.type), [STORAGE_CLASS]);
        }
    });

    test("no node labels and no node commands", () => {
        assert.deepEqual(run().resources.filter((r) => r.type === "kubernetes:core/v1:NodePatch" || r.type.startsWith("command:")), []);
    });

    test("StorageClass parameters exactly as configured", () => {
        const nas = resourceNamed(run(), "nas-storageclass", STORAGE_CLASS).inputs as any;
        assert.equal(nas.metadata.name, "nas");
        assert.equal(nas.metadata.annotations["storageclass.kubernetes.io/is-default-class"], "true");
        assert.equal(nas.provisioner, "nfs.csi.k8s.io");
        assert.deepEqual(nas.parameters, { server: "10.0.0.60", share: "/exports/k8s", subDir, onDelete: "archive" });
        assert.deepEqual(nas.mountOptions, ["nfsvers=4.1", "hard"]);
        assert.equal(nas.reclaimPolicy, "Delete");
        assert.equal(nas.volumeBindingMode, "Immediate");
        assert.equal(nas.allowVolumeExpansion, true);

        const keep = resourceNamed(run(), "nas-keep-storageclass", STORAGE_CLASS).inputs as any;
        assert.equal(keep.metadata.annotations["storageclass.kubernetes.io/is-default-class"], "false");
        assert.deepEqual(keep.parameters, { server: "fd00::60", share: "/srv/keep/", subDir, onDelete: "retain" });
        assert.equal(keep.mountOptions, undefined);
    });

    test("each StorageClass depends on the driver's controller and is replaced delete-first", () => {
        const controller = resourceNamed(run(), "csi-driver-nfs-controller", DEPLOYMENT);
        for (const name of ["nas-storageclass", "nas-keep-storageclass"]) {
            const sc = resourceNamed(run(), name, STORAGE_CLASS);
            assert.ok(sc.dependencies.includes(controller.urn), `${name} depends on ${sc.dependencies.join(", ")}`);
            assert.equal(sc.deleteBeforeReplace, true);
        }
    });

    test("controller: provisioner, resizer, liveness and plugin; privileged plugin, host network, storage namespace", () => {
        const controller = resourceNamed(run(), "csi-driver-nfs-controller", DEPLOYMENT);
        const spec = podSpec(controller);
        assert.equal((controller.inputs as any).metadata.namespace, "zcloud-storage");
        assert.deepEqual(spec.containers.map((c: any) => c.name), ["csi-provisioner", "csi-resizer", "liveness-probe", "nfs"]);
        assert.equal(spec.hostNetwork, true);
        assert.equal((controller.inputs as any).spec.replicas, 1);
        const byName = Object.fromEntries(spec.containers.map((c: any) => [c.name, c]));
        assert.ok(byName["csi-provisioner"].args.includes("--extra-create-metadata=true"));
        assert.ok(byName["csi-provisioner"].args.includes("--leader-election-namespace=zcloud-storage"));
        assert.ok(byName.nfs.args.includes("--default-ondelete-policy=delete"));
        assert.equal(byName.nfs.securityContext.privileged, true);
        for (const sidecar of ["csi-provisioner", "csi-resizer", "liveness-probe"]) {
            assert.equal(byName[sidecar].securityContext.privileged, undefined, sidecar);
        }
        // The controller mounts the share in its own mount namespace: no host paths.
        assert.ok(!spec.volumes.some((v: any) => v.hostPath), JSON.stringify(spec.volumes));
    });

    test("node plugin: registrar, liveness and plugin on every node, kubelet paths, no API permissions", () => {
        const node = resourceNamed(run(), "csi-driver-nfs-node", DAEMON_SET);
        const spec = podSpec(node);
        assert.deepEqual(spec.containers.map((c: any) => c.name), ["node-driver-registrar", "liveness-probe", "nfs"]);
        assert.equal(spec.hostNetwork, true);
        assert.equal(spec.affinity, undefined, "runs on every node, no storage label");
        assert.deepEqual(spec.tolerations, [{ operator: "Exists" }]);
        const plugin = spec.containers.find((c: any) => c.name === "nfs");
        assert.equal(plugin.securityContext.privileged, true);
        assert.deepEqual(plugin.volumeMounts.find((m: any) => m.name === "pods-mount-dir"), {
            name: "pods-mount-dir",
            mountPath: "/var/lib/kubelet/pods",
            mountPropagation: "Bidirectional",
        });
        const registrar = spec.containers.find((c: any) => c.name === "node-driver-registrar");
        assert.ok(registrar.args.includes("--kubelet-registration-path=/var/lib/kubelet/plugins/nfs.csi.k8s.io/csi.sock"));
        const roles = run().resources.filter((r) => /Role/.test(r.type) && r.name.startsWith("csi-driver-nfs-node"));
        assert.deepEqual(roles, []);
    });

    test("every image is pinned and the policies pass", () => {
        const images = [...new Set(run().resources.flatMap((r) => ((r.inputs.spec as any)?.template?.spec?.containers ?? []).map((c: any) => c.image)))].sort();
        assert.deepEqual(images, [
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
            "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
            "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
            "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
            "registry.k8s.io/sig-storage/nfsplugin:v4.13.5",
        ]);
        const planned = run().resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }));
        assert.deepEqual(evaluatePolicies(planned, { "storage-privileged-namespace": { namespace: "zcloud-storage" } }), []);
    });
});

describe("NFS config changes", () => {
    test("an imageRegistry mirror rewrites every NFS image", async () => {
        const mirrored = await planValues({ ...twoShares, imageRegistry: "registry.local:5000/mirror" });
        const images = [...new Set(mirrored.resources.flatMap((r) => ((r.inputs.spec as any)?.template?.spec?.containers ?? []).map((c: any) => c.image)))];
        assert.equal(images.length, 5);
        for (const image of images) {
            assert.match(image, /^registry\.local:5000\/mirror\/sig-storage\//);
        }
    });

    test("no NFS storage, no driver", async () => {
        const none = await planValues({ nfs: [] });
        assert.equal(none.error, undefined);
        assert.deepEqual(resourcesOfType(none, "zcloud:storage:CsiDriverNfs"), []);
        assert.deepEqual(resourcesOfType(none, "kubernetes:storage.k8s.io/v1:CSIDriver"), []);
    });

    test("bad inputs register nothing and the plan error lists every issue", async () => {
        const bad = await planValues({
            nfs: [
                { name: "nas", server: "10.0.0.300", path: "exports", onDelete: "archived", mountOptions: ["nfsvers=4.1,hard"] },
                { name: "nas", server: "[fd00::60]", path: "/exports/k8s" },
            ],
        });
        assert.equal(bad.resources.length, 0);
        assert.equal(bad.error?.kind, "config");
        assert.deepEqual(bad.error?.issues, [
            { path: "nfs[0].server", message: '"10.0.0.300" is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.60' },
            { path: "nfs[0].path", message: '"exports" is not an absolute path on the server, e.g. /exports/k8s' },
            { path: "nfs[0].onDelete", message: '"archived" is not one of delete, retain, archive (archive keeps the data in an archived- directory)' },
            {
                path: "nfs[0].mountOptions[0]",
                message: '"nfsvers=4.1,hard" is not a mount option: write one option per item as name or name=value, without spaces or commas',
            },
            { path: "nfs[1].server", message: "write the IPv6 address without brackets: fd00::60" },
        ]);
        assert.match(bad.error!.message, /^zcloud-storage config has 5 errors; nothing was changed:\n  - nfs\[0\]\.server: /);
    });
});

const execFileP = promisify(execFile);
const root = path.resolve(__dirname, "..", "..");

describe("npm run plan -- <stack> --diff", () => {
    test("a changed path replaces only that StorageClass, delete first, and says volumes stay", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nfs-diff-"));
        try {
            const stackFile = (name: string, nasPath: string) => {
                const file = path.join(dir, `Pulumi.${name}.yaml`);
                const config = { "zcloud-storage:nfs": [{ ...twoShares.nfs[0], path: nasPath }, twoShares.nfs[1]] };
                fs.writeFileSync(file, yaml.dump({ config }));
                return file;
            };
            const current = stackFile("current", "/exports/k8s");
            const next = stackFile("next", "/exports/k8s-v2");
            const { stdout } = await execFileP(process.execPath, ["--import", "tsx", "tools/plan.ts", next, "--diff", current], { cwd: root });
            const changes = stdout.split("\n").filter((l) => /^(\+-|\+|~|-) /.test(l));
            assert.equal(changes.length, 1, stdout);
            assert.match(changes[0], /^\+- replace \(delete first\) nas-storageclass  StorageClass nas \(default\) nfs\.csi\.k8s\.io .*share=\/exports\/k8s-v2 .*: parameters\.share changed$/);
            assert.ok(
                stdout.includes(
                    "note: existing volumes stay where they are: volumes of nas already provisioned keep 10.0.0.60:/exports/k8s; only new claims get directories on 10.0.0.60:/exports/k8s-v2. Nothing is moved or copied.",
                ),
                stdout,
            );
            assert.match(stdout, /\n1 to replace\n/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
