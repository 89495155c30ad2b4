import assert from "node:assert/strict";
import { before, test } from "node:test";
import * as path from "path";
import { kubernetesSchemaNames, toManifest } from "../../tools/plan/manifests";
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

test("the schema check catches a broken object (it can fail)", () => {
    assert.throws(
        () => validate({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "x" }, spec: { selector: {}, template: { spec: { containers: [{ name: 1 }] } } } }),
        /containers\/0\/name must be string/,
    );
});

test("a CRD manifest carries Kubernetes' schema extension names, not the SDK's", () => {
    const crds = runs.prod.resources.map(toManifest).filter((m) => m?.kind === "CustomResourceDefinition");
    assert.ok(crds.length >= 1);
    const text = JSON.stringify(crds);
    assert.doesNotMatch(text, /x_kubernetes_/);
    assert.match(text, /"x-kubernetes-preserve-unknown-fields":true/);
    assert.match(text, /"x-kubernetes-int-or-string":true/);
});

test("schema names: a CRD's own field under properties keeps its name", () => {
    assert.deepEqual(kubernetesSchemaNames({ properties: { x_kubernetes_mine: { type: "string", x_kubernetes_list_type: "atomic" } }, x_kubernetes_embedded_resource: true }), {
        properties: { x_kubernetes_mine: { type: "string", "x-kubernetes-list-type": "atomic" } },
        "x-kubernetes-embedded-resource": true,
    });
});
