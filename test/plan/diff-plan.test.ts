/**
 * `npm run plan -- <stack> --diff-plan old.json`: the diff against a plan saved with `--json`,
 * by this version (the same changes as `--diff`) or by the program of an earlier commit (what
 * upgrading zcloud-storage does to the stack), and the refusals of a file that is not a plan.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { plan } from "../helpers/planCli";
import { inlineScriptsCommit, oldProgram } from "../helpers/oldProgram";
import { cephLibraryBundle, cephLibraryName, cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";
import { cephDiskScriptFiles } from "../../components/cephfs/osds";
import { scriptBundle } from "../../components/node/bundle";

/** The last commit whose program shipped the Ceph scripts inline. */

const stackYaml = (hosts: Record<string, string[]>) =>
    yaml.dump({
        config: {
            "kubernetes:context": "prod-admin",
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:x" }, hostKeys: { n1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJn1", n2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJn2" } },
            "zcloud-storage:nodes": { n1: { address: "10.0.0.11" }, n2: { address: "10.0.0.12" } },
            "zcloud-storage:cephfs": [{ name: "shared", hosts }],
        },
    });

let dir: string;
let old: ReturnType<typeof oldProgram>;
before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-diff-plan-"));
    fs.writeFileSync(path.join(dir, "Pulumi.prod.yaml"), stackYaml({ n1: ["/dev/sdb"], n2: ["/dev/sdb"] }));
    fs.writeFileSync(path.join(dir, "Pulumi.grown.yaml"), stackYaml({ n1: ["/dev/sdb", "/dev/sdc"], n2: ["/dev/sdb"] }));
    old = oldProgram(inlineScriptsCommit);
});
after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    old.cleanup();
});

/** The `--json` plan of a stack file, saved by the plan tool in `cwd` (this checkout or an old one). */
function saveJson(stackFile: string, out: string, cwd: string): Promise<void> {
    return new Promise((resolve, reject) => {
        execFile(process.execPath, ["--import", "tsx", "tools/plan.ts", stackFile, "--json"], { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
            if (err) reject(new Error(`plan --json in ${cwd}: ${err.message}\n${stderr}`));
            else resolve(fs.writeFileSync(out, stdout));
        });
    });
}

/** The change lines of a diff's output (without its header and policy lines). */
const changeLines = (stdout: string) => stdout.split("\n").filter((l) => /^(\+|~|-|\+-) /.test(l) || /^\s+note: /.test(l) || /^\d+ to /.test(l));

