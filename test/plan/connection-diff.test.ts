// A node command's SSH connection is one secret input: the offline --diff must still show a change
// of where it connects (pulumi up would run the disk command over the new connection).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-conn-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const key = (n: number) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA${n}`;
const disk = (n: number) => `/dev/disk/by-id/wwn-0x500${n}`;

function stackFile(name: string, ssh: Record<string, unknown>, nodes: Record<string, unknown>): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const config = {
        "zcloud-storage:ssh": { privateKey: { secure: "v1:abc" }, ...ssh },
        "zcloud-storage:nodes": nodes,
        "zcloud-storage:lvm": [{ name: "local-fast", hosts: { node1: [disk(1)], node2: [disk(2)] } }],
    };
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}

const pins = { hostKeys: { node1: key(1), node2: key(2) } };
const nodes = { node1: { address: "10.0.0.1" }, node2: { address: "10.0.0.2" } };
const base = stackFile("base", pins, nodes);

/**
 * The change lines of `--diff` output (from the first change to the counts), each change with its
 * detail lines; changes of one kind in name order (the plan prints them in registration order).
 */
function changeBlock(stdout: string): string[] {
    const lines = stdout.split("\n");
    const start = lines.findIndex((l) => l.startsWith("Changes from ")) + 2;
    const changes: string[][] = [];
    for (const line of lines.slice(start, lines.indexOf("", start))) {
        if (line.startsWith(" ") && changes.length) {
            changes[changes.length - 1].push(line);
        } else {
            changes.push([line]);
        }
    }
    return changes.sort((a, b) => a[0].localeCompare(b[0])).flat();
}

const pad = " ".repeat(26);
const inPlace = `${pad}note: pulumi up updates this command in place: it runs the apply script again over the new connection and runs nothing over the old one.`;
const moved = `${pad}note: if the new endpoint is another machine, its devices get prepared there and the old machine keeps its volume group and data as they are; to move a node's storage, remove the node from the storage first (its disks are released), then add it back.`;
const node1 = `~  update                 local-fast-node1-disks  local-fast prepare node1 [${disk(1)}]: connection changed`;
const node2 = `~  update                 local-fast-node2-disks  local-fast prepare node2 [${disk(2)}]: connection changed`;
// The script copy to each node has the same connection: pulumi up updates it too (it copies nothing).
const copyNote = `${pad}note: pulumi up updates this copy in place and copies nothing (the file it copied is unchanged).`;
const copyLine = (n: number) => new RegExp(`^~  update {17}local-fast-node${n}-disks-scripts  local-fast copy script set [0-9a-f]{12} to node${n}: connection changed$`);
/** The change block with each copy's header line checked against copyLine and replaced by `copy node<n>`. */
function withCopies(block: string[]): string[] {
    return block.map((l) => {
        const n = /local-fast-node(\d)-disks-scripts /.exec(l)?.[1];
        if (n === undefined) {
            return l;
        }
        assert.match(l, copyLine(Number(n)));
        return `copy node${n}`;
    });
}

describe("npm run plan --diff: connection changes", () => {
    test("a new address and port of node1: an in-place update of its disk command, old -> new", async () => {
        const moved1 = stackFile("moved", pins, { ...nodes, node1: { address: "10.9.9.9", port: 2222 } });
        const r = await plan(moved1, "--diff", base);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(withCopies(changeBlock(r.stdout)), [
            node1,
            `${pad}connection: address 10.0.0.1 -> 10.9.9.9`,
            `${pad}connection: port 22 -> 2222`,
            inPlace,
            moved,
            "copy node1",
            `${pad}connection: address 10.0.0.1 -> 10.9.9.9`,
            `${pad}connection: port 22 -> 2222`,
            copyNote,
        ]);
        assert.match(r.stdout, /^2 to update$/m);
    });

    test("a removed host-key pin and a new SSH user", async () => {
        const changed = stackFile("unpinned", { hostKeys: { node1: key(1) } }, { ...nodes, node1: { address: "10.0.0.1", user: "ops" } });
        const r = await plan(changed, "--diff", base);
        assert.equal(r.code, 0, r.stderr);
        // A non-root user also runs the scripts through sudo: the commands' text changes too.
        assert.deepEqual(withCopies(changeBlock(r.stdout)), [
            node1.replace("connection changed", "connection, create, delete changed"),
            `${pad}connection: user root -> ops`,
            inPlace,
            "copy node1",
            `${pad}connection: user root -> ops`,
            copyNote,
            node2,
            `${pad}connection: host key pin removed`,
            inPlace,
            "copy node2",
            `${pad}connection: host key pin removed`,
            copyNote,
        ]);
        assert.match(r.stdout, /^4 to update$/m);
    });

    test("a bastion added shows on every node command and script copy; --json carries the same lines and no credential", async () => {
        const jumped = stackFile("jump", { ...pins, bastion: { host: "jump.example", user: "ops", hostKey: key(9), privateKey: { secure: "v1:bastion" } } }, nodes);
        const text = await plan(jumped, "--diff", base);
        assert.equal(text.code, 0, text.stderr);
        const added = `${pad}connection: bastion added: ops@jump.example:22`;
        assert.deepEqual(withCopies(changeBlock(text.stdout)), [node1, added, inPlace, moved, "copy node1", added, copyNote, node2, added, inPlace, moved, "copy node2", added, copyNote]);
        const json = await plan(jumped, "--diff", base, "--json");
        assert.equal(json.code, 0, json.stderr);
        const out = JSON.parse(json.stdout);
        assert.deepEqual(
            out.changes.map((c: { urn: string }) => ({ ...c, urn: c.urn.slice(c.urn.lastIndexOf("::") + 2) })).sort((a: { urn: string }, b: { urn: string }) => a.urn.localeCompare(b.urn)),
            ["local-fast-node1-disks", "local-fast-node1-disks-scripts", "local-fast-node2-disks", "local-fast-node2-disks-scripts"].map((name) => ({
                kind: "update",
                urn: name,
                fields: ["connection"],
                replaceBecause: [],
                connection: ["connection: bastion added: ops@jump.example:22"],
            })),
        );
        assert.doesNotMatch(json.stdout + text.stdout, /offline-secret|v1:bastion|v1:abc/);
    });

    test("the same connection in both files is no change", async () => {
        const r = await plan(base, "--diff", stackFile("same", pins, nodes));
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(changeBlock(r.stdout), ["no changes"]);
    });
});

describe("npm run plan: loopback node addresses", () => {
    test("are flagged with one advisory line per node, in text and in --json; the plan still passes", async () => {
        const sandbox = stackFile("sandbox", pins, { node1: { address: "127.0.0.1", port: 2201 }, node2: { address: "::1", port: 2202 } });
        const advisory = (node: string, address: string) =>
            `node ${node} is reached at ${address}, a loopback address: its disk commands run on the machine that runs pulumi up (through a bastion: on the bastion), not on a cluster node; right only for a test sandbox`;
        const text = await plan(sandbox);
        assert.equal(text.code, 0, text.stderr);
        assert.deepEqual(text.stdout.split("\n").slice(0, 2), [`advisory: ${advisory("node1", "127.0.0.1")}`, `advisory: ${advisory("node2", "::1")}`]);
        const json = await plan(sandbox, "--json");
        assert.equal(json.code, 0, json.stderr);
        assert.deepEqual(JSON.parse(json.stdout).advisories, [advisory("node1", "127.0.0.1"), advisory("node2", "::1")]);
        const none = await plan(base);
        assert.doesNotMatch(none.stdout, /advisory|loopback/);
    });
});
