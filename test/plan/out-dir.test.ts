// `--out DIR` for review: a non-empty DIR is refused unless it holds only an earlier --out's files
// and --force is given; files are named by kind, namespace and name; index.txt lists them in apply
// order; node commands carry a header (node, address, devices, what it does) and name their bundle.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { bundleOf } from "../helpers/bundles";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-out-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1";
function stackFile(name: string, lvmHosts: Record<string, string[]>): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const config = {
        "zcloud-storage:ssh": { user: "ops", privateKey: { secure: "v1:abc" }, hostKeys: { node1: key, node2: key } },
        "zcloud-storage:nodes": { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12", port: 2222 } },
        "zcloud-storage:lvm": [{ name: "local-fast", hosts: lvmHosts }],
    };
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}
const disk = (n: number) => `/dev/disk/by-id/wwn-0x500${n}`;
const two = stackFile("two", { node1: [disk(1)], node2: [disk(2), disk(3)] });
const one = stackFile("one", { node1: [disk(1)] });

/** Every file below `d`, relative, sorted. */
const filesBelow = (d: string) =>
    fs.readdirSync(d, { recursive: true, withFileTypes: true }).filter((e) => !e.isDirectory()).map((e) => path.relative(d, path.join(e.parentPath, e.name))).sort();

