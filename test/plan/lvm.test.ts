import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as yaml from "js-yaml";
import { COMMAND, COPY, DAEMON_SET, DEPLOYMENT, LOCAL as LABEL, STORAGE_CLASS, baseConfig, planBefore, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";
import { bundleOf } from "../helpers/bundles";

const twoTiers = {
    ...baseConfig,
    lvm: [
        { name: "ssd", default: true, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/disk/by-id/wwn-0x2", "/dev/disk/by-id/wwn-0x3"] } },
        { name: "hdd", hosts: { node3: ["/dev/disk/by-id/wwn-0x4"] }, thin: { overprovisionRatio: 3, snapshots: true } },
    ],
};

const run = planBefore(twoTiers);

describe("LVM graph", () => {
    test("one component per storage and one shared TopoLVM driver", () => {
        assert.deepEqual(resourcesOfType(run(), "zcloud:storage:LvmStorage").map((r) => r.name).sort(), ["hdd", "ssd"]);
        assert.equal(resourcesOfType(run(), "zcloud:storage:TopolvmDriver").length, 1);
        assert.equal(resourcesOfType(run(), "kubernetes:storage.k8s.io/v1:CSIDriver").length, 1);
        assert.equal(resourcesOfType(run(), "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch").length, 1);
    });

    test("every child of a storage is parented to its component", () => {
        for (const storage of ["ssd", "hdd"]) {
            const component = resourceNamed(run(), storage, "zcloud:storage:LvmStorage");
            const children = run().resources.filter((r) => r.parent === component.urn);
            const expected = storage === "ssd" ? 2 : 1;
            assert.equal(children.filter((r) => r.type === COMMAND).length, expected);
            assert.equal(children.filter((r) => r.type === COPY).length, expected);
            assert.equal(children.filter((r) => r.type === LABEL).length, expected);
            assert.equal(children.filter((r) => r.type === STORAGE_CLASS).length, 1);
            assert.equal(children.filter((r) => r.type === DAEMON_SET).length, 1);
        }
    });

    test("one disk command per (storage, node) named storage-node-disks, running the reconcile script", () => {
        const names = resourcesOfType(run(), COMMAND).map((r) => r.name).sort();
        assert.deepEqual(names, ["hdd-node3-disks", "ssd-node1-disks", "ssd-node2-disks"]);
        const cmd = resourceNamed(run(), "ssd-node2-disks");
        assert.equal(cmd.inputs.update, undefined, "an update runs create again: the same idempotent script, stored once");
        const { sha256 } = bundleOf(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]);
        const bundle = ` lvm-reconcile .zcloud-storage/scripts/${sha256}.sh ${sha256}`;
        assert.ok(String(cmd.inputs.create).endsWith(`${bundle} apply --vg zcloud-ssd --node node2 /dev/disk/by-id/wwn-0x2 /dev/disk/by-id/wwn-0x3`), String(cmd.inputs.create));
        assert.ok(String(cmd.inputs.delete).endsWith(`${bundle} release --vg zcloud-ssd`), String(cmd.inputs.delete));
        assert.ok(!String(cmd.inputs.create).includes("zc_log"), "the scripts travel in the bundle, not in the command");
        assert.ok(String(cmd.inputs.create).startsWith("sh -c '"), "root runs without sudo");
        assert.equal(cmd.deleteBeforeReplace, true);
    });

    test("non-root SSH users run the script through sudo -n", () => {
        const cmd = resourceNamed(run(), "hdd-node3-disks");
        assert.ok(String(cmd.inputs.create).startsWith("sudo -n sh -c '"));
        assert.ok(String(cmd.inputs.delete).startsWith("sudo -n sh -c '"));
        assert.match(String(cmd.inputs.create), / lvm-reconcile \S+ [0-9a-f]{64} apply --vg zcloud-hdd --node node3 --thin-pool pool --thin-percent 90 \/dev\/disk\/by-id\/wwn-0x4$/);
    });

    test("each disk command's script set is copied to its node once: a file asset named by its sha256, no triggers anywhere", () => {
        const { sha256 } = bundleOf(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]);
        for (const cmd of resourcesOfType(run(), COMMAND)) {
            const copy = resourceNamed(run(), `${cmd.name}-scripts`, COPY);
            assert.equal(copy.parent, cmd.parent);
            const source = copy.inputs.source as { asset: string; path: string; sha256: string };
            assert.deepEqual({ ...source, path: undefined }, { asset: "file", path: undefined, sha256 });
            assert.ok(source.path.endsWith(`/${sha256}.sh`), source.path);
            assert.equal(copy.inputs.remotePath, `.zcloud-storage/scripts/${sha256}.sh`);
            assert.equal(copy.inputs.connection, "[secret]");
            // A hash in triggers would replace the command, and a replacement runs the release.
            assert.equal(cmd.inputs.triggers, undefined);
            assert.equal(copy.inputs.triggers, undefined);
            assert.ok(String(cmd.inputs.create).includes(` lvm-reconcile ${copy.inputs.remotePath} ${sha256} apply `), `${cmd.name} runs what ${copy.name} copies`);
            assert.ok(String(cmd.inputs.delete).includes(` lvm-reconcile ${copy.inputs.remotePath} ${sha256} release `), `${cmd.name} releases with what ${copy.name} copies`);
        }
    });

    test("the label of a node depends on that node's disk command and nothing else of another node", () => {
        for (const [storage, node] of [["ssd", "node1"], ["ssd", "node2"], ["hdd", "node3"]]) {
            const label = resourceNamed(run(), `${storage}-${node}-label`, LABEL);
            const disks = resourceNamed(run(), `${storage}-${node}-disks`);
            assert.deepEqual(label.dependencies, [disks.urn]);
            const devices = (twoTiers.lvm.find((s) => s.name === storage)!.hosts as unknown as Record<string, string[]>)[node].join(",");
            assert.deepEqual(JSON.parse(String(label.inputs.stdin)), {
                apiVersion: "v1",
                kind: "Node",
                metadata: { name: node, labels: { "storage.zcloud.io/lvm": storage }, annotations: { "storage.zcloud.io/lvm-devices": devices } },
            });
        }
    });

    test("a label command server-side-applies its stdin under the storage's own field manager, and its delete relinquishes", () => {
        const label = resourceNamed(run(), "ssd-node2-label", LABEL);
        // No kubernetes:context or kubeconfig in this stack: kubectl's defaults, as the provider's.
        const get = "n=$(kubectl get node node2 --ignore-not-found -o 'jsonpath={.metadata.name}{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}' </dev/null);";
        const apply = "kubectl apply --server-side --field-manager=zcloud-storage/ssd -f - >/dev/null";
        assert.ok(String(label.inputs.create).startsWith(`set -eu;${get}[ "$n" = node2 ]||`), String(label.inputs.create));
        assert.ok(String(label.inputs.create).endsWith(`;${apply}`));
        assert.ok(String(label.inputs.delete).startsWith(`set -eu;${get}[ -z "$n" ]||{ [ "$n" = node2 ]||`), String(label.inputs.delete));
        assert.ok(String(label.inputs.delete).endsWith(`printf %s '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node2"}}'|${apply};}`));
        for (const field of ["update", "triggers", "environment", "interpreter", "dir"]) {
            assert.equal(label.inputs[field], undefined, field);
        }
        assert.doesNotMatch(String(label.inputs.create), /force-conflicts/);
    });

    test("disk commands depend only on their own node's script copy: one node's slow or failed prep blocks no other node", () => {
        for (const cmd of resourcesOfType(run(), COMMAND)) {
            assert.deepEqual(cmd.dependencies, [resourceNamed(run(), `${cmd.name}-scripts`, COPY).urn], `${cmd.name} has dependencies ${cmd.dependencies.join(", ")}`);
        }
        for (const copy of resourcesOfType(run(), COPY)) {
            assert.deepEqual(copy.dependencies, [], `${copy.name} has dependencies ${copy.dependencies.join(", ")}`);
        }
        // Nothing node-specific is a dependency of another storage-wide resource either.
        const nodeUrns = new Set([...resourcesOfType(run(), COMMAND), ...resourcesOfType(run(), LABEL), ...resourcesOfType(run(), COPY)].map((r) => r.urn));
        for (const r of run().resources.filter((r) => r.type !== LABEL && r.type !== COMMAND)) {
            for (const dep of r.dependencies) {
                assert.ok(!nodeUrns.has(dep), `${r.name} waits for node resource ${dep}`);
            }
        }
    });

    test("each StorageClass comes after the CSI controller and its own lvmd", () => {
        const controller = resourceNamed(run(), "topolvm-controller", DEPLOYMENT);
        for (const storage of ["ssd", "hdd"]) {
            const sc = resourceNamed(run(), `${storage}-storageclass`);
            assert.deepEqual(sc.dependencies.sort(), [controller.urn, resourceNamed(run(), `lvmd-${storage}`, DAEMON_SET).urn].sort());
            assert.equal(sc.deleteBeforeReplace, true);
            assert.equal(sc.inputs.provisioner, "topolvm.io");
            assert.equal(sc.inputs.volumeBindingMode, "WaitForFirstConsumer");
            assert.equal(sc.inputs.allowVolumeExpansion, true);
            assert.deepEqual(sc.inputs.parameters, { "topolvm.io/device-class": storage, "csi.storage.k8s.io/fstype": "xfs" });
            const isDefault = (sc.inputs.metadata as any).annotations["storageclass.kubernetes.io/is-default-class"];
            assert.equal(isDefault, storage === "ssd" ? "true" : "false");
        }
    });

    test("each storage's lvmd selects only its own labelled nodes and reads its own device class", () => {
        for (const storage of ["ssd", "hdd"]) {
            const ds = resourceNamed(run(), `lvmd-${storage}`, DAEMON_SET);
            const pod = (ds.inputs.spec as any).template.spec;
            assert.deepEqual(pod.nodeSelector, { "storage.zcloud.io/lvm": storage });
            assert.equal(pod.hostPID, true);
            assert.equal(pod.containers[0].securityContext.privileged, true);
            const config = resourceNamed(run(), `${storage}-lvmd-config`);
            const lvmd = yaml.load((config.inputs.data as any)["lvmd.yaml"]) as any;
            assert.equal(lvmd["device-classes"].length, 1);
            assert.equal(lvmd["device-classes"][0].name, storage);
            assert.equal(lvmd["device-classes"][0]["volume-group"], `zcloud-${storage}`);
        }
        const thin = yaml.load((resourceNamed(run(), "hdd-lvmd-config").inputs.data as any)["lvmd.yaml"]) as any;
        assert.deepEqual(thin["device-classes"][0], {
            name: "hdd",
            "volume-group": "zcloud-hdd",
            default: true,
            "spare-gb": 0,
            type: "thin",
            "thin-pool": { name: "pool", "overprovision-ratio": 3 },
        });
    });

    test("the TopoLVM node plugin runs on nodes of any LVM storage, by label", () => {
        const ds = resourceNamed(run(), "topolvm-node", DAEMON_SET);
        const terms = (ds.inputs.spec as any).template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
        assert.deepEqual(terms, [{ matchExpressions: [{ key: "storage.zcloud.io/lvm", operator: "Exists" }] }]);
    });

    test("controller: webhooks off, capacity tracking on, snapshotter only because a storage asks for snapshots", () => {
        const containers = (resourceNamed(run(), "topolvm-controller", DEPLOYMENT).inputs.spec as any).template.spec.containers;
        const byName = Object.fromEntries(containers.map((c: any) => [c.name, c]));
        assert.deepEqual(Object.keys(byName).sort(), ["csi-provisioner", "csi-resizer", "csi-snapshotter", "liveness-probe", "topolvm-controller"]);
        assert.ok(byName["topolvm-controller"].command.includes("--enable-webhooks=false"));
        assert.ok(byName["csi-provisioner"].command.includes("--enable-capacity"));
        const snapshotClass = resourceNamed(run(), "hdd-snapshotclass");
        assert.equal(snapshotClass.inputs.driver, "topolvm.io");
        assert.equal(run().resources.filter((r) => r.name === "ssd-snapshotclass").length, 0);
    });

    test("every image is the pinned TopoLVM image", () => {
        const images = run().resources.flatMap((r) => {
            const spec = (r.inputs.spec as any)?.template?.spec;
            return spec ? spec.containers.map((c: any) => c.image) : [];
        });
        assert.ok(images.length >= 8);
        assert.deepEqual([...new Set(images)], ["ghcr.io/topolvm/topolvm-with-sidecar:0.41.0"]);
    });

    test("secrets never appear in plain inputs", () => {
        const text = JSON.stringify(run().resources.map((r) => r.inputs));
        assert.ok(!text.includes("offline-secret("), "a secure config value reached a plain input");
        for (const cmd of resourcesOfType(run(), COMMAND)) {
            assert.equal(cmd.inputs.connection, "[secret]");
            assert.equal((cmd.policyInputs as any).connection.privateKey, "[secret]");
        }
        assert.equal((resourceNamed(run(), "ssd-node1-disks").policyInputs as any).connection.hostKey, baseConfig.ssh.hostKeys.node1);
        assert.equal((resourceNamed(run(), "hdd-node3-disks").policyInputs as any).connection.port, 2222);
    });

    test("the storage namespace allows privileged pods", () => {
        const ns = resourceNamed(run(), "namespace");
        assert.equal((ns.inputs.metadata as any).labels["pod-security.kubernetes.io/enforce"], "privileged");
    });
});

