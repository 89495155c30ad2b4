import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkPrivilegedNamespace, evaluatePolicies } from "../../policy/policies";
import { UNKNOWN_STRING, workload } from "./fixtures";

const params = { namespace: "zcloud-storage" };
const TAIL =
    ": such pods can reach every disk and process of their node, so they belong only in the storage namespace " +
    "'zcloud-storage', where who may create pods is restricted. Deploy it in 'zcloud-storage' (zcloud-storage:namespace), " +
    "or set this policy's namespace parameter to the storage namespace you use.";

describe("storage-privileged-namespace", () => {
    it("allows privileged and host-namespace pods in the storage namespace", () => {
        const lvmd = workload("DaemonSet", "topolvm-lvmd", {
            namespace: "zcloud-storage",
            hostPID: true,
            containers: [{ name: "lvmd", image: "x:1", privileged: true }],
        });
        assert.deepEqual(checkPrivilegedNamespace(lvmd, params), []);
    });

    it("allows unprivileged pods anywhere", () => {
        const web = workload("Deployment", "web", {
            namespace: "default",
            hostPID: false,
            containers: [{ name: "web", image: "x:1", privileged: false }],
        });
        assert.deepEqual(checkPrivilegedNamespace(web, params), []);
    });

    it("reports privileged containers and host namespaces outside it, with every power named", () => {
        const lvmd = workload("DaemonSet", "topolvm-lvmd", {
            namespace: "kube-system",
            hostPID: true,
            hostNetwork: true,
            initContainers: [{ name: "setup", image: "x:1", privileged: true }],
            containers: [{ name: "lvmd", image: "x:1", privileged: true }, { name: "sidecar", image: "x:1" }],
        });
        assert.deepEqual(checkPrivilegedNamespace(lvmd, params), [
            "DaemonSet 'topolvm-lvmd' is in namespace 'kube-system' and uses privileged init container 'setup', " +
                `privileged container 'lvmd', hostPID and hostNetwork${TAIL}`,
        ]);
    });

    it("reports a pod without namespace (the provider's default)", () => {
        const pod = workload("Pod", "shared-fs-osd-node3", { hostNetwork: true, containers: [{ name: "osd", image: "x:1" }] });
        assert.deepEqual(checkPrivilegedNamespace(pod, params), [
            `Pod 'shared-fs-osd-node3' has no namespace (the provider's default, usually 'default') and uses hostNetwork${TAIL}`,
        ]);
    });

    it("takes the storage namespace from the pack config", () => {
        const ds = workload("DaemonSet", "csi-cephfs-nodeplugin", {
            namespace: "storage",
            containers: [{ name: "csi", image: "x:1", privileged: true }],
        });
        assert.equal(evaluatePolicies([ds]).filter((v) => v.policy === "storage-privileged-namespace").length, 1);
        assert.deepEqual(
            evaluatePolicies([ds], { "storage-privileged-namespace": { namespace: "storage" } }),
            [],
        );
    });

    it("waits for a namespace not known during preview, and tolerates missing specs", () => {
        const ds = workload("DaemonSet", "x", { namespace: UNKNOWN_STRING, hostPID: true, containers: [{ name: "c", image: "x:1" }] });
        assert.deepEqual(checkPrivilegedNamespace(ds, params), []);
        const planned = workload("DaemonSet", "x", { namespace: "[unknown]", hostPID: true, containers: [{ name: "c", image: "x:1" }] });
        assert.deepEqual(checkPrivilegedNamespace(planned, params), [], "the offline plan's marker");
        assert.deepEqual(checkPrivilegedNamespace({ ...ds, props: undefined }, params), []);
        assert.deepEqual(checkPrivilegedNamespace({ ...ds, props: { spec: { template: UNKNOWN_STRING } } }, params), []);
    });
});
