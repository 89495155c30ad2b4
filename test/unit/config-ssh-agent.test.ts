// `ssh.agent: true`: the SSH key stays in ssh-agent, and no node connection carries a private key.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { parseStackConfig } from "../../components/config/parse";
import { nodeConnection, sshAgentProblem } from "../../components/node/nodeCommand";

const nodes = { node1: { address: "10.0.0.11" } };
const lvm = [{ name: "fast", hosts: { node1: ["/dev/sdb"] } }];
// As the runtime gives it: `ssh` is a secret key when a credential under it was set with --secret.
const parse = (ssh: Record<string, unknown>) => parseStackConfig({ ssh, nodes, lvm }, { secretKeys: new Set("privateKey" in ssh ? ["ssh"] : []) });
const errorsOf = (ssh: Record<string, unknown>) => parse(ssh).errors.map(formatIssue);
const exactlyOne =
    "set exactly one of ssh.privateKey (the key as a Pulumi secret: pulumi config set --secret --path ssh.privateKey < key) and ssh.agent: true (the key in the ssh-agent of whoever runs pulumi)";

describe("config: ssh.agent", () => {
    test("agent: true without a key is valid; the model has no key", () => {
        const r = parse({ agent: true });
        assert.deepEqual(r.errors, []);
        assert.equal(r.model!.ssh!.agent, true);
        assert.equal(r.model!.ssh!.privateKey, undefined);
    });

    test("a key without agent: agent defaults to false", () => {
        const r = parse({ privateKey: "k" });
        assert.deepEqual(r.errors, []);
        assert.equal(r.model!.ssh!.agent, false);
        assert.equal(r.model!.ssh!.privateKey, "k");
    });

    test("both a key and agent: true: one error naming both", () => {
        assert.deepEqual(errorsOf({ agent: true, privateKey: "k" }), [`ssh.agent: is true and ssh.privateKey is set too; ${exactlyOne}`]);
    });

    test("neither a key nor the agent: one error (agent: false counts as neither)", () => {
        const neither = [`ssh.privateKey: is required unless ssh.agent is true; ${exactlyOne}`];
        assert.deepEqual(errorsOf({ user: "root" }), neither);
        assert.deepEqual(errorsOf({ agent: false }), neither);
    });

    test("agent must be a boolean", () => {
        assert.deepEqual(errorsOf({ agent: "yes" }), ['ssh.agent: must be true (the key is in ssh-agent) or false, not string "yes"']);
    });

    test("a bastion's own key is allowed in agent mode", () => {
        const r = parseStackConfig(
            { ssh: { agent: true, bastion: { host: "jump.example", privateKey: "b" } }, nodes, lvm },
            { secretKeys: new Set(["ssh"]) },
        );
        assert.deepEqual(r.errors.map(formatIssue), []);
    });
});

describe("nodeConnection in agent mode", () => {
    const ssh = { user: "root", port: 22, hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx" } };

    test("no privateKey field at all, nor an agent socket path", () => {
        const c = nodeConnection(ssh, "node1", nodes.node1);
        assert.deepEqual(c, { host: "10.0.0.11", port: 22, user: "root", dialErrorLimit: 5, perDialTimeout: 15, hostKey: ssh.hostKeys.node1 });
    });

    test("through a bastion without a key of its own: the proxy carries none either", () => {
        const c = nodeConnection({ ...ssh, bastion: { host: "jump.example", port: 22, user: "ops" } }, "node1", nodes.node1);
        assert.deepEqual(c.proxy, { host: "jump.example", port: 22, user: "ops" });
        assert.equal("privateKey" in c, false);
    });

    test("with a key: the connection carries it (as before)", () => {
        const c = nodeConnection({ ...ssh, privateKey: "k" }, "node1", nodes.node1);
        assert.equal("privateKey" in c, true);
    });
});

describe("sshAgentProblem: an up in agent mode needs SSH_AUTH_SOCK", () => {
    test("an up without an agent is refused with the fix", () => {
        assert.equal(
            sshAgentProblem(true, false, {}),
            'is true, but SSH_AUTH_SOCK is not set where pulumi runs, so no node command could log in; start an agent holding the key (eval "$(ssh-agent -s)"; ssh-add <key file>) in the shell that runs pulumi up',
        );
    });

    test("a preview needs no agent; an up with one passes; a key needs none", () => {
        assert.equal(sshAgentProblem(true, true, {}), undefined);
        assert.equal(sshAgentProblem(true, false, { SSH_AUTH_SOCK: "/tmp/ssh-x/agent.1" }), undefined);
        assert.equal(sshAgentProblem(false, false, {}), undefined);
    });
});
