// The pack's storage namespace: its own parameter, never a system namespace, never the stack's.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { PackConfigError, resolvePackConfig } from "../../policy/policies";

describe("storage-privileged-namespace parameter", () => {
    for (const namespace of ["kube-system", "kube-public", "kube-node-lease", "default"]) {
        it(`refuses the system namespace ${namespace}`, () => {
            assert.throws(
                () => resolvePackConfig({ "storage-privileged-namespace": { namespace } }),
                (e: unknown) => {
                    assert.ok(e instanceof PackConfigError);
                    assert.deepEqual(e.problems, [
                        `storage-privileged-namespace.namespace: "${namespace}" is a system namespace (default, kube-node-lease, kube-public, kube-system); privileged storage pods need a namespace of their own, e.g. zcloud-storage`,
                    ]);
                    return true;
                },
            );
        });
    }

    it("is read from the pack's config only: the pack and the plan's policy step never read stack config", () => {
        const root = path.join(__dirname, "../..");
        for (const file of ["policy/index.ts", "policy/policies.ts", "policy/model.ts", "tools/plan.ts"]) {
            const text = fs.readFileSync(path.join(root, file), "utf8");
            assert.doesNotMatch(text, /\["zcloud-storage:namespace"\]|config\.values|new pulumi\.Config|allConfig\(/, file);
        }
    });
});
