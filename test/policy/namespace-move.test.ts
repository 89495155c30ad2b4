// A move of zcloud-storage:namespace replaces the Namespace and deletes the Secrets existing volumes
// use. The pack cannot see the old state; its own config names the storage namespace, so a stack
// whose privileged Namespace is another one fails until that parameter is changed on purpose.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkPrivilegedNamespace, evaluatePolicies, hasMandatoryViolations } from "../../policy/policies";
import { UNKNOWN_STRING, urnOf } from "./fixtures";

const namespace = (name: unknown, enforce: unknown = "privileged") => ({
    type: "kubernetes:core/v1:Namespace",
    name: "namespace",
    urn: urnOf("kubernetes:core/v1:Namespace", "namespace"),
    props: { metadata: { name, labels: enforce === null ? {} : { "pod-security.kubernetes.io/enforce": enforce } } },
});

const moved = (from: string, to: string) =>
    `Namespace '${to}' admits privileged pods (pod-security.kubernetes.io/enforce=privileged), but the storage namespace of this pack is '${from}'. ` +
    `If zcloud-storage:namespace was changed from '${from}' to '${to}', pulumi up replaces the Namespace: it deletes '${from}' with everything in it, ` +
    `including the Secrets that existing volumes use, and nothing recreates them there. Keep zcloud-storage:namespace '${from}'; ` +
    `to move on purpose, set this policy's namespace parameter to '${to}' in the pack's config.`;

describe("storage-privileged-namespace: the storage Namespace itself", () => {
    it("passes the privileged Namespace the pack's config names", () => {
        assert.deepEqual(checkPrivilegedNamespace(namespace("zcloud-storage"), { namespace: "zcloud-storage" }), []);
    });

    it("refuses another privileged Namespace, saying what a move would delete and how to allow it", () => {
        assert.deepEqual(checkPrivilegedNamespace(namespace("storage-system"), { namespace: "zcloud-storage" }), [moved("zcloud-storage", "storage-system")]);
    });

    it("is mandatory by default, and allowed once the pack's config names the new namespace", () => {
        const refused = evaluatePolicies([namespace("storage-system")]);
        assert.deepEqual(refused, [
            {
                policy: "storage-privileged-namespace",
                enforcementLevel: "mandatory",
                urn: urnOf("kubernetes:core/v1:Namespace", "namespace"),
                message: moved("zcloud-storage", "storage-system"),
            },
        ]);
        assert.equal(hasMandatoryViolations(refused), true);
        assert.deepEqual(evaluatePolicies([namespace("storage-system")], { "storage-privileged-namespace": { namespace: "storage-system" } }), []);
    });

    it("leaves Namespaces that admit no privileged pods, and names not known yet", () => {
        for (const level of ["baseline", "restricted", null]) {
            assert.deepEqual(checkPrivilegedNamespace(namespace("apps", level), { namespace: "zcloud-storage" }), [], String(level));
        }
        assert.deepEqual(checkPrivilegedNamespace(namespace(UNKNOWN_STRING), { namespace: "zcloud-storage" }), []);
        assert.deepEqual(checkPrivilegedNamespace(namespace("[unknown]"), { namespace: "zcloud-storage" }), []);
        assert.deepEqual(checkPrivilegedNamespace({ ...namespace("x"), props: undefined }, { namespace: "zcloud-storage" }), []);
    });
});
