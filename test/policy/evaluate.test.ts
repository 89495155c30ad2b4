import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import {
    evaluatePolicies,
    formatViolations,
    hasMandatoryViolations,
    PACK_NAME,
    PACK_VERSION,
    PackConfigError,
    POLICIES,
    POLICY_NAMES,
    resolvePackConfig,
    Violation,
} from "../../policy/policies";
import { nodeCommand, nodeLabel, storageClass, workload } from "./fixtures";

const lvm = nodeLabel("lvm", "local-fast", "node3", ["/dev/sdb"]);
const ceph = nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
const unpinnedSsh = nodeCommand("local-fast", "node3", { host: "10.0.0.13" });

describe("pack metadata", () => {
    it("names eight stable policies, two levels by default", () => {
        assert.deepEqual(POLICIES.map((p) => p.name), [...POLICY_NAMES]);
        assert.deepEqual(
            POLICIES.map((p) => `${p.name}=${p.enforcementLevel}/${p.kind}`),
            [
                "storage-node-exclusive=mandatory/stack",
                "storage-device-single-claim=mandatory/stack",
                "storage-image-pinned=mandatory/resource",
                "storage-no-secret-literals=mandatory/resource",
                "storage-privileged-namespace=mandatory/resource",
                "storage-single-default-class=mandatory/stack",
                "storage-ssh-host-key-pinned=advisory/resource",
                "storage-monitoring-on=advisory/stack",
            ],
        );
    });

    it("keeps PACK_VERSION equal to policy/package.json (the CLI reads the version there)", () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "../../policy/package.json"), "utf8"));
        assert.equal(PACK_NAME, "zcloud-storage-policy");
        assert.equal(pkg.version, PACK_VERSION);
        assert.equal(pkg.dependencies["@pulumi/policy"], "1.21.0");
        assert.equal(pkg.dependencies["@pulumi/pulumi"], "3.270.0");
    });
});

describe("evaluatePolicies", () => {
    it("returns nothing for a compliant plan", () => {
        const ok = [
            nodeLabel("lvm", "local-fast", "node1", ["/dev/sdb"]),
            nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdb"]),
            storageClass("local-fast", true),
            storageClass("shared-fs", false),
            nodeCommand("local-fast", "node1", { host: "10.0.0.11", hostKey: "ssh-ed25519 AAAA" }),
            workload("DaemonSet", "topolvm-lvmd", {
                namespace: "zcloud-storage",
                hostPID: true,
                containers: [{ name: "lvmd", image: "ghcr.io/topolvm/topolvm-with-sidecar:0.41.0", privileged: true }],
            }),
        ];
        assert.deepEqual(evaluatePolicies(ok), []);
    });

    it("attaches policy, level and URN, in pack order then resource order", () => {
        const violations = evaluatePolicies([lvm, ceph, unpinnedSsh]);
        assert.deepEqual(
            violations.map((v) => [v.policy, v.enforcementLevel, v.urn]),
            [
                ["storage-node-exclusive", "mandatory", ceph.urn],
                ["storage-ssh-host-key-pinned", "advisory", unpinnedSsh.urn],
            ],
        );
        assert.equal(hasMandatoryViolations(violations), true);
    });

    it("reports nothing for a disabled policy", () => {
        assert.deepEqual(evaluatePolicies([lvm, ceph], { "storage-node-exclusive": "disabled" }), []);
        assert.deepEqual(evaluatePolicies([lvm, ceph], { "storage-node-exclusive": { enforcementLevel: "disabled" } }), []);
    });

    it("reports an advisory policy without failing", () => {
        const violations = evaluatePolicies([lvm, ceph], { "storage-node-exclusive": "advisory" });
        assert.deepEqual(violations.map((v) => v.enforcementLevel), ["advisory"]);
        assert.equal(hasMandatoryViolations(violations), false);
        assert.equal(hasMandatoryViolations(evaluatePolicies([unpinnedSsh])), false);
    });

    it("applies 'all' first and a policy's own level over it, as the CLI does", () => {
        const cfg = { all: "advisory", "storage-ssh-host-key-pinned": "mandatory" } as const;
        assert.deepEqual(
            evaluatePolicies([lvm, ceph, unpinnedSsh], cfg).map((v) => `${v.policy}=${v.enforcementLevel}`),
            ["storage-node-exclusive=advisory", "storage-ssh-host-key-pinned=mandatory"],
        );
        assert.deepEqual(evaluatePolicies([lvm, ceph, unpinnedSsh], { all: "disabled" }), []);
        assert.equal(resolvePackConfig({ "storage-image-pinned": "remediate" }).levels["storage-image-pinned"], "mandatory");
    });

    it("rejects unknown policies, bad levels and unknown or bad parameters, all at once", () => {
        assert.throws(
            () =>
                resolvePackConfig({
                    "storage-node-exclusiv": "mandatory",
                    "storage-image-pinned": "warn",
                    "storage-privileged-namespace": { namespace: "", namespaces: ["a"] },
                    "storage-single-default-class": { enforcementLevel: "advisory", max: 2 },
                    all: 3,
                } as Record<string, unknown>),
            (e: unknown) => {
                assert.ok(e instanceof PackConfigError);
                assert.deepEqual(e.problems, [
                    'all: must be an enforcement level or an object',
                    `storage-node-exclusiv: no such policy in zcloud-storage-policy (policies: ${POLICY_NAMES.join(", ")})`,
                    'storage-image-pinned: "warn" is not an enforcement level (mandatory, advisory, disabled)',
                    "storage-privileged-namespace.namespace: must be a non-empty string",
                    "storage-privileged-namespace.namespaces: unknown parameter (parameters: namespace)",
                    "storage-single-default-class.max: unknown parameter (this policy has none)",
                ]);
                return true;
            },
        );
    });

    it("defaults the storage namespace to zcloud-storage and the production stacks to prod-like names", () => {
        const productionStacks = ["prod", "prod-*", "*-prod", "production", "production-*", "*-production"];
        assert.deepEqual(resolvePackConfig().params, { namespace: "zcloud-storage", productionStacks });
        assert.deepEqual(resolvePackConfig({ "storage-privileged-namespace": { namespace: "storage" } }).params, { namespace: "storage", productionStacks });
    });
});

