import assert from "node:assert/strict";
import { test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { renderChanges } from "../../tools/plan/render";
import { PlannedResource } from "../../tools/plan/model";

/** A planned custom resource of `type` named `name` with these inputs (and options). */
function planned(type: string, name: string, inputs: Record<string, unknown>, options: Partial<PlannedResource> = {}): PlannedResource {
    return { urn: `urn:pulumi:s::p::${type}::${name}`, type, name, parent: "", dependencies: [], inputs, custom: true, deleteBeforeReplace: false, retainOnDelete: false, ...options };
}

/** One resource before and after an input change; returns the operation the offline diff plans. */
function operation(type: string, before: Record<string, unknown>, after: Record<string, unknown>, replaceOnChanges: string[] = []): string {
    const r = (inputs: Record<string, unknown>) => planned(type, "x", inputs, { replaceOnChanges });
    const changes = diffPlans([r(before)], [r(after)]);
    return changes.map((c) => c.kind).join(",") || "same";
}

test("the kubernetes provider's rules: replace on immutable data, update elsewhere", () => {
    assert.equal(operation("kubernetes:core/v1:Secret", { stringData: { a: "1" } }, { stringData: { a: "2" } }), "replace");
    assert.equal(operation("kubernetes:core/v1:ConfigMap", { data: { a: "1" } }, { data: { a: "2" } }), "replace");
    assert.equal(operation("kubernetes:core/v1:ConfigMap", { metadata: { labels: { a: "1" } } }, { metadata: { labels: { a: "2" } } }), "update");
    assert.equal(operation("kubernetes:batch/v1:Job", { spec: { template: { spec: { a: 1 } } } }, { spec: { template: { spec: { a: 2 } } } }), "replace");
    assert.equal(operation("kubernetes:storage.k8s.io/v1:StorageClass", { parameters: { share: "/a" } }, { parameters: { share: "/b" } }), "replace");
    assert.equal(operation("kubernetes:storage.k8s.io/v1:StorageClass", { mountOptions: ["a"] }, { mountOptions: ["b"] }), "update");
    assert.equal(operation("kubernetes:storage.k8s.io/v1:CSIDriver", { spec: { podInfoOnMount: true } }, { spec: { podInfoOnMount: false } }), "update");
    assert.equal(operation("kubernetes:apps/v1:DaemonSet", { spec: { selector: { matchLabels: { a: "1" } } } }, { spec: { selector: { matchLabels: { a: "2" } } } }), "replace");
    assert.equal(operation("kubernetes:apps/v1:DaemonSet", { spec: { template: { a: 1 } } }, { spec: { template: { a: 2 } } }), "update");
    assert.equal(operation("kubernetes:core/v1:NodePatch", { metadata: { name: "n1", labels: { a: "1" } } }, { metadata: { name: "n1", labels: { a: "2" } } }), "update");
    assert.equal(operation("kubernetes:core/v1:NodePatch", { metadata: { name: "n1" } }, { metadata: { name: "n2" } }), "replace");
});

test("replaceOnChanges the program or a provider SDK registers replaces on those paths", () => {
    const sc = "kubernetes:storage.k8s.io/v1:StorageClass";
    assert.equal(operation(sc, { reclaimPolicy: "Delete" }, { reclaimPolicy: "Retain" }, ["reclaimPolicy", "volumeBindingMode"]), "replace");
    const cmd = "command:remote:Command";
    assert.equal(operation(cmd, { triggers: ["a"], create: "x" }, { triggers: ["b"], create: "x" }, ["triggers[*]"]), "replace");
    assert.equal(operation(cmd, { triggers: ["a"], create: "x" }, { triggers: ["a"], create: "y" }, ["triggers[*]"]), "update");
});

test("random resources are immutable: any input change replaces", () => {
    assert.equal(operation("random:index/randomBytes:RandomBytes", { length: 16 }, { length: 32 }), "replace");
    assert.equal(operation("random:index/randomBytes:RandomBytes", { length: 16 }, { length: 16 }), "same");
});

test("ignoreChanges keeps an input at its old value: no update, no replace of that path; other paths still count", () => {
    const r = (inputs: Record<string, unknown>, ignoreChanges?: string[]) =>
        planned("random:index/randomBytes:RandomBytes", "k", inputs, ignoreChanges ? { ignoreChanges } : {});
    assert.deepEqual(diffPlans([r({ length: 16 })], [r({ length: 32 }, ["length"])]), []);
    assert.deepEqual(diffPlans([r({ length: 16 })], [r({ length: 32 })]).map((c) => c.kind), ["replace"]);
    assert.deepEqual(diffPlans([r({ length: 16, keepers: { a: "1" } })], [r({ length: 32, keepers: { a: "2" } }, ["length"])]).map((c) => `${c.kind} ${c.fields.join(",")}`), ["replace keepers.a"]);
});

test("a node label command's stdin change reads as what changed on the Node, not as stdin", () => {
    const node = (labels: Record<string, string>, devices: string) => JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: "n1", labels, annotations: { "storage.zcloud.io/lvm-devices": devices } } });
    const label = (stdin: string) => planned("command:local:Command", "fast-n1-label", { create: "set -eu;kubectl apply", stdin });
    const lines = (before: string, after: string) => renderChanges(diffPlans([label(before)], [label(after)])).split("\n");
    assert.deepEqual(lines(node({ "storage.zcloud.io/lvm": "fast" }, "/dev/sdb"), node({ "storage.zcloud.io/lvm": "fast" }, "/dev/sdb,/dev/sdc")), [
        "~  update                 fast-n1-label  label node n1 storage.zcloud.io/lvm=fast: devices annotation changed",
        "",
        "1 to update",
    ]);
    assert.equal(lines(node({ "storage.zcloud.io/lvm": "a" }, "/dev/sdb"), node({ "storage.zcloud.io/lvm": "b" }, "/dev/sdc"))[0], "~  update                 fast-n1-label  label node n1 storage.zcloud.io/lvm=b: label, devices annotation changed");
});
