// Hardening, round 2 (issue 19), the config contract's part: each hostile or careless input is
// refused with the exact message docs/validation.md shows.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { canonicalConfigKey, foldedKeyCollisions, parseFullConfig } from "../../components/config/namespaces";
import { readStackDocument } from "../../components/config/stackDocument";

const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" } };
const ssh = { privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----abc", hostKeys: { node1: hostKey, node2: hostKey } };

describe("keys that Pulumi folds into one", () => {
    test("keys are read as the CLI and SDK read them", () => {
        assert.equal(canonicalConfigKey("zcloud-storage:config:lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("kubernetes:config:context"), "kubernetes:context");
        assert.equal(canonicalConfigKey("zcloud-storage:lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("config:lvm"), "config:lvm", "a namespace named config is not the legacy form");
    });

    test("a folded twin of a storage list in a stack file is refused, naming both keys", () => {
        const text = [
            "config:",
            "  zcloud-storage:lvm:",
            "    - { name: local-fast, hosts: { node1: [/dev/disk/by-id/wwn-0x5001] } }",
            "  zcloud-storage:config:lvm: []",
            "  iscsi: []",
            "  zcloud-storage:iscsi: []",
            "",
        ].join("\n");
        assert.throws(() => readStackDocument(text, "stacks/Pulumi.x.yaml"), {
            message: [
                "stacks/Pulumi.x.yaml: zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm (Pulumi reads both as zcloud-storage:lvm), so one value would silently replace the other; keep only one of them",
                "stacks/Pulumi.x.yaml: zcloud-storage:iscsi: is the same key as iscsi (Pulumi reads both as zcloud-storage:iscsi), so one value would silently replace the other; keep only one of them",
            ].join("\n"),
        });
    });

    test("a clear private key under the folded twin of a secure: one is refused", () => {
        const text = "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:abc }\n  zcloud-storage:config:ssh:\n    privateKey: clear-key-text\n";
        assert.throws(() => readStackDocument(text, "f.yaml"), {
            message:
                "f.yaml: zcloud-storage:config:ssh: is the same key as zcloud-storage:ssh (Pulumi reads both as zcloud-storage:ssh), so one value would silently replace the other; keep only one of them",
        });
        assert.throws(() => readStackDocument(text, "f.yaml"), (e: Error) => !e.message.includes("clear-key-text"));
    });

    test("a legacy key alone is read under its folded name, secure: paths included", () => {
        const doc = readStackDocument("config:\n  zcloud-storage:config:ssh:\n    privateKey: { secure: v1:abc }\n  nodes: {}\n", "f.yaml");
        assert.deepEqual(Object.keys(doc.values), ["zcloud-storage:ssh", "zcloud-storage:nodes"]);
        assert.deepEqual(doc.securePaths, ["zcloud-storage:ssh.privateKey"]);
    });

    test("the program refuses twins among the keys the language host handed it", () => {
        const all = { "zcloud-storage:nodes": nodes, "zcloud-storage:ssh": ssh, "zcloud-storage:lvm": [] };
        const rawKeys = ["zcloud-storage:nodes", "zcloud-storage:lvm", "zcloud-storage:config:lvm", "zcloud-storage:ssh"];
        assert.deepEqual(parseFullConfig(all, { rawKeys }).errors.map(formatIssue), [
            "zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm (Pulumi reads both as zcloud-storage:lvm), so one value would silently replace the other; keep only one of them",
        ]);
        assert.deepEqual(foldedKeyCollisions(["zcloud-storage:lvm", "kubernetes:context"]), []);
    });
});
