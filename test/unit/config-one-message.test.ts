import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { acceptKeyscanLines, keyscanHostPart } from "../../components/config/hostKeys";
import { parseFullConfig } from "../../components/config/namespaces";
import { parseStackConfig } from "../../components/config/parse";

// One message per mistake: a typo or a pasted ssh-keyscan line is reported once, by itself.
const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12", port: 2222 } };
const lvm = [{ name: "a", hosts: { node1: ["/dev/sdb"] } }];
const errorsOf = (values: Record<string, unknown>) => parseStackConfig(values).errors.map(formatIssue);

describe("config: a typo under ssh is its only error", () => {
    test("ssh.usr: the did-you-mean, and no 'ssh: is required'", () => {
        assert.deepEqual(errorsOf({ ssh: { usr: "root", privateKey: "k", hostKeys: { node1: key } }, nodes, lvm }), [
            'ssh.usr: unknown key; did you mean "user"? (known keys: user, port, privateKey, agent, hostKeys, bastion)',
        ]);
    });
    test("a missing privateKey is reported at ssh.privateKey, once", () => {
        assert.deepEqual(errorsOf({ ssh: { user: "root", hostKeys: { node1: key } }, nodes, lvm }).length, 1);
        assert.match(errorsOf({ ssh: { user: "root", hostKeys: { node1: key } }, nodes, lvm })[0], /^ssh\.privateKey: /);
    });
    test("no ssh key at all still says ssh is required", () => {
        assert.deepEqual(errorsOf({ nodes, lvm }), [
            "ssh: is required because lvm storages prepare nodes over SSH; set ssh.privateKey with: pulumi config set --secret --path ssh.privateKey < key (or ssh.agent: true when the key is in ssh-agent)",
        ]);
    });
});

describe("config: the fix commands name the stack when it is known", () => {
    test("pulumi config set -s <stack> and pulumi destroy -s <stack>", () => {
        const stackErrors = (values: Record<string, unknown>, stack: string) => parseStackConfig(values, { stack }).errors.map(formatIssue);
        assert.deepEqual(stackErrors({ nodes, lvm }, "prod"), [
            "ssh: is required because lvm storages prepare nodes over SSH; set ssh.privateKey with: pulumi config set -s prod --secret --path ssh.privateKey < key (or ssh.agent: true when the key is in ssh-agent)",
        ]);
        assert.deepEqual(stackErrors({ ssh: { agent: true, privateKey: "k", hostKeys: { node1: key } }, nodes, lvm }, "acme/prod"), [
            "ssh.agent: is true and ssh.privateKey is set too; set exactly one of ssh.privateKey (the key as a Pulumi secret: pulumi config set -s acme/prod --secret --path ssh.privateKey < key) and ssh.agent: true (the key in the ssh-agent of whoever runs pulumi)",
        ]);
        assert.deepEqual(parseStackConfig({ ssh: { privateKey: "k", hostKeys: { node1: key } }, nodes, lvm }, { stack: "prod", securePaths: ["ssh"] }).errors.map(formatIssue), [
            "ssh: is one secure: value holding more than a credential; write its keys in clear and set each credential as a secret of its own (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets), e.g. pulumi config set -s prod --secret --path ssh.privateKey",
        ]);
        assert.deepEqual(parseFullConfig({ "kubernetes:context": "x" }, { stack: "my stack" }).errors.map(formatIssue), [
            "the stack sets no zcloud-storage: key, so the plan would delete every storage of the stack; check the stack file's config: map (to remove every storage on purpose, set zcloud-storage:lvm: [] and the other types, or run pulumi destroy -s 'my stack')",
        ]);
    });
});

describe("config: a pasted ssh-keyscan line", () => {
    test("with the node's address, its name or [address]:port: accepted, the key pinned without the host", () => {
        for (const [node, host] of [["node1", "10.0.0.11"], ["node1", "node1"], ["node2", "[10.0.0.12]:2222"], ["node1", "node1,10.0.0.11"]]) {
            const r = parseStackConfig({ ssh: { privateKey: "k", hostKeys: { [node]: `${host} ${key}` } }, nodes, lvm });
            assert.deepEqual(r.errors, [], host);
            assert.equal(r.model!.ssh!.hostKeys[node], key, host);
        }
    });
    test("naming another host: one message saying exactly what to drop", () => {
        assert.deepEqual(errorsOf({ ssh: { privateKey: "k", hostKeys: { node1: `10.0.0.99 ${key}` } }, nodes, lvm }), [
            'ssh.hostKeys.node1: starts with the host "10.0.0.99" (as ssh-keyscan prints it), which is not node1 or 10.0.0.11; drop "10.0.0.99 " and keep "ssh-ed25519 AAAAC3NzaC1l...", after checking the key is this host\'s',
        ]);
    });
    test("the bastion's key line with the bastion host: accepted", () => {
        const r = parseStackConfig({ ssh: { privateKey: "k", hostKeys: { node1: key }, bastion: { host: "jump.example", user: "ops", hostKey: `jump.example ${key}` } }, nodes, lvm });
        assert.deepEqual(r.errors, []);
        assert.equal(r.model!.ssh!.bastion!.hostKey, key);
    });
    test("a plain key or no key line at all is left to the format check", () => {
        assert.equal(keyscanHostPart(key), undefined);
        assert.equal(keyscanHostPart("node1 AAAA"), undefined);
        assert.deepEqual(keyscanHostPart(`node1 ${key} comment`), { host: "node1", key: `${key} comment` });
        const raw = { privateKey: "k", hostKeys: { node1: `node1 ${key}` } };
        acceptKeyscanLines(raw, nodes);
        assert.equal(raw.hostKeys.node1, `node1 ${key}`, "the input is not changed");
    });
});

describe("config: a misspelt key is reported once, not also as the key it stands for", () => {
    test("nodes.n1.adress: unknown with its did-you-mean, no 'nodes.n1.address: is required'", () => {
        assert.deepEqual(errorsOf({ ssh: { privateKey: "k", hostKeys: { node1: key } }, nodes: { node1: { adress: "10.0.0.11" } }, lvm }), [
            'nodes.node1.adress: unknown key; did you mean "address"? (known keys: address, port, user)',
        ]);
    });
    test("a node name with dots, and a list item: the same", () => {
        assert.deepEqual(errorsOf({ nodes: { "n1.example.com": { adress: "10.0.0.11" } }, nfs: [{ name: "n", sever: "10.0.0.9", path: "/x" }] }), [
            'nodes.n1.example.com.adress: unknown key; did you mean "address"? (known keys: address, port, user)',
            'nfs[0].sever: unknown key; did you mean "server"? (known keys: name, default, server, path, onDelete, mountOptions, alerts)',
        ]);
    });
    test("a key missing with no misspelling near it is still required", () => {
        assert.deepEqual(errorsOf({ nodes: { node1: { port: 22 } } }), ["nodes.node1.address: is required"]);
    });
});
