/**
 * `--diff-ref REV`: the base of a diff is the stack file as it was at a git revision, with the
 * config files it listed as they were there (a pull request that drops a node from an inventory
 * file shows the node's release); `--diff OLD` refuses an OLD that shares the stack's config
 * files, whose change it could not show.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { plan } from "../helpers/planCli";

const repo = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-diff-ref-"));
after(() => fs.rmSync(repo, { recursive: true, force: true }));
const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args], { cwd: repo, encoding: "utf8" });
const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    fs.writeFileSync(path.join(repo, file), text);
};
const stack = path.join(repo, "stacks", "Pulumi.inv.yaml");
const inventory = (nodes: string[]) =>
    [
        "config:",
        "  zcloud-storage:nodes:",
        ...nodes.map((n, i) => `    ${n}: { address: 10.0.0.${11 + i} }`),
        "  zcloud-storage:lvm:",
        `    - { name: local-fast, hosts: { ${nodes.map((n) => `${n}: [/dev/disk/by-id/wwn-0x${n}]`).join(", ")} } }`,
        "",
    ].join("\n");

before(() => {
    git("init", "-q", "-b", "main");
    write("stacks/Pulumi.inv.yaml", "config:\n  zcloud-storage:configFiles: [inv/nodes.yaml]\n  zcloud-storage:ssh: { user: root, agent: true }\n");
    write("stacks/inv/nodes.yaml", inventory(["node1", "node2"]));
    git("add", "-A");
    git("commit", "-q", "-m", "base");
    // the pull request: node2 leaves the inventory (its VG released, its disks freed)
    write("stacks/inv/nodes.yaml", inventory(["node1"]));
});

describe("--diff-ref", () => {
    test("the base's inventory comes from the revision: the node the change drops shows as deleted", async () => {
        const r = await plan(stack, "--diff-ref", "main");
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^Changes from main:stacks\/Pulumi\.inv\.yaml to /m);
        const deleted = r.stdout.split("\n").filter((l) => l.startsWith("-  delete"));
        assert.ok(deleted.some((l) => / local-fast-node2-disks /.test(l)), r.stdout);
        assert.ok(!deleted.some((l) => /node1/.test(l)), r.stdout);
    });

    test("--diff with the base's stack file copied beside the head's is refused: it would read the head's inventory and show no change", async () => {
        const copy = path.join(repo, "stacks", "Pulumi.inv-base.yaml");
        fs.writeFileSync(copy, git("show", "main:stacks/Pulumi.inv.yaml"));
        const r = await plan(stack, "--diff", copy);
        assert.equal(r.code, 2);
        assert.equal(r.stdout, "");
        assert.equal(
            r.stderr,
            `--diff ${copy}: lists config files the stack lists too (${path.relative(process.cwd(), path.join(repo, "stacks", "inv", "nodes.yaml"))}): the base would read them as they are now, so a change in them would not show; compare with the base revision instead: --diff-ref <git rev>\n`,
        );
        fs.rmSync(copy);
    });

    test("a revision that is no commit, a stack new since it, a linked inventory folder at it: refused with one line each", async () => {
        const none = await plan(stack, "--diff-ref", "no-such-branch");
        assert.equal(none.code, 2);
        assert.equal(none.stderr, "--diff-ref no-such-branch: not a commit here (fetch it first, e.g. git fetch origin main)\n");
        write("stacks/Pulumi.fresh.yaml", "config:\n  zcloud-storage:nodes: {}\n");
        const fresh = await plan(path.join(repo, "stacks", "Pulumi.fresh.yaml"), "--diff-ref", "main");
        assert.equal(fresh.code, 2);
        assert.equal(fresh.stderr, "--diff-ref main: stacks/Pulumi.fresh.yaml does not exist at main (a new stack: plan it without --diff-ref)\n");
        // a branch whose inventory folder is a link out of the stacks directory
        git("checkout", "-q", "-b", "linked");
        fs.mkdirSync(path.join(repo, "elsewhere"));
        fs.renameSync(path.join(repo, "stacks", "inv", "nodes.yaml"), path.join(repo, "elsewhere", "nodes.yaml"));
        fs.rmdirSync(path.join(repo, "stacks", "inv"));
        fs.symlinkSync("../elsewhere", path.join(repo, "stacks", "inv"));
        git("add", "-A");
        git("commit", "-q", "-m", "linked");
        // a branch whose stacks directory itself is a link
        git("checkout", "-q", "-b", "linked-stacks", "main");
        fs.renameSync(path.join(repo, "stacks"), path.join(repo, "real-stacks"));
        fs.symlinkSync("real-stacks", path.join(repo, "stacks"));
        git("add", "-A");
        git("commit", "-q", "-m", "linked stacks");
        git("checkout", "-q", "main");
        const linkedStacks = await plan(stack, "--diff-ref", "linked-stacks");
        assert.equal(linkedStacks.code, 2, linkedStacks.stderr);
        assert.equal(linkedStacks.stderr, "--diff-ref linked-stacks: stacks/Pulumi.inv.yaml at linked-stacks is reached through stacks, a symbolic link; a stack file is read only through real directories\n");
        const linked = await plan(stack, "--diff-ref", "linked");
        assert.equal(linked.code, 2, linked.stderr);
        assert.equal(
            linked.stderr,
            "linked:stacks/Pulumi.inv.yaml: 1 error(s) in the config files it lists at linked; nothing was planned:\n  - zcloud-storage:configFiles[0]: inv/nodes.yaml is reached through inv, a symbolic link; keep config files in real folders beside the stack file, so that what reviewers read is what the stack uses\n",
        );
    });
});
