// One message per cause: violations that repeat one cause per resource (an unpinned bastion, a
// namespace other than the pack's) print once, naming every resource, with the fix once.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import * as yaml from "js-yaml";
import { formatViolations } from "../../policy/policies";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-grouped-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
function stackFile(name: string, extra: Record<string, unknown>, ssh: Record<string, unknown> = {}): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const config = {
        "zcloud-storage:ssh": { privateKey: { secure: "v1:abc" }, hostKeys: { node1: key, node2: key, node3: key }, ...ssh },
        "zcloud-storage:nodes": { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
        "zcloud-storage:lvm": [{ name: "local", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/disk/by-id/wwn-0x2"] } }],
        "zcloud-storage:iscsi": [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.example:san", chap: { username: "k8s", password: { secure: "v1:chap" } }, initiators: ["node1", "node2", "node3"] }],
        ...extra,
    };
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}
const policyBlock = (stdout: string) => stdout.slice(stdout.indexOf("Policies:"));
const entries = (block: string) => block.split("\n").filter((l) => l.startsWith("        - ["));

describe("violations grouped by cause", () => {
    it("an unpinned bastion: one advisory naming every remote command behind it", async () => {
        const r = await plan(stackFile("bastion", {}, { bastion: { host: "jump.example", user: "ops" } }));
        assert.equal(r.code, 0, r.stderr);
        const block = policyBlock(r.stdout);
        // In URN order, as the CLI sorts violations (the iscsi component type sorts first).
        const names = ["san-node1-login", "san-node2-login", "san-node3-login", "san-vg", "local-node1-disks", "local-node2-disks"];
        assert.deepEqual(entries(block), [`        - [advisory]  storage-ssh-host-key-pinned  (command:remote:Command: ${names.join(", ")})`]);
        assert.match(
            block,
            new RegExp(`^ {10}6 remote commands \\(${names.join(", ")}\\) go through bastion jump\\.example without a pinned SSH host key: a man in the middle at the bastion receives the login for every node behind it\\. Pin it as zcloud-storage:ssh\\.bastion\\.hostKey \\(as printed by \`ssh-keyscan -t ed25519 jump\\.example\`, checked out of band\\)\\.$`, "m"),
        );
        // --json keeps one violation per resource (the CrossGuard shape).
        const json = JSON.parse((await plan(stackFile("bastion", {}, { bastion: { host: "jump.example", user: "ops" } }), "--json")).stdout);
        assert.equal(json.violations.length, 6);
    });

    it("a moved namespace: one violation with the exact --policy-pack-config JSON, which clears it", async () => {
        const stack = stackFile("moved", { "zcloud-storage:namespace": "storage" });
        const r = await plan(stack);
        assert.equal(r.code, 1);
        const block = policyBlock(r.stdout);
        assert.equal(entries(block).length, 1, block);
        assert.match(entries(block)[0], /^ {8}- \[mandatory\] {2}storage-privileged-namespace {2}\(kubernetes:core\/v1:Namespace: namespace; kubernetes:apps\/v1:DaemonSet: /);
        const fix = block.split("\n").filter((l) => l.startsWith("            {"));
        assert.deepEqual(fix, ['            {"storage-privileged-namespace":{"namespace":"storage"}}']);
        const config = path.join(dir, "pack.json");
        fs.writeFileSync(config, fix[0].trim());
        const fixed = await plan(stack, "--policy-pack-config", config);
        assert.equal(fixed.code, 0, fixed.stdout);
        assert.doesNotMatch(fixed.stdout, /storage-privileged-namespace/);
    });

    it("violations of different causes stay apart; a lone one prints as before", () => {
        const urn = (name: string) => `urn:pulumi:s::zcloud-storage::command:remote:Command::${name}`;
        const msg = (name: string, rest: string) => `remote command '${name}' ${rest} without a pinned SSH host key: why.`;
        const text = formatViolations([
            { policy: "storage-ssh-host-key-pinned", enforcementLevel: "advisory", urn: urn("a-n1-disks"), message: msg("a-n1-disks", "connects to 10.0.0.1") },
            { policy: "storage-ssh-host-key-pinned", enforcementLevel: "advisory", urn: urn("b-n1-login"), message: msg("b-n1-login", "connects to 10.0.0.1") },
            { policy: "storage-ssh-host-key-pinned", enforcementLevel: "advisory", urn: urn("a-n2-disks"), message: msg("a-n2-disks", "connects to 10.0.0.2") },
        ]);
        assert.deepEqual(text.split("\n").slice(2), [
            "        - [advisory]  storage-ssh-host-key-pinned  (command:remote:Command: a-n1-disks, b-n1-login)",
            "          Remote commands pin the node's SSH host key.",
            "          2 remote commands (a-n1-disks, b-n1-login) connect to 10.0.0.1 without a pinned SSH host key: why.",
            "        - [advisory]  storage-ssh-host-key-pinned  (command:remote:Command: a-n2-disks)",
            "          Remote commands pin the node's SSH host key.",
            "          remote command 'a-n2-disks' connects to 10.0.0.2 without a pinned SSH host key: why.",
            "",
        ]);
    });
});