describe("--diff-plan", () => {
    test("against a plan this version saved: the same changes as --diff against that config", async () => {
        const saved = path.join(dir, "prod.json");
        await saveJson(path.join(dir, "Pulumi.prod.yaml"), saved, process.cwd());
        const [fromSaved, fromConfig] = await Promise.all([plan(path.join(dir, "Pulumi.grown.yaml"), "--diff-plan", saved), plan(path.join(dir, "Pulumi.grown.yaml"), "--diff", path.join(dir, "Pulumi.prod.yaml"))]);
        assert.equal(fromSaved.code, 0, fromSaved.stderr);
        assert.equal(fromConfig.code, 0, fromConfig.stderr);
        assert.match(fromSaved.stdout, new RegExp(`^Changes from ${saved.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(saved plan\\) to `, "m"));
        assert.deepEqual(changeLines(fromSaved.stdout), changeLines(fromConfig.stdout));
        assert.ok(changeLines(fromSaved.stdout).some((l) => /^\+ +create +shared-n1-osd-sdc-drain /.test(l)), fromSaved.stdout);
        assert.ok(!/\(Stack\)/.test(fromSaved.stdout), "the saved plan's stack lines up with the planned one");
    });

    test("against a plan saved by the program with inline scripts: script sets created, daemons and drains updated, the Job replaced, nothing deleted; the disk commands' move to a bundle told once", async () => {
        // (the old disk commands ran `cephfs-disks apply --fsid ...`: the new --node shows as a change)
        const saved = path.join(dir, "prod-old.json");
        await saveJson(path.join(dir, "Pulumi.prod.yaml"), saved, old.dir);
        const r = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", saved);
        assert.equal(r.code, 0, r.stderr);
        const lines = changeLines(r.stdout).filter((l) => !/^\s+note: /.test(l));
        const kinds = (symbol: string) => lines.filter((l) => l.startsWith(`${symbol} `)).map((l) => l.slice(26).split(" ")[0]).sort();
        // the in-cluster script sets' ConfigMaps; the disk commands' first copies are told in the
        // script-set part (the commands themselves are listed: their arguments gained --node)
        // and the roll's gates (roll-start, 1 mon, 2 mgrs, noout set/unset, 2 hosts, 2 mdss: test/plan/ceph-roll.test.ts)
        const gates = ["roll-start", "mon-a", "mgr-a", "mgr-b", "noout-set", "noout-unset", "n1-ok-to-stop", "n1-osd-up", "n2-ok-to-stop", "n2-osd-up", "mds-a-handover", "mds-a-active", "mds-b-handover", "mds-b-active"];
        // (and the gates' and drains' local sets, read by their stubs; the OSD prepare Jobs: test/plan/ceph-osd-prepare.test.ts)
        const localSets = (["cephfs-gate.sh", "cephfs-osd-remove.sh"] as const).map((s) => cephScriptSetName("shared", s));
        // (and the storage's shared library, which every Ceph set runs after)
        assert.deepEqual(kinds("+"), [cephLibraryName("shared"), ...["fs", "gate", "keyring", "mon-init", "osd", "osd-drain"].map((s) => cephScriptSetName("shared", `ceph-${s}.sh` as never)), ...localSets, ...gates.map((g) => `shared-gate-${g}`), ...["n1", "n2"].map((n) => `shared-${n}-osd-sdb-prepare`), "shared-n1-label", "shared-n2-label"].sort());
        assert.deepEqual(kinds("+-"), ["shared-filesystem"]);
        // (ceph-shared-admin: the admin pods' image, Squid -> Tentacle since; ceph-csi-cephfs-provisioner:
        // its plugin's --setmetadata, test/plan/cephcsi-setmetadata-upgrade.test.ts)
        assert.deepEqual(kinds("~"), ["ceph-csi-cephfs-provisioner", "ceph-shared-admin", "ceph-shared-mds-a", "ceph-shared-mds-b", "ceph-shared-mgr-a", "ceph-shared-mgr-b", "ceph-shared-mon-a", "ceph-shared-osd-n1-sdb", "ceph-shared-osd-n2-sdb", "shared-n1-disks", "shared-n1-osd-sdb-drain", "shared-n2-disks", "shared-n2-osd-sdb-drain"]);
        // The node labels' move: each node's NodePatch deleted, its label command created.
        assert.deepEqual(kinds("-"), ["shared-n1-label", "shared-n2-label"]);
        assert.equal(lines[lines.length - 1], "2 to delete, 1 to replace, 13 to update, 29 to create");
        assert.ok(r.stdout.includes("\n2 to delete, 1 to replace, 13 to update, 29 to create\n(2 of them: node commands and their script copies that run another script set, listed below)\n"), r.stdout);
        const disks = scriptBundle(cephDiskScriptFiles).id;
        assert.ok(r.stdout.includes(`\ncephfs-disks: script set ${disks} (was inline in the old plan); the old plan does not carry the old text\n`), r.stdout);
        // the script change once per set (the old plan carried the text inline, not as a set),
        // then one line per workload that runs a set
        const osdId = cephScriptBundle("ceph-osd.sh").id;
        assert.ok(r.stdout.includes("\nScript sets changed (each once):\n\n"), r.stdout);
        assert.ok(r.stdout.includes(`\nceph-mon-init.sh: script set ${cephScriptBundle("ceph-mon-init.sh").id} (was inline in the old plan); the old plan does not carry the old text\n`), r.stdout);
        assert.equal(r.stdout.split("\n").filter((l) => l.startsWith("ceph-osd.sh: script set ")).length, 1, "once per set");
        const runs = r.stdout.split("\n").filter((l) => / runs script set /.test(l));
        assert.deepEqual(runs.filter((l) => l.includes("ceph-osd.sh")), [
            `  ceph-shared-osd-n1-sdb: ceph-osd.sh runs script set ${osdId} (was inline in the old plan)`,
            `  ceph-shared-osd-n2-sdb: ceph-osd.sh runs script set ${osdId} (was inline in the old plan)`,
        ]);
        assert.deepEqual(runs.filter((l) => l.includes("cephfs-disks")), [
            `  shared-n1-disks: cephfs-disks runs script set ${disks} (was inline in the old plan)`,
            `  shared-n2-disks: cephfs-disks runs script set ${disks} (was inline in the old plan)`,
        ]);
        const drainSet = cephScriptBundle("cephfs-osd-remove.sh").id;
        assert.deepEqual(runs.filter((l) => l.includes("cephfs-osd-remove.sh")), [
            `  shared-n1-osd-sdb-drain: cephfs-osd-remove.sh runs script set ${drainSet} (was inline in the old plan)`,
            `  shared-n2-osd-sdb-drain: cephfs-osd-remove.sh runs script set ${drainSet} (was inline in the old plan)`,
        ]);
        // the library: mon a, mgr a/b, mds a/b, two OSDs and the Job, each once
        assert.deepEqual(
            runs.filter((l) => l.includes("ceph-library.sh")).sort(),
            ["ceph-shared-mds-a", "ceph-shared-mds-b", "ceph-shared-mgr-a", "ceph-shared-mgr-b", "ceph-shared-mon-a", "ceph-shared-osd-n1-sdb", "ceph-shared-osd-n2-sdb", "shared-filesystem"].map(
                (n) => `  ${n}: ceph-library.sh runs script set ${cephLibraryBundle().id} (was inline in the old plan)`,
            ),
        );
        // mon a, mgr a/b, mds a/b, two OSDs, the Job's two sets, two disk commands, two drains; the library in 8 of them
        assert.equal(runs.length, 13 + 8);
    });

    test("--out writes each script set's text once, under scripts/<id>/<script>: the in-cluster sets, the gates' and drains' local sets and the node bundle", async () => {
        const out = path.join(dir, "out");
        const r = await plan(path.join(dir, "Pulumi.prod.yaml"), "--out", out);
        assert.equal(r.code, 0, r.stderr);
        const sets = fs.readdirSync(path.join(out, "scripts")).sort();
        const scripts = ["ceph-fs.sh", "ceph-gate.sh", "ceph-keyring.sh", "ceph-mon-init.sh", "ceph-osd-drain.sh", "ceph-osd.sh", "cephfs-gate.sh", "cephfs-osd-remove.sh"] as const;
        const disks = scriptBundle(cephDiskScriptFiles);
        assert.deepEqual(sets, [cephLibraryBundle().id, ...scripts.map((s) => cephScriptBundle(s).id), disks.id].sort());
        assert.equal(fs.readFileSync(path.join(out, "scripts", cephLibraryBundle().id, "ceph-library.sh"), "utf8"), cephLibraryBundle().text);
        assert.equal(fs.readFileSync(path.join(out, "scripts", disks.id, "cephfs-disks.sh"), "utf8"), disks.text);
        for (const s of scripts) {
            assert.equal(fs.readFileSync(path.join(out, "scripts", cephScriptBundle(s).id, s), "utf8"), cephScriptBundle(s).text);
        }
    });

    test("a file that is not a saved plan is refused before planning, naming the flag and the culprit", async () => {
        const notJson = path.join(dir, "broken.json");
        fs.writeFileSync(notJson, "{ resources: ");
        const a = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", notJson);
        assert.equal(a.code, 2);
        assert.match(a.stderr, new RegExp(`^--diff-plan ${notJson.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not valid JSON \\(`));
        const shape = path.join(dir, "shape.json");
        fs.writeFileSync(shape, JSON.stringify({ resources: [{ urn: "urn:pulumi:prod::zcloud-storage::x", type: "t", name: "x", parent: "", dependencies: [], inputs: {} }, { urn: 7, type: "t", name: "y", parent: "", dependencies: "none", inputs: {} }] }));
        const b = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", shape);
        assert.equal(b.code, 2);
        assert.equal(b.stderr, `--diff-plan ${shape}: not a plan's resources:\n  - resources[1].urn: expected a string\n  - resources[1].dependencies: expected a list of URNs\n`);
        const list = path.join(dir, "list.json");
        fs.writeFileSync(list, "[]");
        const c = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", list);
        assert.equal(c.code, 2);
        assert.match(c.stderr, /: not a plan: expected an object with a "resources" list/);
        const missing = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", path.join(dir, "nope.json"));
        assert.equal(missing.stderr, `--diff-plan ${path.join(dir, "nope.json")}: no such file\n`);
        const both = await plan(path.join(dir, "Pulumi.prod.yaml"), "--diff-plan", shape, "--diff", path.join(dir, "Pulumi.grown.yaml"));
        assert.equal(both.code, 2);
        assert.match(both.stderr, /^--diff and --diff-plan: give one base to compare with/);
    });
});
