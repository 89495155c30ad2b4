// zcloud-storage:namespace changed: --diff says in plain words what the move deletes, and the
// policy pack refuses it until its own config names the new namespace.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-ns-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const prod = fs.readFileSync("stacks/Pulumi.prod.yaml", "utf8");
assert.match(prod, /^ {2}zcloud-storage:namespace: zcloud-storage$/m);
const movedStack = path.join(dir, "Pulumi.prod.yaml");
fs.writeFileSync(movedStack, prod.replace(/^( {2}zcloud-storage:namespace:) zcloud-storage$/m, "$1 storage-system"));
const allowMove = path.join(dir, "pack.json");
fs.writeFileSync(allowMove, JSON.stringify({ "storage-privileged-namespace": { namespace: "storage-system" } }));

const pad = " ".repeat(26);
const namespaceNote =
    `${pad}note: zcloud-storage:namespace moves from zcloud-storage to storage-system: pulumi up creates storage-system and deletes zcloud-storage with everything in it, ` +
    "including the Secrets that existing volumes use; nothing is moved or copied. The policy pack refuses this until its storage-privileged-namespace namespace parameter names storage-system.";
const secretNote =
    `${pad}note: volumes of shared-fs provisioned so far keep their secret references in zcloud-storage (csi.storage.k8s.io/controller-expand-secret-namespace, ` +
    "csi.storage.k8s.io/node-stage-secret-namespace, csi.storage.k8s.io/provisioner-secret-namespace): once those Secrets are deleted there, the volumes can no longer be mounted, " +
    "expanded or deleted until the Secrets exist in zcloud-storage again.";

describe("npm run plan --diff: a namespace move", () => {
    test("is flagged under the Namespace and the CephFS StorageClass, and the pack refuses it (exit 1)", async () => {
        const r = await plan(movedStack, "--diff", "prod");
        assert.equal(r.code, 1, r.stderr);
        const lines = r.stdout.split("\n");
        const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
        const ns = at(/^\+- replace +namespace +Namespace storage-system: metadata\.name changed$/);
        assert.ok(ns >= 0, r.stdout);
        assert.equal(lines[ns + 1], namespaceNote);
        const sc = at(/^\+- replace \(delete first\) shared-fs-storageclass +StorageClass shared-fs /);
        assert.ok(sc >= 0, r.stdout);
        assert.equal(lines[sc + 1], secretNote);
        // One violation for the move (the Namespace and every privileged workload), with the fix once.
        assert.equal(lines.filter((l) => /^ {8}- \[mandatory\] +storage-privileged-namespace /.test(l)).length, 1, r.stdout);
        assert.match(r.stdout, /- \[mandatory\] +storage-privileged-namespace +\(kubernetes:core\/v1:Namespace: namespace; kubernetes:apps\/v1:DaemonSet: .*\)\n.*\n {10}\d+ resources \(namespace, .*\) put privileged pods in namespace 'storage-system', but the storage namespace of this pack is 'zcloud-storage'\./);
        assert.ok(lines.includes('            {"storage-privileged-namespace":{"namespace":"storage-system"}}'), r.stdout);
    });

    test("passes once the pack's config names the new namespace; the notes stay", async () => {
        const r = await plan(movedStack, "--diff", "prod", "--policy-pack-config", allowMove);
        assert.equal(r.code, 0, r.stderr);
        assert.ok(r.stdout.split("\n").includes(namespaceNote));
        assert.doesNotMatch(r.stdout, /\] +storage-privileged-namespace +\(/);
    });
});
