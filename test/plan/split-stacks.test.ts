// One cluster's storages split over three stacks: an owner of the shared resources (Namespace,
// drivers) and two storage stacks that refer to them by name. Planned with the real program under
// the mock runtime; compared with the same storages in one stack.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { expectationNote } from "../../components/stack";
import { diffPlans } from "../../tools/plan/diff";
import { changeNotes } from "../../tools/plan/notes";
import { DAEMON_SET, DEPLOYMENT, PlanRun, PlannedResource, STORAGE_CLASS, baseConfig, planValues, planYaml, resourceNamed, resourcesOfType } from "../helpers/plan";

/** What only the owner of the shared resources may register. */
const sharedTypes = [
    "kubernetes:core/v1:Namespace",
    "kubernetes:storage.k8s.io/v1:CSIDriver",
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch",
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    DEPLOYMENT,
    "zcloud:storage:TopolvmDriver",
    "zcloud:storage:CsiDriverNfs",
    "zcloud:storage:CsiSanlockLvm",
    "zcloud:storage:CephCsiDriver",
];

const fast = { name: "fast", default: true, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/disk/by-id/wwn-0x2"] } };
const bulk = { name: "bulk", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"] } };
const nas = { name: "nas", server: "10.0.0.60", path: "/exports/k8s" };

const owner = { drivers: ["lvm", "nfs"] };
const poolA = { ...baseConfig, sharedResources: "external", lvm: [fast] };
const poolB = { ...baseConfig, sharedResources: "external", lvm: [bulk], nfs: [nas] };
const oneStack = { ...baseConfig, lvm: [fast, bulk], nfs: [nas] };

const runs: Record<string, PlanRun> = {};
before(async () => {
    for (const [name, values] of Object.entries({ owner, poolA, poolB, oneStack })) {
        runs[name] = await planValues(values);
        assert.equal(runs[name].error, undefined, `${name}: ${runs[name].error?.message}`);
    }
});

const key = (r: PlannedResource) => `${r.type} ${r.name}`;
const byUrn = (run: PlanRun) => new Map(run.resources.map((r) => [r.urn, r]));
/** Dependencies by type and name, so plans of different stacks compare. */
const dependencyKeys = (run: PlanRun, r: PlannedResource) => r.dependencies.map((d) => key(byUrn(run).get(d)!)).sort();

describe("split stacks: the owner of the shared resources", () => {
    test("deploys the Namespace and the listed drivers, and no storage", () => {
        const run = runs.owner;
        assert.deepEqual(resourcesOfType(run, "kubernetes:core/v1:Namespace").map((r) => (r.inputs.metadata as any).name), ["zcloud-storage"]);
        assert.deepEqual(run.resources.filter((r) => r.type.startsWith("zcloud:storage:")).map((r) => r.type).sort(), ["zcloud:storage:CsiDriverNfs", "zcloud:storage:TopolvmDriver"]);
        assert.deepEqual(resourcesOfType(run, "kubernetes:storage.k8s.io/v1:CSIDriver").map((r) => (r.inputs.metadata as any).name).sort(), ["nfs.csi.k8s.io", "topolvm.io"]);
        assert.deepEqual(resourcesOfType(run, STORAGE_CLASS), []);
        assert.deepEqual(run.resources.filter((r) => r.type.startsWith("command:") || r.type === "kubernetes:core/v1:NodePatch"), []);
        assert.deepEqual(run.warnings, []);
    });

    test("its drivers are exactly those of the one-stack plan: same resources, same inputs", () => {
        const inOwner = runs.owner.resources.filter((r) => r.type !== "pulumi:pulumi:Stack");
        const inOne = new Map(runs.oneStack.resources.map((r) => [key(r), r]));
        for (const r of inOwner) {
            assert.deepEqual(r.inputs, inOne.get(key(r))?.inputs, key(r));
            assert.deepEqual(dependencyKeys(runs.owner, r), dependencyKeys(runs.oneStack, inOne.get(key(r))!), key(r));
        }
    });
});

describe("split stacks: storage stacks (sharedResources: external)", () => {
    test("register no Namespace, no driver and nothing cluster-wide of a driver", () => {
        for (const name of ["poolA", "poolB"]) {
            assert.deepEqual(runs[name].resources.filter((r) => sharedTypes.includes(r.type)).map(key), [], name);
        }
    });

    test("register their storages: node commands, labels, lvmd, StorageClasses, in the storage namespace", () => {
        assert.deepEqual(resourcesOfType(runs.poolA, "zcloud:storage:LvmStorage").map((r) => r.name), ["fast"]);
        assert.deepEqual(resourcesOfType(runs.poolA, "command:remote:Command").map((r) => r.name).sort(), ["fast-node1-disks", "fast-node2-disks"]);
        assert.deepEqual(resourcesOfType(runs.poolA, "command:local:Command").map((r) => r.name).sort(), ["fast-node1-label", "fast-node2-label"]);
        assert.equal((resourceNamed(runs.poolA, "lvmd-fast", DAEMON_SET).inputs.metadata as any).namespace, "zcloud-storage");
        assert.deepEqual(resourcesOfType(runs.poolB, STORAGE_CLASS).map((r) => (r.inputs.metadata as any).name).sort(), ["bulk", "nas"]);
    });

    test("StorageClasses wait only for what their own stack deploys", () => {
        const fastSc = resourceNamed(runs.poolA, "fast-storageclass", STORAGE_CLASS);
        assert.deepEqual(fastSc.dependencies, [resourceNamed(runs.poolA, "lvmd-fast", DAEMON_SET).urn]);
        assert.deepEqual(resourceNamed(runs.poolB, "nas-storageclass", STORAGE_CLASS).dependencies, []);
        assert.equal(resourceNamed(runs.poolB, "nas-storageclass", STORAGE_CLASS).inputs.provisioner, "nfs.csi.k8s.io");
        assert.equal(fastSc.inputs.provisioner, "topolvm.io");
        // In one stack the same StorageClass also waits for the TopoLVM controller.
        assert.deepEqual(dependencyKeys(runs.oneStack, resourceNamed(runs.oneStack, "fast-storageclass", STORAGE_CLASS)), [
            `${DAEMON_SET} lvmd-fast`,
            `${DEPLOYMENT} topolvm-controller`,
        ]);
    });

    test("every resource of a storage stack is the one-stack plan's resource with the same inputs; only edges to the driver go", () => {
        const inOne = new Map(runs.oneStack.resources.map((r) => [key(r), r]));
        const driverKeys = new Set(runs.owner.resources.map(key));
        for (const name of ["poolA", "poolB"]) {
            for (const r of runs[name].resources.filter((r) => r.type !== "pulumi:pulumi:Stack")) {
                const same = inOne.get(key(r));
                assert.ok(same, `${name}: ${key(r)} is not in the one-stack plan`);
                assert.deepEqual(r.inputs, same.inputs, `${name}: ${key(r)}`);
                assert.deepEqual(
                    dependencyKeys(runs[name], r),
                    dependencyKeys(runs.oneStack, same).filter((d) => !driverKeys.has(d)),
                    `${name}: ${key(r)}`,
                );
            }
        }
    });

    test("together the three stacks register exactly the one-stack plan's resources, each once", () => {
        const split = ["owner", "poolA", "poolB"].flatMap((n) => runs[n].resources.filter((r) => r.type !== "pulumi:pulumi:Stack").map(key));
        const one = runs.oneStack.resources.filter((r) => r.type !== "pulumi:pulumi:Stack").map(key);
        assert.deepEqual(split.sort(), one.sort());
    });

    test("the plan says what the stack expects from the owner", () => {
        // (The other warnings are the unpinned host keys of the base config.)
        const note = (run: PlanRun) => run.warnings.filter((w) => w.startsWith("sharedResources"));
        assert.deepEqual(note(runs.poolA), [expectationNote("zcloud-storage", ["topolvm.io"])]);
        assert.deepEqual(note(runs.poolB), [expectationNote("zcloud-storage", ["topolvm.io", "nfs.csi.k8s.io"])]);
        assert.equal(
            note(runs.poolB)[0],
            "sharedResources: external: this stack creates no Namespace and no CSI driver; it expects the Namespace zcloud-storage and the CSI drivers topolvm.io, nfs.csi.k8s.io, deployed by the stack that owns the shared resources (pulumi up that stack first)",
        );
    });
});

describe("split stacks: config refusals", () => {
    test("a storage stack with CephFS or drivers is refused before any resource", async () => {
        const run = await planValues({
            ...baseConfig,
            sharedResources: "external",
            drivers: ["lvm"],
            cephfs: [{ name: "fs", hosts: { node1: ["/dev/disk/by-id/wwn-0x9"] } }],
        });
        assert.deepEqual(run.error?.issues, [
            {
                path: "drivers",
                message:
                    "a stack with sharedResources: external deploys no driver; list the drivers in the stack that owns the shared resources (sharedResources: owned), or remove this key",
            },
            {
                path: "cephfs[0]",
                message:
                    "a CephFS storage needs its cluster in the config of ceph-csi, which a stack with sharedResources: external does not deploy; keep CephFS storages in the stack that owns the shared resources",
            },
        ]);
        assert.deepEqual(run.resources, []);
    });
});

describe("existing stacks do not change", () => {
    test("stacks/Pulumi.prod.yaml plans the same resources with sharedResources: owned written out: no diff", async () => {
        const text = fs.readFileSync("stacks/Pulumi.prod.yaml", "utf8");
        const doc = yaml.load(text) as { config: Record<string, unknown> };
        const before = await planYaml(text);
        const after = await planYaml(yaml.dump({ config: { ...doc.config, "zcloud-storage:sharedResources": "owned", "zcloud-storage:drivers": [] } }));
        assert.equal(before.error, undefined, before.error?.message);
        assert.equal(after.error, undefined, after.error?.message);
        assert.deepEqual(diffPlans(before.resources, after.resources), []);
        assert.deepEqual(after.resources.map((r) => [r.urn, r.dependencies]), before.resources.map((r) => [r.urn, r.dependencies]));
    });
});

describe("the owner set to external by mistake", () => {
    test("--diff deletes only the Namespace and the drivers, and says under the Namespace what that deletes", async () => {
        const flipped = await planValues({ ...oneStack, sharedResources: "external" });
        assert.equal(flipped.error, undefined, flipped.error?.message);
        const changes = diffPlans(runs.oneStack.resources, flipped.resources);
        assert.deepEqual([...new Set(changes.map((c) => c.kind))], ["delete"]);
        const deleted = new Set(changes.map((c) => key(c.resource)));
        assert.deepEqual([...deleted].sort(), runs.owner.resources.filter((r) => r.type !== "pulumi:pulumi:Stack").map(key).sort());
        const namespace = changes.find((c) => c.resource.type === "kubernetes:core/v1:Namespace")!;
        assert.deepEqual(changeNotes(namespace), [
            "pulumi up deletes the Namespace zcloud-storage with everything in it, including the daemons and Secrets of storages that other stacks deploy there (sharedResources: external); remove those storages first, and never set sharedResources: external on the stack that owns the Namespace (docs/splitting-stacks.md).",
        ]);
    });
});

describe("the example split of stacks/Pulumi.prod.yaml", () => {
    test("prod-pool-a plans prod's local-fast resources with the same inputs, and prod-shared its Namespace and NFS storage", async () => {
        const [prod, shared, poolA] = await Promise.all(["prod", "prod-shared", "prod-pool-a"].map((s) => planYaml(fs.readFileSync(`stacks/Pulumi.${s}.yaml`, "utf8"))));
        for (const run of [prod, shared, poolA]) {
            assert.equal(run.error, undefined, run.error?.message);
        }
        const inProd = new Map(prod.resources.map((r) => [key(r), r]));
        const sameAsProd = (r: PlannedResource) => assert.deepEqual(r.inputs, inProd.get(key(r))?.inputs, key(r));
        const poolResources = poolA.resources.filter((r) => r.type !== "pulumi:pulumi:Stack");
        // per node (3): script copy, disk command, label; the storage's own 5; its monitoring: the
        // component and the storage's rule file (the driver's rules and dashboards are prod-shared's)
        assert.deepEqual(poolResources.filter((r) => r.type.startsWith("zcloud:storage:Monitoring") || r.name.startsWith("zcloud-storage-")).map(key).sort(), [
            "kubernetes:core/v1:ConfigMap zcloud-storage-rules-local-fast",
            "zcloud:storage:Monitoring monitoring",
        ]);
        assert.equal(poolResources.length, 16);
        poolResources.forEach(sameAsProd);
        const sharedStorage = shared.resources.filter((r) => ["kubernetes:core/v1:Namespace", "zcloud:storage:NfsStorage", STORAGE_CLASS].includes(r.type));
        assert.deepEqual(sharedStorage.map(key).sort(), ["kubernetes:core/v1:Namespace namespace", `${STORAGE_CLASS} shared-nfs-storageclass`, "zcloud:storage:NfsStorage shared-nfs"]);
        sharedStorage.forEach(sameAsProd);
    });
});