describe("plan --out", () => {
    test("files named by kind, namespace and name; a ServiceAccount and a DaemonSet of one name get two files", async () => {
        const out = path.join(dir, "named");
        const r = await plan(two, "--out", out);
        assert.equal(r.code, 0, r.stderr);
        const files = filesBelow(out);
        assert.ok(files.includes("manifests/zcloud-storage/serviceaccount-topolvm-node.yaml"), files.join("\n"));
        assert.ok(files.includes("manifests/zcloud-storage/daemonset-topolvm-node.yaml"));
        assert.ok(files.includes("manifests/_cluster/storageclass-local-fast.yaml"));
        assert.ok(files.includes("manifests/_cluster/node-patch-local-fast-node1-label.yaml"));
        const ds = yaml.load(fs.readFileSync(path.join(out, "manifests/zcloud-storage/daemonset-topolvm-node.yaml"), "utf8")) as any;
        assert.equal(ds.kind, "DaemonSet");
        assert.equal(ds.metadata.name, "topolvm-node");
        assert.equal(ds.metadata.namespace, "zcloud-storage");
    });

    test("index.txt lists every written file in apply order: a disk command after its bundle copy, the label after the disks", async () => {
        const out = path.join(dir, "index");
        assert.equal((await plan(two, "--out", out)).code, 0);
        const lines = fs.readFileSync(path.join(out, "index.txt"), "utf8").split("\n").filter((l) => /^ *\d+ {2}/.test(l));
        const files = lines.map((l) => l.trim().split(/\s+/)[1]);
        const at = (f: string) => files.indexOf(f);
        const bundle = `node-scripts/${bundleOf(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]).sha256.slice(0, 12)}.sh`;
        assert.ok(at(bundle) >= 0 && at(bundle) < at("node-commands/local-fast-node1-disks.create.sh"));
        assert.ok(at("node-commands/local-fast-node1-disks.create.sh") < at("manifests/_cluster/node-patch-local-fast-node1-label.yaml"));
        assert.ok(at("manifests/_cluster/namespace-zcloud-storage.yaml") < at("manifests/zcloud-storage/daemonset-topolvm-node.yaml"));
        assert.match(fs.readFileSync(path.join(out, "index.txt"), "utf8"), /When a storage or node is removed, in reverse order:\n +node-commands\/local-fast-node2-disks\.delete\.sh/);
        // A delete script is labelled as the delete it is, never with its create's "prepare".
        const deletes = fs.readFileSync(path.join(out, "index.txt"), "utf8").split("\n").filter((l) => l.includes(".delete.sh"));
        assert.deepEqual(deletes, [
            `     node-commands/local-fast-node2-disks.delete.sh    # delete: local-fast release node2 [${disk(2)}, ${disk(3)}]`,
            `     node-commands/local-fast-node1-disks.delete.sh    # delete: local-fast release node1 [${disk(1)}]`,
        ]);
        // Every manifest and create command is in the index; every indexed file exists.
        const written = filesBelow(out);
        for (const f of written.filter((w) => w.startsWith("manifests/") || w.endsWith(".create.sh"))) {
            assert.ok(files.includes(f), `${f} is in the index`);
        }
        for (const f of files) {
            assert.ok(written.includes(f), `${f} exists`);
        }
    });

    test("a node command: header with node, address, devices, what it does; the bundle it runs written verbatim", async () => {
        const out = path.join(dir, "header");
        assert.equal((await plan(two, "--out", out)).code, 0);
        const { sha256, text } = bundleOf(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]);
        const script = fs.readFileSync(path.join(out, "node-commands/local-fast-node2-disks.create.sh"), "utf8");
        assert.deepEqual(script.split("\n").slice(0, 8), [
            "#!/bin/sh",
            "# local-fast-node2-disks: create",
            "# node:    node2 (ops@10.0.0.12:2222)",
            `# devices: ${disk(2)} ${disk(3)}`,
            "# does:    makes the volume group hold exactly the listed devices: creates PVs/VG, adds new devices, reduces and wipes devices no longer listed (refuses while they hold extents)",
            `# runs:    lvm-reconcile apply --vg zcloud-local-fast --node node2 ${disk(2)} ${disk(3)}`,
            `# script:  ../node-scripts/${sha256.slice(0, 12)}.sh (sha256 ${sha256})`,
            "# The command Pulumi runs over SSH follows: a stub that checks the copied bundle's hash, then runs it.",
        ]);
        assert.ok(script.length < 2000, "the stub, not the scripts' text");
        assert.match(fs.readFileSync(path.join(out, "node-commands/local-fast-node2-disks.delete.sh"), "utf8"), /^# does: {4}removes the volume group and wipes its PVs; refuses while logical volumes exist$/m);
        const bundle = fs.readFileSync(path.join(out, `node-scripts/${sha256.slice(0, 12)}.sh`), "utf8");
        assert.equal(bundle, text);
        assert.equal(createHash("sha256").update(bundle).digest("hex"), sha256);
    });

    test("a folder an earlier --out wrote: refused without --force; --force leaves no stale file", async () => {
        const out = path.join(dir, "twice");
        assert.equal((await plan(two, "--out", out)).code, 0);
        const first = filesBelow(out);
        const again = await plan(one, "--out", out);
        assert.equal(again.code, 2);
        assert.equal(again.stderr.trim(), `--out ${out}: holds the output of an earlier --out (${first.length - 1} files); give --force to replace it, or a new folder`);
        assert.deepEqual(filesBelow(out), first, "nothing changed");
        const forced = await plan(one, "--out", out, "--force");
        assert.equal(forced.code, 0, forced.stderr);
        const files = filesBelow(out);
        assert.ok(!files.some((f) => f.includes("node2")), files.join("\n"));
        assert.ok(files.includes("node-commands/local-fast-node1-disks.create.sh"));
        assert.ok(!fs.existsSync(path.join(out, "manifests/_cluster/node-patch-local-fast-node2-label.yaml")));
        const listed = fs.readFileSync(path.join(out, ".zcloud-plan-out"), "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
        assert.deepEqual([...listed].sort(), files.filter((f) => f !== ".zcloud-plan-out"));
    });

    test("--force with a file --out did not write: refused, naming it; nothing removed", async () => {
        const out = path.join(dir, "foreign");
        assert.equal((await plan(two, "--out", out)).code, 0);
        fs.writeFileSync(path.join(out, "manifests", "my-notes.txt"), "keep me\n");
        const before = filesBelow(out);
        const r = await plan(one, "--out", out, "--force");
        assert.equal(r.code, 2);
        assert.equal(r.stderr.trim(), `--out ${out}: holds files an earlier --out did not write: manifests/my-notes.txt; move them away (--force removes only what --out wrote)`);
        assert.deepEqual(filesBelow(out), before);
    });

    test("a non-empty folder --out never wrote: refused, even with --force, naming what it holds", async () => {
        const out = path.join(dir, "home");
        fs.mkdirSync(path.join(out, "src"), { recursive: true });
        fs.writeFileSync(path.join(out, "src", "main.go"), "package main\n");
        for (const args of [[], ["--force"]]) {
            const r = await plan(one, "--out", out, ...args);
            assert.equal(r.code, 2);
            assert.equal(r.stderr.trim(), `--out ${out}: is not empty and was not written by --out (it holds src/main.go); give a new or empty folder`);
        }
        assert.deepEqual(filesBelow(out), ["src/main.go"]);
    });

    test("--force without --out is a usage error", async () => {
        const r = await plan(one, "--force");
        assert.equal(r.code, 2);
        assert.match(r.stderr, /^--force goes with --out: it replaces what an earlier --out wrote\n/);
    });
});
