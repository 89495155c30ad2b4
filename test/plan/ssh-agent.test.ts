// `ssh.agent: true` under the mock runtime: no connection carries a private key, and an existing
// stack moved from ssh.privateKey to the agent gets in-place updates of its node commands only.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { PlanRun, PlannedResource, planValues } from "../helpers/plan";

const pin = (n: number) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest${n}`;
const common = {
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
    lvm: [{ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/disk/by-id/wwn-0x2"] } }],
    cephfs: [],
    iscsi: [
        {
            name: "san",
            portals: ["10.0.0.50:3260"],
            iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
            chap: { username: "k8s", password: { secure: "v1:chap" } },
            initiators: ["node3"],
        },
    ],
};
const hostKeys = { node1: pin(1), node2: pin(2), node3: pin(3) };
const withKey = { ...common, ssh: { privateKey: { secure: "v1:key" }, hostKeys } };
const withAgent = { ...common, ssh: { agent: true, hostKeys } };

const remote = (run: PlanRun) => run.resources.filter((r) => r.type === "command:remote:Command" || r.type === "command:remote:CopyToRemote");
const connection = (r: PlannedResource) => r.policyInputs?.connection as Record<string, unknown>;

describe("ssh.agent: true", () => {
    let keyRun: PlanRun;
    let agentRun: PlanRun;
    before(async () => {
        [keyRun, agentRun] = await Promise.all([planValues(withKey), planValues(withAgent)]);
    });

    test("plans without errors", () => {
        assert.equal(agentRun.error, undefined);
        assert.ok(remote(agentRun).length >= 6, `remote resources: ${remote(agentRun).map((r) => r.name).join(", ")}`);
    });

    test("no remote command or copy carries a private key (nor an agent socket path)", () => {
        for (const r of remote(agentRun)) {
            const c = connection(r);
            assert.equal(c.host !== undefined, true, r.name);
            assert.deepEqual(
                Object.keys(c).filter((k) => /key|agent|password/i.test(k)),
                ["hostKey"],
                `${r.name}: ${JSON.stringify(c)}`,
            );
        }
        // With the key, every one does (shown hidden).
        for (const r of remote(keyRun)) {
            assert.equal(connection(r).privateKey, "[secret]", r.name);
        }
    });

    test("the same resources with the same inputs apart from the connection", () => {
        const shape = (run: PlanRun) => run.resources.map((r) => [r.urn, r.inputs, [...r.dependencies].sort()]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
        assert.deepEqual(shape(agentRun), shape(keyRun));
    });

    test("key -> agent on an existing stack: each node command and script copy updated in place, nothing else", () => {
        const changes = diffPlans(keyRun.resources, agentRun.resources);
        const commands = remote(keyRun).map((r) => r.name).sort();
        assert.deepEqual(
            changes.map((c) => [c.kind, c.resource.name, c.fields, c.replaceBecause, c.connection]).sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
            commands.map((name) => ["update", name, ["connection"], [], ["connection: key private key -> ssh-agent"]]),
        );
        // And back.
        const back = diffPlans(agentRun.resources, keyRun.resources);
        assert.deepEqual([...new Set(back.map((c) => c.kind))], ["update"]);
        assert.deepEqual([...new Set(back.flatMap((c) => c.connection ?? []))], ["connection: key ssh-agent -> private key"]);
    });
});
