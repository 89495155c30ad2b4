import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkSingleDefaultClass, checkSshHostKeyPinned } from "../../policy/policies";
import { nodeCommand, storageClass, UNKNOWN_STRING } from "./fixtures";

describe("storage-single-default-class", () => {
    it("passes none or one default StorageClass", () => {
        assert.deepEqual(checkSingleDefaultClass([storageClass("local-fast", true), storageClass("shared-fs", false), storageClass("nfs", undefined)]), []);
        assert.deepEqual(checkSingleDefaultClass([storageClass("nfs", undefined)]), []);
    });

    it("reports several defaults once, on the last of them", () => {
        const a = storageClass("local-fast", true);
        const b = storageClass("shared-fs", true);
        const c = storageClass("nfs", "false");
        assert.deepEqual(checkSingleDefaultClass([a, c, b]), [
            {
                urn: b.urn,
                message:
                    "StorageClasses 'local-fast' and 'shared-fs' are both marked default: a PersistentVolumeClaim without " +
                    "storageClassName then gets the newest of them, so where a volume lands depends on creation order. " +
                    "Keep `default: true` on one storage only in the stack config.",
            },
        ]);
    });

    it("counts the beta annotation and ignores unknown annotations", () => {
        const beta = storageClass("old", undefined);
        (beta.props!.metadata as Record<string, unknown>).annotations = { "storageclass.beta.kubernetes.io/is-default-class": "true" };
        const unknown = storageClass("later", undefined);
        (unknown.props!.metadata as Record<string, unknown>).annotations = UNKNOWN_STRING;
        assert.equal(checkSingleDefaultClass([storageClass("local-fast", true), beta]).length, 1);
        assert.deepEqual(checkSingleDefaultClass([storageClass("local-fast", true), unknown]), []);
    });
});

describe("storage-ssh-host-key-pinned", () => {
    it("passes a pinned host key", () => {
        const cmd = nodeCommand("local-fast", "node3", { host: "10.0.0.13", port: 22, user: "root", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0" });
        assert.deepEqual(checkSshHostKeyPinned(cmd), []);
    });

    it("reports a missing or empty host key", () => {
        const message =
            "remote command 'local-fast-node3-disks' connects to 10.0.0.13 without a pinned SSH host key: whoever answers " +
            "at that address receives the login and the disk commands, so a man in the middle could read or wipe the " +
            "node's disks. Pin the node's key under zcloud-storage:ssh.hostKeys (as printed by " +
            "`ssh-keyscan -t ed25519 10.0.0.13`, checked out of band).";
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", { host: "10.0.0.13", user: "root" })), [message]);
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", { host: "10.0.0.13", hostKey: " " })), [message]);
    });

    it("reports a bastion without a pinned host key", () => {
        const cmd = nodeCommand("local-fast", "node3", {
            host: "10.0.0.13",
            hostKey: "ssh-ed25519 AAAA",
            proxy: { host: "jump.example", user: "ops", privateKey: "[secret]" },
        });
        assert.deepEqual(checkSshHostKeyPinned(cmd), [
            "remote command 'local-fast-node3-disks' goes through bastion jump.example without a pinned SSH host key: " +
                "a man in the middle at the bastion receives the login for every node behind it. Pin it as " +
                "zcloud-storage:ssh.bastion.hostKey (as printed by `ssh-keyscan -t ed25519 jump.example`, checked out of band).",
        ]);
        const pinned = nodeCommand("local-fast", "node3", {
            host: "10.0.0.13",
            hostKey: "ssh-ed25519 AAAA",
            proxy: { host: "jump.example", hostKey: "ssh-ed25519 BBBB" },
        });
        assert.deepEqual(checkSshHostKeyPinned(pinned), []);
    });

    it("stays silent when the connection is opaque (offline plan secret) or not known", () => {
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", "[secret]")), []);
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", UNKNOWN_STRING)), []);
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", { host: "10.0.0.13", hostKey: UNKNOWN_STRING })), []);
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", { host: "10.0.0.13", hostKey: "[secret]" })), []);
        assert.deepEqual(checkSshHostKeyPinned(nodeCommand("local-fast", "node3", { host: "10.0.0.13", hostKey: "[unknown]" })), []);
        assert.deepEqual(checkSshHostKeyPinned({ ...nodeCommand("a", "b", {}), props: undefined }), []);
    });
});
