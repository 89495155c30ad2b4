import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { baseConfig, nodesThrough, sharedFsConfig } from "../helpers/plan";

describe("test/helpers/plan: the plan tests' shared stack shapes", () => {
    test("nodesThrough adds node4 .. node<last> at 10.0.0.14 .. to baseConfig's three nodes; 3 adds none", () => {
        assert.deepEqual(nodesThrough(6), {
            node1: { address: "10.0.0.11" },
            node2: { address: "10.0.0.12" },
            node3: { address: "10.0.0.13", port: 2222, user: "ops" },
            node4: { address: "10.0.0.14" },
            node5: { address: "10.0.0.15" },
            node6: { address: "10.0.0.16" },
        });
        assert.deepEqual(nodesThrough(3), baseConfig.nodes);
        assert.deepEqual(Object.keys(nodesThrough(4)), ["node1", "node2", "node3", "node4"]);
    });

    test("sharedFsConfig: shared-fs on node4 .. node6 (two devices on node6) through the context prod-admin, baseConfig's SSH", () => {
        assert.deepEqual(sharedFsConfig, {
            ssh: baseConfig.ssh,
            nodes: nodesThrough(6),
            "kubernetes:context": "prod-admin",
            cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
        });
    });
});
