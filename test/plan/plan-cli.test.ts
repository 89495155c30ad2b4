import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { bundleOf } from "../helpers/bundles";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function stackFile(name: string, lvmHosts: Record<string, string[]>, extra: Record<string, unknown> = {}): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const config = {
        "zcloud-storage:ssh": { privateKey: { secure: "v1:abc" }, hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1", node2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA2", node3: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA3" } },
        "zcloud-storage:nodes": { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
        "zcloud-storage:lvm": [{ name: "local-fast", default: true, hosts: lvmHosts }],
        ...extra,
    };
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}

const disk = (n: number) => `/dev/disk/by-id/wwn-0x500${n}`;
const twoNodes = stackFile("two", { node1: [disk(1)], node2: [disk(2)] });
const threeNodes = stackFile("three", { node1: [disk(1)], node2: [disk(2)], node3: [disk(3)] });
const node2Grows = stackFile("grow", { node1: [disk(1)], node2: [disk(2), disk(4)] });

describe("npm run plan", () => {
    test("adding node3 to local-fast creates exactly its script copy, disk command and label", async () => {
        const r = await plan(threeNodes, "--diff", twoNodes);
        assert.equal(r.code, 0, r.stderr);
        const changes = r.stdout.split("\n").filter((l) => /^(\+|~|-|\+-) /.test(l));
        assert.deepEqual(changes, [
            `+  create                 local-fast-node3-disks-scripts  local-fast copy script set ${bundleOf(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]).sha256.slice(0, 12)} to node3`,
            `+  create                 local-fast-node3-disks  local-fast prepare node3 [${disk(3)}]`,
            "+  create                 local-fast-node3-label  label node node3 storage.zcloud.io/lvm=local-fast",
        ]);
        assert.match(r.stdout, /^3 to create$/m);
    });

    test("removing node3 deletes its label, its disk command and its script copy only", async () => {
        const r = await plan(twoNodes, "--diff", threeNodes);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^- +delete +local-fast-node3-disks-scripts /m);
        assert.match(r.stdout, /^- +delete +local-fast-node3-disks /m);
        assert.match(r.stdout, /^- +delete +local-fast-node3-label /m);
        assert.match(r.stdout, /^3 to delete$/m);
    });

    test("adding a device updates that node's command in place", async () => {
        const r = await plan(node2Grows, "--diff", twoNodes);
        assert.equal(r.code, 0, r.stderr);
        // What changes is told in disk terms (the device that joins), not as "create changed".
        assert.match(r.stdout, /^~  update +local-fast-node2-disks +local-fast prepare node2 \[[^\]]*\]$/m);
        assert.match(r.stdout, /^ +note: node2 \S+: joins local-fast, /m);
        // The label command's stdin is the Node it applies: what changed is named, not "stdin".
        assert.match(r.stdout, /^~  update +local-fast-node2-label +label node node2 storage.zcloud.io\/lvm=local-fast: devices annotation changed$/m);
        assert.match(r.stdout, /^2 to update$/m);
        // A device that joins unwiped destroys nothing: no DESTRUCTIVE line, none under the totals.
        assert.doesNotMatch(r.stdout, /DESTRUCTIVE:/);
    });

    test("--json prints resources with urn, type, name, parent, dependencies, inputs, and violations", async () => {
        const r = await plan(twoNodes, "--json");
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout);
        assert.deepEqual(Object.keys(out).sort(), ["resources", "violations"]);
        assert.deepEqual(out.violations, []);
        for (const res of out.resources) {
            assert.deepEqual(Object.keys(res).sort(), ["dependencies", "inputs", "name", "parent", "type", "urn"]);
        }
        const label = out.resources.find((x: any) => x.name === "local-fast-node1-label");
        const disks = out.resources.find((x: any) => x.name === "local-fast-node1-disks");
        assert.deepEqual(label.dependencies, [disks.urn]);
        assert.equal(disks.inputs.connection, "[secret]");
    });

    test("--out writes manifests and the node commands", async () => {
        const out = path.join(dir, "out");
        const r = await plan(twoNodes, "--out", out);
        assert.equal(r.code, 0, r.stderr);
        const sc = yaml.load(fs.readFileSync(path.join(out, "manifests", "_cluster", "storageclass-local-fast.yaml"), "utf8")) as any;
        assert.equal(sc.kind, "StorageClass");
        assert.equal(sc.apiVersion, "storage.k8s.io/v1");
        const commands = fs.readdirSync(path.join(out, "node-commands")).sort();
        assert.deepEqual(commands, [
            "local-fast-node1-disks.create.sh", "local-fast-node1-disks.delete.sh",
            "local-fast-node2-disks.create.sh", "local-fast-node2-disks.delete.sh",
        ]);
    });

    test("config errors exit 1 listing every error; nothing planned", async () => {
        const bad = stackFile("bad", { node1: [disk(1)], node9: [disk(9)] }, {
            "zcloud-storage:nfs": [{ name: "nfs", server: "nfs.local", path: "rel" }],
            "zcloud-storage:lvmm": [],
        });
        const r = await plan(bad);
        assert.equal(r.code, 1);
        assert.equal(r.stdout, "");
        assert.equal(
            r.stderr.slice(r.stderr.indexOf(": ") + 2),
            [
                "zcloud-storage config has 3 errors; nothing was changed:",
                '  - lvmm: unknown key; did you mean "lvm"? (known keys: namespace, imageRegistry, ssh, nodes, lvm, cephfs, iscsi, nfs, sharedResources, drivers, monitoring, leaderElection, configFiles)',
                '  - nfs[0].path: "rel" is not an absolute path on the server, e.g. /exports/k8s',
                '  - lvm[0].hosts.node9: node9 is not in zcloud-storage:nodes; did you mean "node1"?; add it there with its SSH address',
                "",
            ].join("\n"),
        );
    });

    test("a program of your own that breaks a mandatory policy fails the plan with exit 1", async () => {
        const empty = path.join(dir, "Pulumi.empty.yaml");
        fs.writeFileSync(empty, "config:\n  zcloud-storage:namespace: zcloud-storage\n");
        const r = await plan(empty, "--program", "test/policy/programs/lvm-and-cephfs-on-node.ts");
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stdout, /❌ zcloud-storage-policy@v0\.1\.0 \(local: policy\)/);
        assert.match(r.stdout, /- \[mandatory\]  storage-node-exclusive  \(command:local:Command: (local-fast|shared-fs)-node2-label\)/);
    });

    test("usage errors exit 2", async () => {
        const none = await plan();
        assert.equal(none.code, 2);
        assert.match(none.stderr, /give a stack name or stack file/);
        const missing = await plan("no-such-stack");
        assert.equal(missing.code, 2);
        assert.match(missing.stderr, /no stack "no-such-stack": give a stack name \(.*dev.*\) or the path of a stack file/);
    });

    /** Exit 2, exactly this one line on stderr, nothing planned. */
    async function refusedArgs(args: string[], line: string): Promise<void> {
        const r = await plan(...args);
        assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
        assert.equal(r.stderr, `${line}\n`);
        assert.equal(r.stdout, "");
    }

    test("--out that cannot be written fails before planning, with the path", async () => {
        const file = path.join(dir, "not-a-dir");
        fs.writeFileSync(file, "");
        await refusedArgs([twoNodes, "--out", path.join(file, "rendered")], `--out ${path.join(file, "rendered")}: ${file} is not a directory`);
        await refusedArgs([twoNodes, "--out", file], `--out ${file}: ${file} is not a directory`);
        assert.deepEqual(fs.readdirSync(dir).filter((f) => f.startsWith("not-a-dir")), ["not-a-dir"]);
    });

    test("a missing or invalid --policy-pack-config names the flag", async () => {
        const missing = path.join(dir, "no-such-pack.json");
        await refusedArgs([twoNodes, "--policy-pack-config", missing], `--policy-pack-config ${missing}: no such file`);
        const broken = path.join(dir, "broken-pack.json");
        fs.writeFileSync(broken, "{ levels");
        const parsed = await plan(twoNodes, "--policy-pack-config", broken);
        assert.equal(parsed.code, 2);
        assert.match(parsed.stderr, new RegExp(`^--policy-pack-config ${broken}: not valid JSON \\(.+\\)\n$`));
        const list = path.join(dir, "list-pack.json");
        fs.writeFileSync(list, "[]");
        await refusedArgs([twoNodes, "--policy-pack-config", list], `--policy-pack-config ${list}: must be a JSON object of policy names`);
    });

    test("a stack name cannot reach outside stacks/; a path must be an existing file", async () => {
        const notName = (arg: string) =>
            `stack "${arg}": not a stack name (lower-case letters, digits and "-", at most 63) nor a stack file path (a path has a "/" or ends in .yaml)`;
        for (const arg of ["..", "Dev", "dev.prod", "-dev", `a${"b".repeat(63)}`]) {
            await refusedArgs([arg], notName(arg));
        }
        await refusedArgs(["../dev"], "stack file ../dev: no such file");
        await refusedArgs(["stacks/../../Pulumi.dev.yaml"], "stack file stacks/../../Pulumi.dev.yaml: no such file");
        await refusedArgs(["/etc/zcloud-no-such.yaml"], "stack file /etc/zcloud-no-such.yaml: no such file");
        await refusedArgs(["stacks/"], "stack file stacks/: not a file");
        await refusedArgs([twoNodes, "--diff", "../prod"], "--diff stack file ../prod: no such file");
        // the same file by name and by path plans the same
        const byName = await plan("dev", "--json");
        const byPath = await plan("stacks/Pulumi.dev.yaml", "--json");
        assert.equal(byName.code, 0, byName.stderr);
        assert.equal(byPath.stdout, byName.stdout);
    });
});
