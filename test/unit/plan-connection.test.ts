import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { connectionChanges } from "../../tools/plan/connection";
import { diffPlans } from "../../tools/plan/diff";
import { isLoopbackAddress } from "../../tools/plan/loopback";
import { PlannedResource } from "../../tools/plan/model";

const key = (n: number) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${n}`;
const node = { host: "10.0.0.1", port: 22, user: "root", privateKey: "[secret]", dialErrorLimit: 5, perDialTimeout: 15, hostKey: key(1) };

/** A node disk command as the recorder keeps it: the connection "[secret]" in inputs, opened in the policy view. */
function command(connection: Record<string, unknown>): PlannedResource {
    return {
        urn: "urn:pulumi:s::p::zcloud:storage:LvmStorage$command:remote:Command::fast-node1-disks",
        type: "command:remote:Command",
        name: "fast-node1-disks",
        parent: "urn:pulumi:s::p::zcloud:storage:LvmStorage::fast",
        dependencies: [],
        inputs: { connection: "[secret]", create: "apply", delete: "release" },
        policyInputs: { connection, create: "apply", delete: "release" },
        custom: true,
        deleteBeforeReplace: true,
        retainOnDelete: false,
        replaceOnChanges: ["triggers[*]"],
    };
}

const changes = (before: Record<string, unknown>, after: Record<string, unknown>) => connectionChanges(command(before), command(after));

describe("connection changes of a node command", () => {
    test("address, port and user, in that order, old -> new", () => {
        assert.deepEqual(changes(node, { ...node, host: "10.9.9.9", port: 2222, user: "ops" }), [
            "connection: address 10.0.0.1 -> 10.9.9.9",
            "connection: port 22 -> 2222",
            "connection: user root -> ops",
        ]);
    });

    test("a host-key pin added, removed or changed is named, its key is not printed", () => {
        const { hostKey: _k, ...unpinned } = node;
        assert.deepEqual(changes(node, unpinned), ["connection: host key pin removed"]);
        assert.deepEqual(changes(unpinned, node), ["connection: host key pin added"]);
        assert.deepEqual(changes(node, { ...node, hostKey: key(2) }), ["connection: host key pin changed"]);
    });

    test("bastion added, removed, moved; its pin", () => {
        const bastion = { host: "jump.example", port: 22, user: "ops", privateKey: "[secret]", hostKey: key(7) };
        assert.deepEqual(changes(node, { ...node, proxy: bastion }), ["connection: bastion added: ops@jump.example:22"]);
        assert.deepEqual(changes({ ...node, proxy: bastion }, node), ["connection: bastion removed (was ops@jump.example:22)"]);
        assert.deepEqual(changes({ ...node, proxy: bastion }, { ...node, proxy: { ...bastion, host: "fd00::9", port: 2022, hostKey: undefined } }), [
            "connection: bastion address jump.example -> fd00::9",
            "connection: bastion port 22 -> 2022",
            "connection: bastion host key pin removed",
        ]);
        assert.deepEqual(changes(node, { ...node, proxy: { ...bastion, host: "fd00::9" } }), ["connection: bastion added: ops@[fd00::9]:22"]);
    });

    test("credentials are never shown, not even that they changed; a secure: address shows as [secret]", () => {
        assert.deepEqual(changes(node, { ...node, privateKey: "[secret]", password: "[secret]" }), []);
        assert.deepEqual(changes(node, { ...node, host: "offline-secret(zcloud-storage:nodes.node1.address)" }), ["connection: address 10.0.0.1 -> [secret]"]);
    });

    test("the diff makes it an in-place update of the command (connection is not a replaceOnChanges path)", () => {
        const [c] = diffPlans([command(node)], [command({ ...node, host: "10.9.9.9" })]);
        assert.equal(c.kind, "update");
        assert.deepEqual(c.fields, ["connection"]);
        assert.deepEqual(c.replaceBecause, []);
        assert.deepEqual(c.connection, ["connection: address 10.0.0.1 -> 10.9.9.9"]);
        assert.deepEqual(diffPlans([command(node)], [command({ ...node })]), []);
    });
});

describe("loopback node addresses", () => {
    test("127.0.0.0/8, ::1 in any spelling, IPv4-mapped forms, localhost names", () => {
        for (const a of ["127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "[::1]", "::ffff:127.0.0.1", "::ffff:7f00:1", "localhost", "LocalHost.", "node1.localhost"]) {
            assert.equal(isLoopbackAddress(a), true, a);
        }
    });

    test("other addresses and names are not", () => {
        for (const a of ["10.0.0.1", "128.0.0.1", "::", "0.0.0.0", "fe80::1", "::ffff:10.0.0.1", "localhost.example", "mylocalhost", "node1"]) {
            assert.equal(isLoopbackAddress(a), false, a);
        }
    });
});
