/**
 * `ssh.agent: true` with the real CLI and @pulumi/command 1.2.1's provider: a stack applied with
 * `ssh.privateKey` moves to the agent with in-place updates of its node commands and script copies
 * only (nothing replaced, nothing released); the provider then signs with the key held by a real
 * ssh-agent (Debian's openssh-client) through SSH_AUTH_SOCK, which no input names; an up without
 * an agent is refused before anything runs. Prints the checkpoint bytes per node with the key and with the agent.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, StackValues, exportedResources, ok, operationLines, planOperations, previewOperations, privateKeyBody, sandboxValues, startSandbox } from "./engine";

const storage = "local-fast";
const vg = `zcloud-${storage}`;

let sandbox: Sandbox;
let stack: EngineStack;
let agentPid: number | undefined;
let agentSock: string;
const outputs: string[] = [];

before(() => {
    sandbox = startSandbox({ nodes: 2, devices: 2 });
    agentSock = path.join(sandbox.dir, "agent.sock");
    // -a: a socket of our own; the agent forks and prints its pid.
    const out = execFileSync("ssh-agent", ["-s", "-a", agentSock], { encoding: "utf8" });
    const pid = /SSH_AGENT_PID=(\d+)/.exec(out);
    if (!pid) {
        throw new Error(`ssh-agent did not print its pid:\n${out}`);
    }
    agentPid = Number(pid[1]);
    execFileSync("ssh-add", [sandbox.keyFile], { env: { ...process.env, SSH_AUTH_SOCK: agentSock }, stdio: "pipe" });
    stack = new EngineStack(sandbox, "ssh-agent");
});

after(() => {
    if (agentPid !== undefined) {
        process.kill(agentPid);
    }
    sandbox?.stop();
});

function values(devices: Record<string, number[]>, agent: boolean): StackValues {
    const hosts = Object.fromEntries(Object.entries(devices).map(([n, idx]) => [n, idx.map((i) => sandbox.nodes[n].devices[i])]));
    const v = sandboxValues(sandbox, { namespace: "zcloud-storage", lvm: [{ name: storage, default: true, hosts }] });
    return agent ? { ...v, ssh: { ...(v.ssh as Record<string, unknown>), agent: true } } : v;
}

async function pulumi(args: string[], agent: boolean) {
    if (agent) {
        sandbox.env.SSH_AUTH_SOCK = agentSock;
    } else {
        delete sandbox.env.SSH_AUTH_SOCK;
    }
    const r = await stack.pulumi(args);
    outputs.push(r.output);
    return r;
}

function vgDevices(name: string): string[] {
    return sandbox
        .lvm(name, ["pvs", "--noheadings", "-o", "pv_name,vg_name"])
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter(([, v]) => v === vg)
        .map(([pv]) => pv)
        .sort();
}

interface Checkpoint {
    indented: number;
    compact: number;
    /** Compact bytes of the node's resources (URNs naming `-node1-`). */
    node1: number;
    /** Of those: the registration stacks (`stackTrace`), their frame count, the disk command's stdout and stderr. */
    frames: { bytes: number; count: number };
    stdout: number;
    stderr: number;
}

async function checkpoint(): Promise<Checkpoint> {
    const text = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
    const doc = JSON.parse(text) as unknown;
    const node1 = exportedResources(text).filter((r) => r.urn.includes("-node1-")) as Array<{ urn: string; stackTrace?: unknown[]; outputs?: Record<string, unknown> }>;
    const disks = node1.find((r) => r.urn.endsWith("-disks"));
    return {
        indented: text.length,
        compact: JSON.stringify(doc).length,
        node1: node1.reduce((n, r) => n + JSON.stringify(r).length, 0),
        frames: { bytes: node1.reduce((n, r) => n + JSON.stringify(r.stackTrace ?? []).length, 0), count: node1.reduce((n, r) => n + (r.stackTrace ?? []).length, 0) },
        stdout: String(disks?.outputs?.stdout ?? "").length,
        stderr: String(disks?.outputs?.stderr ?? "").length,
    };
}

/** The decrypted connection of every remote resource (`stack export --show-secrets`). */
async function connections(): Promise<Array<[string, Record<string, unknown>]>> {
    const text = ok(await stack.pulumi(["stack", "export", "--show-secrets"]), "pulumi stack export --show-secrets").stdout;
    return exportedResources(text)
        .filter((r) => /command:remote:(Command|CopyToRemote)$/.test(r.type))
        .map((r) => [r.urn, revealed((r as { inputs?: Record<string, unknown> }).inputs?.connection)]);
}