describe("LVM config changes", () => {
    test("an imageRegistry mirror rewrites every image", async () => {
        const mirrored = await planValues({ ...twoTiers, imageRegistry: "registry.local:5000" });
        const images = mirrored.resources.flatMap((r) => ((r.inputs.spec as any)?.template?.spec?.containers ?? []).map((c: any) => c.image));
        assert.deepEqual([...new Set(images)], ["registry.local:5000/topolvm/topolvm-with-sidecar:0.41.0"]);
    });

    test("a bad config registers nothing and lists every error", async () => {
        const bad = await planValues({
            ...baseConfig,
            lvm: [
                { name: "ssd", hosts: { node9: ["/dev/sdb"] } },
                { name: "ssd", hosts: { node1: ["sdb"] }, wipe: "yes" },
            ],
        });
        assert.equal(bad.resources.length, 0);
        assert.equal(bad.error?.kind, "config");
        assert.deepEqual(bad.error?.issues, [
            { path: "lvm[1].hosts.node1[0]", message: '"sdb" is not an absolute device path under /dev, e.g. /dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
            { path: "lvm[1].wipe", message: '"yes" is not true, false or a map of node to the declared devices that may be wiped, e.g. { node2: [/dev/sdc] }' },
            { path: "lvm[0].hosts.node9", message: 'node9 is not in zcloud-storage:nodes; did you mean "node1"?; add it there with its SSH address' },
        ]);
    });

    test("a clear-text SSH key is refused", async () => {
        const bad = await planValues({ ...twoTiers, ssh: { ...baseConfig.ssh, privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----" } });
        assert.equal(bad.resources.length, 0);
        assert.deepEqual(bad.error?.issues, [
            {
                path: "ssh.privateKey",
                message: "is stored in clear text; set it as a secret: pulumi config set -s test --secret --path ssh.privateKey (read the value from a file or stdin, not the command line)",
            },
        ]);
    });

    test("an iscsi storage on an LVM node plans next to the LVM storages, nothing of theirs changes", async () => {
        const r = await planValues({
            ...twoTiers,
            iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", lun: 1, initiators: ["node1"] }],
        });
        assert.equal(r.error, undefined, r.error?.message);
        assert.deepEqual(resourcesOfType(r, "zcloud:storage:IscsiStorage").map((x) => x.name), ["san"]);
        const lvmOnly = (x: { resources: typeof r.resources }) => x.resources.filter((res) => !/san|sanlock/.test(res.urn)).map((res) => JSON.stringify(res));
        assert.deepEqual(lvmOnly(r), lvmOnly(run()));
    });
});
