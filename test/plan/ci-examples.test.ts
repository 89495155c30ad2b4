/**
 * examples/ci: the plain script on a scratch git repository (base commit, then a changed stack,
 * then a broken one), and both workflow files against their published JSON schemas: GitHub's
 * workflow schema (SchemaStore's, inside @action-validator/core) and GitLab's CI schema (as
 * gitlab-ci-local ships it), each with a broken copy that must fail.
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as yaml from "js-yaml";
import Ajv from "ajv";
import { validateWorkflow } from "@action-validator/core";

const root = path.resolve(__dirname, "..", "..");
const script = path.join(root, "examples/ci/plan-changed-stacks.sh");
const githubWorkflow = path.join(root, "examples/ci/github/zcloud-storage.yml");
const gitlabJobs = path.join(root, "examples/ci/gitlab/zcloud-storage.gitlab-ci.yml");

const stack = (dev2: string, extra = "") => `config:
  zcloud-storage:ssh:
    user: root
    privateKey: { secure: v1:ciphertext }
    hostKeys:
      n1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJn1"
      n2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJn2"
  zcloud-storage:nodes:
    n1: { address: 10.0.0.11 }
    n2: { address: 10.0.0.12 }
  zcloud-storage:lvm:
    - name: fast
      hosts:
        n1: [/dev/disk/by-id/wwn-0x1]
        n2: [${dev2}]
${extra}`;

let repo: string;
const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });

function commit(files: Record<string, string>, message: string): void {
    for (const [file, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
        fs.writeFileSync(path.join(repo, file), text);
    }
    git("add", "-A");
    git("commit", "-q", "-m", message);
}

function runScript(env: Record<string, string>) {
    const { GITHUB_STEP_SUMMARY: _, ...rest } = process.env;
    return spawnSync("bash", [script, "main"], { cwd: repo, encoding: "utf8", env: { ...rest, ZCLOUD_DIR: root, ...env } });
}

before(() => {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ci-"));
    git("init", "-q", "-b", "main");
    git("config", "user.email", "ci@example.invalid");
    git("config", "user.name", "ci test");
    commit({ "stacks/Pulumi.prod.yaml": stack("/dev/disk/by-id/wwn-0x2"), "stacks/Pulumi.lab.yaml": stack("/dev/disk/by-id/wwn-0x3") }, "base");
    git("checkout", "-q", "-b", "change");
});

after(() => fs.rmSync(repo, { recursive: true, force: true }));

test("a changed stack: its change list and policy results in the summary, exit 0; unchanged stacks left out", () => {
    commit({ "stacks/Pulumi.prod.yaml": stack("/dev/disk/by-id/wwn-0x2, /dev/disk/by-id/wwn-0x4") }, "add a device on n2");
    const summary = path.join(repo, "..", `${path.basename(repo)}-summary.md`);
    const r = runScript({ GITHUB_STEP_SUMMARY: summary, PLAN_JSON_DIR: "json" });
    assert.equal(r.status, 0, r.stderr);
    const text = fs.readFileSync(summary, "utf8");
    fs.rmSync(summary);
    assert.ok(text.includes("### `stacks/Pulumi.prod.yaml` (changes from main)\n\nResult: **ok**"), text);
    assert.match(text, /~ +update +fast-n2-disks +fast prepare n2 \[\/dev\/disk\/by-id\/wwn-0x2, \/dev\/disk\/by-id\/wwn-0x4\]/);
    // An advisory shows in the summary and does not fail the check (the stack is prod, without monitoring).
    assert.match(text, /- \[advisory\] +storage-monitoring-on\n.*\n +Stack 'prod' deploys StorageClass 'fast' with monitoring off: /);
    assert.ok(!text.includes("Pulumi.lab.yaml"), "unchanged stack planned");
    const planned = JSON.parse(fs.readFileSync(path.join(repo, "json", "Pulumi.prod.yaml.json"), "utf8"));
    assert.ok(planned.changes.some((c: { urn: string }) => c.urn.endsWith("fast-n2-disks")), "the --json plan holds the changes");
});

test("a broken stack fails the check with its error in the summary file", () => {
    commit({ "stacks/Pulumi.lab.yaml": stack("/dev/disk/by-id/wwn-0x3", "    - name: fast\n      hosts: { n9: [/dev/sdb] }\n") }, "break lab");
    const r = runScript({ SUMMARY: "summary.md" });
    assert.equal(r.status, 1, r.stderr);
    const text = fs.readFileSync(path.join(repo, "summary.md"), "utf8");
    assert.ok(text.includes("### `stacks/Pulumi.lab.yaml` (changes from main)\n\nResult: **failed**: config errors or mandatory policy violations"), text);
    assert.match(text, /lvm\[1\]\.hosts\.n9: n9 is not in zcloud-storage:nodes/);
    assert.ok(text.includes("### `stacks/Pulumi.prod.yaml` (changes from main)\n\nResult: **ok**"), "the other stack is still planned");
});

test("a change to a stack's config file only: the stack is planned against its base inventory (--diff-ref), the dropped node's release shows", () => {
    const pool = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ci-pool-"));
    const run = (...args: string[]) => execFileSync("git", ["-c", "user.name=ci", "-c", "user.email=ci@example.invalid", ...args], { cwd: pool, encoding: "utf8" });
    const put = (file: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(pool, file)), { recursive: true });
        fs.writeFileSync(path.join(pool, file), text);
    };
    const inventory = (hosts: string) => `config:\n  zcloud-storage:lvm:\n    - name: fast\n      hosts: { ${hosts} }\n`;
    try {
        run("init", "-q", "-b", "main");
        put("stacks/Pulumi.pool.yaml", stack("/dev/disk/by-id/wwn-0x2").replace(/  zcloud-storage:lvm:[\s\S]*$/, "  zcloud-storage:configFiles: [pool/inventory.yaml]\n"));
        put("stacks/pool/inventory.yaml", inventory("n1: [/dev/disk/by-id/wwn-0x1], n2: [/dev/disk/by-id/wwn-0x2]"));
        run("add", "-A");
        run("commit", "-q", "-m", "base");
        run("checkout", "-q", "-b", "drop-n2");
        put("stacks/pool/inventory.yaml", inventory("n1: [/dev/disk/by-id/wwn-0x1]"));
        run("commit", "-q", "-am", "n2 leaves the pool");
        const { GITHUB_STEP_SUMMARY: _, ...rest } = process.env;
        const r = spawnSync("bash", [script, "main"], { cwd: pool, encoding: "utf8", env: { ...rest, ZCLOUD_DIR: root, SUMMARY: "summary.md" } });
        assert.equal(r.status, 0, r.stderr);
        const text = fs.readFileSync(path.join(pool, "summary.md"), "utf8");
        assert.ok(text.includes("### `stacks/Pulumi.pool.yaml` (changes from main)\n\nResult: **ok**"), text);
        assert.match(text, /^-  delete +fast-n2-disks /m);
        assert.ok(!text.includes("No stack changed."), text);
    } finally {
        fs.rmSync(pool, { recursive: true, force: true });
    }
});

test("a base that is not a commit is a usage error", () => {
    const r = spawnSync("bash", [script, "no-such-branch"], { cwd: repo, encoding: "utf8", env: { ...process.env, ZCLOUD_DIR: root, SUMMARY: "x.md" } });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /base no-such-branch is not a commit here/);
});

test("the GitHub Actions workflow is valid against the workflow schema; a broken copy is not", () => {
    const text = fs.readFileSync(githubWorkflow, "utf8");
    assert.deepEqual(validateWorkflow(text).errors, []);
    const broken = text.replace("runs-on: ubuntu-latest\n    timeout-minutes: 20", "runs_on: ubuntu-latest\n    timeout-minutes: 20");
    assert.notEqual(broken, text);
    assert.ok(validateWorkflow(broken).errors.length > 0, "a job without runs-on must fail");
});

test("the GitLab CI jobs are valid against GitLab's CI schema; a broken copy is not", async () => {
    // GitLab's published schema as the package ships it (an ES module without types).
    const schemaModule = "gitlab-ci-local/src/schema/schema.js";
    const { schema } = (await import(schemaModule)) as { schema: object };
    const ajv = new Ajv({ allErrors: true, strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addKeyword("markdownDescription");
    const validate = ajv.compile(schema);
    const doc = yaml.load(fs.readFileSync(gitlabJobs, "utf8"));
    assert.ok(validate(doc), JSON.stringify(validate.errors, null, 2));
    const broken = yaml.load(fs.readFileSync(gitlabJobs, "utf8").replace("  stage: check\n  rules:", "  stage: check\n  rulez:"));
    assert.equal(validate(broken), false, "an unknown job key must fail");
});

test("a change of the program itself (a zcloud-storage bump): every stack planned, the base by the base's own program", () => {
    // A repository holding the program and its stacks: the base commit, then a change to a node
    // script the disk commands carry. Planned by the head's program on both sides, nothing would
    // change; the base's own program (a checkout of the base) shows the update.
    const own = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ci-own-"));
    const run = (...args: string[]) => execFileSync("git", args, { cwd: own, encoding: "utf8" });
    try {
        const tree = execFileSync("git", ["ls-files", "index.ts", "components", "tools", "policy", "package.json", "package-lock.json", "tsconfig.json", "Pulumi.yaml"], { cwd: root, encoding: "utf8" }).trim().split("\n");
        for (const file of tree) {
            fs.mkdirSync(path.dirname(path.join(own, file)), { recursive: true });
            fs.copyFileSync(path.join(root, file), path.join(own, file));
        }
        fs.mkdirSync(path.join(own, "stacks"));
        fs.writeFileSync(path.join(own, "stacks/Pulumi.prod.yaml"), stack("/dev/disk/by-id/wwn-0x2"));
        fs.writeFileSync(path.join(own, "stacks/Pulumi.lab.yaml"), stack("/dev/disk/by-id/wwn-0x3"));
        fs.writeFileSync(path.join(own, ".gitignore"), "node_modules\n");
        fs.symlinkSync(path.join(root, "node_modules"), path.join(own, "node_modules"));
        run("init", "-q", "-b", "main");
        run("config", "user.email", "ci@example.invalid");
        run("config", "user.name", "ci test");
        run("add", "-A");
        run("commit", "-q", "-m", "base");
        run("checkout", "-q", "-b", "bump");
        fs.appendFileSync(path.join(own, "components/node/lvm-reconcile.sh"), "# a changed line\n");
        run("commit", "-q", "-am", "bump the program");
        const summary = path.join(own, "..", `${path.basename(own)}-summary.md`);
        const { GITHUB_STEP_SUMMARY: _, ZCLOUD_DIR: __, ...rest } = process.env;
        const r = spawnSync("bash", [script, "main"], {
            cwd: own,
            encoding: "utf8",
            env: { ...rest, SUMMARY: summary, BASE_INSTALL: `ln -s ${path.join(root, "node_modules")} node_modules` },
        });
        const text = fs.existsSync(summary) ? fs.readFileSync(summary, "utf8") : "";
        fs.rmSync(summary, { force: true });
        assert.equal(r.status, 0, r.stderr + text);
        assert.ok(text.includes("The zcloud-storage program changed: every stack is planned, the base by the base's own program."), text);
        for (const name of ["lab", "prod"]) {
            assert.ok(text.includes(`### \`stacks/Pulumi.${name}.yaml\` (changes from main, planned by its own program)\n\nResult: **ok**`), text);
            assert.match(text, new RegExp(`Changes from \\S+/Pulumi\\.${name}\\.yaml\\.json \\(saved plan\\) to `));
            // the disk commands and their copies run another script set: said once per stack, not per node
            assert.match(text, new RegExp(`^  fast-n2-disks: lvm-reconcile runs script set [0-9a-f]{12} \\(was [0-9a-f]{12}\\)$`, "m"));
        }
        assert.doesNotMatch(text, /~ +update +fast-n\d-disks/);
        // per stack the one diff of the changed file, naming it: nothing else carries lvm-reconcile.sh
        assert.deepEqual(text.match(/^lvm-reconcile: script set .*$/gm)?.map((l) => l.replace(/[0-9a-f]{12}/g, "<id>")), [
            "lvm-reconcile: script set <id> (was <id>): lvm-reconcile.sh changed; lib.sh, partition-guard.sh unchanged",
            "lvm-reconcile: script set <id> (was <id>): lvm-reconcile.sh changed; lib.sh, partition-guard.sh unchanged",
        ]);
        assert.deepEqual(text.match(/^\+# a changed line$/gm), ["+# a changed line", "+# a changed line"]);
        assert.deepEqual(text.match(/^\d+ to \w+.*$/gm), ["4 to update", "4 to update"], text);
        assert.equal(run("worktree", "list").trim().split("\n").length, 1, "the base checkout is removed");
    } finally {
        fs.rmSync(own, { recursive: true, force: true });
    }
});