/** A secret as `--show-secrets` exports it: the signature key and `plaintext`, the value's JSON. */
function revealed(v: unknown): Record<string, unknown> {
    const secret = v as { plaintext?: unknown } | undefined;
    if (typeof secret?.plaintext !== "string") {
        throw new Error(`not a revealed secret: ${JSON.stringify(v)}`);
    }
    return JSON.parse(secret.plaintext) as Record<string, unknown>;
}

test("a stack moves from ssh.privateKey to ssh.agent: in-place updates only, then applies through the agent", async () => {
    const two = { node1: [0], node2: [0] };
    await stack.init(values(two, false));
    ok(await pulumi(["up", "--yes", "--skip-preview"], false), "pulumi up (key)");
    assert.deepEqual(vgDevices("node1"), [sandbox.nodes.node1.devices[0]]);
    const withKey = await checkpoint();
    const keyed = await connections();
    assert.equal(keyed.length, 4, "a disk command and a script copy per node");
    for (const [urn, c] of keyed) {
        // A secret of its own inside the connection (the provider marks privateKey secret).
        assert.ok(c.privateKey !== undefined, `${urn}: the key in the connection`);
    }

    const keyFile = stack.snapshot("key");
    stack.write(values(two, true));
    assert.doesNotMatch(fs.readFileSync(stack.stackFile, "utf8"), /privateKey/);
    const preview = previewOperations(ok(await pulumi(["preview", "--json"], false), "pulumi preview (agent, no agent running)").stdout);
    const remote = keyed.map(([urn]) => `update ${urn}`).sort();
    assert.deepEqual(operationLines(preview), remote, "every remote command and copy updated in place, nothing else");
    assert.deepEqual(operationLines(await planOperations(stack.stackFile, keyFile)), remote, "npm run plan --diff lists what pulumi preview lists");

    ok(await pulumi(["up", "--yes", "--skip-preview"], true), "pulumi up (agent)");
    assert.deepEqual(vgDevices("node1"), [sandbox.nodes.node1.devices[0]], "the apply ran again: nothing on the disks changed");
    for (const [urn, c] of await connections()) {
        assert.deepEqual(Object.keys(c).filter((k) => /key|agent|password/i.test(k)), ["hostKey"], `${urn}: ${JSON.stringify(c)}`);
    }
    const withAgent = await checkpoint();
    ok(await pulumi(["preview", "--expect-no-changes"], true), "pulumi preview --expect-no-changes");

    // A change on node1: without an agent the program refuses the up before anything runs.
    stack.write(values({ node1: [0, 1], node2: [0] }, true));
    const refused = await pulumi(["up", "--yes", "--skip-preview"], false);
    assert.notEqual(refused.code, 0);
    assert.match(refused.output, /ssh\.agent: is true, but SSH_AUTH_SOCK is not set where pulumi runs/);
    assert.deepEqual(vgDevices("node1"), [sandbox.nodes.node1.devices[0]], "nothing ran");

    ok(await pulumi(["up", "--yes", "--skip-preview"], true), "pulumi up (agent, node1 grows)");
    assert.deepEqual(vgDevices("node1"), [sandbox.nodes.node1.devices[0], sandbox.nodes.node1.devices[1]].sort(), "node1's new device joined through the agent-held key");
    ok(await pulumi(["preview", "--expect-no-changes"], true), "pulumi preview --expect-no-changes (after the change)");

    ok(await pulumi(["destroy", "--yes", "--skip-preview"], true), "pulumi destroy (agent)");
    assert.deepEqual(vgDevices("node1"), [], "released through the agent");

    for (const line of privateKeyBody(sandbox.keyFile)) {
        for (const out of outputs) {
            assert.ok(!out.includes(line), "the clear SSH key never reaches the CLI output");
        }
    }
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    console.log(
        `ssh-agent checkpoint, 2 nodes: indented ${kib(withKey.indented)} -> ${kib(withAgent.indented)}, compact ${kib(withKey.compact)} -> ${kib(withAgent.compact)}; node1's resources compact ${kib(withKey.node1)} -> ${kib(withAgent.node1)}`,
    );
    console.log(
        `node1's resources (agent): ${withAgent.frames.count} registration frames, ${withAgent.frames.bytes} bytes compact; disk command stdout ${withAgent.stdout} bytes, stderr ${withAgent.stderr} bytes`,
    );
    assert.ok(withAgent.node1 < withKey.node1 - 2000, `node1's resources shrink by the key's ciphertext (${withKey.node1} -> ${withAgent.node1})`);
});