describe("formatViolations", () => {
    const exclusive: Violation = {
        policy: "storage-node-exclusive",
        enforcementLevel: "mandatory",
        urn: ceph.urn,
        message: "node3 serves lvm 'local-fast' and cephfs 'shared-fs': a node's disks must belong to one of them.\nSecond line.",
    };
    const ssh: Violation = { policy: "storage-ssh-host-key-pinned", enforcementLevel: "advisory", urn: unpinnedSsh.urn, message: "no host key" };

    it("prints the CLI's Policies block: pack line, then each violation with description and message indented", () => {
        assert.equal(
            formatViolations([ssh, exclusive]),
            [
                "Policies:",
                "    ❌ zcloud-storage-policy@v0.1.0 (local: policy)",
                "        - [mandatory]  storage-node-exclusive  (command:local:Command: shared-fs-node3-label)",
                "          A node serves at most one of lvm and cephfs, and at most one storage of each type.",
                "          node3 serves lvm 'local-fast' and cephfs 'shared-fs': a node's disks must belong to one of them.",
                "          Second line.",
                "        - [advisory]  storage-ssh-host-key-pinned  (command:remote:Command: local-fast-node3-disks)",
                "          Remote commands pin the node's SSH host key.",
                "          no host key",
                "",
            ].join("\n"),
        );
    });

    it("marks a pack with only advisory violations, or none, and prints stack-level violations without a resource", () => {
        assert.equal(formatViolations([ssh]).split("\n")[1], "    ⚠️ zcloud-storage-policy@v0.1.0 (local: policy)");
        assert.equal(formatViolations([]), "Policies:\n    ✅ zcloud-storage-policy@v0.1.0 (local: policy)\n");
        assert.equal(
            formatViolations([{ policy: "storage-single-default-class", enforcementLevel: "mandatory", message: "two defaults" }], { localPath: "" }),
            [
                "Policies:",
                "    ❌ zcloud-storage-policy@v0.1.0",
                "        - [mandatory]  storage-single-default-class",
                "          At most one StorageClass is the default.",
                "          two defaults",
                "",
            ].join("\n"),
        );
    });

    it("shortens type tokens like the CLI and shows URNs on request", () => {
        const sc = storageClass("local-fast", true);
        const v: Violation = { policy: "storage-single-default-class", enforcementLevel: "mandatory", urn: sc.urn, message: "m" };
        assert.match(formatViolations([v]), /\(kubernetes:storage\.k8s\.io\/v1:StorageClass: local-fast-storageclass\)/);
        const withModule: Violation = { ...v, urn: "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b" };
        assert.match(formatViolations([withModule]), /\(aws:s3:Bucket: b\)/);
        assert.match(formatViolations([v], { showUrns: true }), new RegExp(`StorageClass: ${sc.urn.replace(/[$.*+?^(){}|[\]\\/]/g, "\\$&")}\\)`));
    });

    it("formats what evaluatePolicies returns", () => {
        const out = formatViolations(evaluatePolicies([lvm, ceph]));
        assert.match(out, /^Policies:\n {4}❌ zcloud-storage-policy@v0\.1\.0 \(local: policy\)\n {8}- \[mandatory\] {2}storage-node-exclusive {2}\(command:local:Command: shared-fs-node3-label\)\n/);
        assert.match(out, /\n {10}node3 serves lvm 'local-fast' and cephfs 'shared-fs': .*Remove node3 from one of them in the stack config\.\n$/);
    });
});
