import assert from "node:assert/strict";
import { before, test } from "node:test";
import * as path from "path";
import { toKubernetesFieldNames, toManifest } from "../../tools/plan/manifests";
import { loadStackFile } from "../../tools/plan/stackFile";
import { planConfig } from "../../tools/plan/runner";
import { PlanRun } from "../helpers/plan";

/**
 * Every Kubernetes object the example stacks render is checked against the Kubernetes API
 * schemas (kubernetes-models). Objects of CRDs the cluster brings (snapshot classes) are not in
 * those schemas; they are checked against their documented required fields instead.
 */
const externalKinds: Record<string, (m: any) => void> = {
    "snapshot.storage.k8s.io/v1/VolumeSnapshotClass": (m) => {
        assert.equal(typeof m.metadata?.name, "string");
        assert.equal(typeof m.driver, "string");
        assert.ok(["Delete", "Retain"].includes(m.deletionPolicy), `deletionPolicy ${m.deletionPolicy}`);
    },
};

function validate(manifest: Record<string, any>): void {
    const key = `${manifest.apiVersion}/${manifest.kind}`;
    if (externalKinds[key]) {
        externalKinds[key](manifest);
        return;
    }
    // kubernetes-models is organised like the API: kubernetes-models/<group>/<version> (core: v1).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const group = require(`kubernetes-models/${manifest.apiVersion}`);
    const Model = group[manifest.kind];
    assert.ok(Model, `kubernetes-models has no ${key}`);
    new Model(manifest).validate();
}

const stacks = ["dev", "prod"];
const runs: Record<string, PlanRun> = {};
before(async () => {
    await Promise.all(stacks.map(async (s) => (runs[s] = await planConfig(loadStackFile(path.join("stacks", `Pulumi.${s}.yaml`)).config))));
});

for (const stack of stacks) {
    test(`every Kubernetes object of the ${stack} stack is valid against the API schema`, () => {
        const run = runs[stack];
        assert.equal(run.error, undefined, run.error?.message);
        const manifests = run.resources.map(toManifest).filter((m): m is Record<string, any> => m !== undefined);
        assert.ok(manifests.length >= 15, `only ${manifests.length} manifests`);
        const failures: string[] = [];
        for (const m of manifests) {
            try {
                validate(m);
            } catch (e) {
                failures.push(`${m.kind} ${m.metadata?.name}: ${(e as Error).message}`);
            }
        }
        assert.deepEqual(failures, []);
    });
}

/** Keys of a manifest at any depth. */
function keysOf(value: unknown): string[] {
    if (Array.isArray(value)) {
        return value.flatMap(keysOf);
    }
    if (value === null || typeof value !== "object") {
        return [];
    }
    return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
}

test("the rendered LogicalVolume CRD names its schema extensions as Kubernetes does", () => {
    const run = runs.dev;
    assert.equal(run.error, undefined, run.error?.message);
    const crd = run.resources.map(toManifest).find((m) => m?.kind === "CustomResourceDefinition") as Record<string, any>;
    assert.ok(crd, "the dev stack renders no CRD");
    const schema = crd.spec.versions[0].schema.openAPIV3Schema;
    assert.equal(schema.properties.spec["x-kubernetes-preserve-unknown-fields"], true);
    assert.equal(schema.properties.status["x-kubernetes-preserve-unknown-fields"], true);
    assert.equal(schema.properties.spec.properties.size["x-kubernetes-int-or-string"], true);
    for (const stack of stacks) {
        const pulumiNames = runs[stack].resources.flatMap((r) => keysOf(toManifest(r))).filter((k) => k.startsWith("x_kubernetes_"));
        assert.deepEqual(pulumiNames, [], `${stack} renders Pulumi input names`);
    }
});

test("Pulumi's x_kubernetes_* input names become Kubernetes' at any depth; other keys stay", () => {
    assert.deepEqual(
        toKubernetesFieldNames({
            spec_name: "a_b",
            list: [{ x_kubernetes_list_map_keys: ["name"], x_kubernetes_list_type: "map" }],
            nested: { items: { x_kubernetes_validations: [{ rule: "self.x_kubernetes_keep" }] } },
        }),
        {
            spec_name: "a_b",
            list: [{ "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map" }],
            nested: { items: { "x-kubernetes-validations": [{ rule: "self.x_kubernetes_keep" }] } },
        },
    );
});

test("the schema check catches a broken object (it can fail)", () => {
    assert.throws(
        () => validate({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "x" }, spec: { selector: {}, template: { spec: { containers: [{ name: 1 }] } } } }),
        /containers\/0\/name must be string/,
    );
});
