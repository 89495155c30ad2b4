import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephLibraryBundle, cephScriptBundle, scriptSetsValue } from "../../components/cephfs/scripts";
import { scriptBundle } from "../../components/node/bundle";
import { readNodeScript } from "../../components/node/script";
import { defaultBundleDir, privateDir, renderNodeCommand } from "../../components/node/shipped";
import { diffPlans } from "../../tools/plan/diff";
import { renderChanges } from "../../tools/plan/render";
import { PlannedResource } from "../../tools/plan/model";
import { leadingFilesThen, renderScriptSetChanges, scriptSetFiles, unifiedDiff } from "../../tools/plan/scriptSets";

/** GNU diff -u of two texts, without its file-name header lines. */
function gnuDiff(a: string, b: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-udiff-"));
    fs.writeFileSync(path.join(dir, "a"), a + "\n");
    fs.writeFileSync(path.join(dir, "b"), b + "\n");
    const r = spawnSync("diff", ["-u", "a", "b"], { cwd: dir, encoding: "utf8" });
    fs.rmSync(dir, { recursive: true, force: true });
    return r.stdout.split("\n").slice(2, -1).join("\n");
}

const osd = cephScriptBundle("ceph-osd.sh").text;

describe("unifiedDiff", () => {
    test("hunks as GNU diff -u prints them: one changed line, lines added and removed, changes close together merged", () => {
        const lines = osd.split("\n");
        const edits = [
            lines.map((l, i) => (i === 40 ? `${l} # changed` : l)),
            [...lines.slice(0, 10), "added one", "added two", ...lines.slice(10, 200), ...lines.slice(203)],
            lines.map((l, i) => (i === 100 || i === 104 ? `${l}!` : l)),
            ["first", ...lines.slice(1), "last"],
        ];
        for (const edited of edits) {
            const b = edited.join("\n");
            const ours = unifiedDiff(osd, b, "a", "b").split("\n");
            assert.deepEqual(ours.slice(0, 2), ["--- a", "+++ b"]);
            assert.equal(ours.slice(2).join("\n"), gnuDiff(osd, b));
        }
        assert.equal(unifiedDiff(osd, osd, "a", "b"), "");
    });
});

/** A planned resource of the shape the plan records (only what the helpers read). */
const planned = (urn: string, type: string, inputs: Record<string, unknown>): PlannedResource => ({ urn, type, name: urn.split("::").pop()!, parent: "", dependencies: [], inputs, custom: true, deleteBeforeReplace: false, retainOnDelete: false });
const setMap = (id: string, text: string, key = "ceph-osd.sh") =>
    planned(`u::cm-${id}`, "kubernetes:core/v1:ConfigMap", { metadata: { name: `cm-${id}`, labels: { "app.kubernetes.io/component": "ceph-scripts" } }, immutable: true, data: { [key]: text } });
const workload = (name: string, annotation?: string) =>
    planned(`u::${name}`, "kubernetes:apps/v1:Deployment", { spec: { template: { metadata: { labels: {}, ...(annotation ? { annotations: { "storage.zcloud.io/script-sets": annotation } } : {}) }, spec: {} } } });

describe("renderScriptSetChanges", () => {
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    // The old library (an earlier version's): line 40 of ceph-lib.sh was another one.
    const libLines = readNodeScript("ceph/ceph-lib.sh").split("\n");
    const lib = readNodeScript("lib.sh");
    const oldLib = libLines.map((l, i) => (i === 39 ? "# the old line 40" : l)).join("\n");
    const old = [lib, oldLib].join("\n");
    const library = cephLibraryBundle().text;
    const pods = (value: string) => [workload("osd-a", value), workload("osd-b", value)];
    const before = [setMap("old", old, "ceph-library.sh"), setMap("osd", osd), ...pods(`ceph-library.sh=${sha(old)},ceph-osd.sh=${sha(osd)}`)];
    const after = [setMap("new", library, "ceph-library.sh"), setMap("osd", osd), ...pods(scriptSetsValue(["ceph-osd.sh"]))];
    const oldId = sha(old).slice(0, 12);
    const newId = cephLibraryBundle().id;
    const osdId = cephScriptBundle("ceph-osd.sh").id;

    test("a changed library: which of its files changed and their diffs once (lines within the file), then one line per workload; the unchanged set nothing", () => {
        assert.equal(
            renderScriptSetChanges(before, after),
            [
                "Script sets changed (each once):",
                "",
                `ceph-library.sh: script set ${newId} (was ${oldId}): ceph/ceph-lib.sh changed; lib.sh unchanged`,
                `--- ceph/ceph-lib.sh ${oldId}`,
                `+++ ceph/ceph-lib.sh ${newId}`,
                "@@ -37,7 +37,7 @@",
                ...libLines.slice(36, 39).map((l) => ` ${l}`),
                "-# the old line 40",
                `+${libLines[39]}`,
                ...libLines.slice(40, 43).map((l) => ` ${l}`),
                "",
                "Runs another script set:",
                `  osd-a: ceph-library.sh runs script set ${newId} (was ${oldId})`,
                `  osd-b: ceph-library.sh runs script set ${newId} (was ${oldId})`,
            ].join("\n"),
        );
    });

    test("the library split out of the sets (an upgrade from sets that carried it): files that left the set, the library new, one line each", () => {
        const whole = [library, osd].join("\n");
        const was = [setMap("whole", whole), ...pods(`ceph-osd.sh=${sha(whole)}`)];
        const wholeId = sha(whole).slice(0, 12);
        assert.equal(
            renderScriptSetChanges(was, after),
            [
                "Script sets changed (each once):",
                "",
                `ceph-library.sh: script set ${newId}, new: lib.sh, ceph/ceph-lib.sh`,
                "",
                `ceph-osd.sh: script set ${osdId} (was ${wholeId}): lib.sh, ceph/ceph-lib.sh left the set; ceph/ceph-osd.sh unchanged`,
                "",
                "Runs another script set:",
                `  osd-a: ceph-library.sh runs script set ${newId} (was none before)`,
                `  osd-a: ceph-osd.sh runs script set ${osdId} (was ${wholeId})`,
                `  osd-b: ceph-library.sh runs script set ${newId} (was none before)`,
                `  osd-b: ceph-osd.sh runs script set ${osdId} (was ${wholeId})`,
            ].join("\n"),
        );
    });

    test("the old plan without the old text (a saved plan of another shape): the old id only; inline scripts: said so", () => {
        const text = renderScriptSetChanges(before.slice(1), after);
        assert.ok(text.includes(`ceph-library.sh: script set ${newId} (was ${oldId}); the old plan does not carry the old text`), text);
        const inline = renderScriptSetChanges([workload("osd-a")], after.slice(0, 3));
        assert.ok(inline.endsWith(`  osd-a: ceph-osd.sh runs script set ${osdId} (was inline in the old plan)`), inline);
    });

    test("a set not made of this program's script files: one diff of its whole text", () => {
        const changed = `${osd}\n# one more line`;
        const text = renderScriptSetChanges([setMap("a", osd), workload("osd-a", scriptSetsValue(["ceph-osd.sh"]))], [setMap("b", changed), workload("osd-a", `ceph-osd.sh=${sha(changed)}`)]);
        const whole = unifiedDiff(osd, changed, `ceph-osd.sh ${osdId}`, `ceph-osd.sh ${sha(changed).slice(0, 12)}`);
        assert.equal(text.split("\n").slice(2, -3).join("\n"), [`ceph-osd.sh: script set ${sha(changed).slice(0, 12)} (was ${osdId}):`, whole].join("\n"));
    });

    test("nothing changed, or only new workloads: nothing to say", () => {
        assert.equal(renderScriptSetChanges(after, after), "");
        assert.equal(renderScriptSetChanges([], after), "");
    });

    test("--out files: each set's text under scripts/<id>/<script>", () => {
        assert.deepEqual(scriptSetFiles(before), [
            { path: `scripts/${oldId}/ceph-library.sh`, text: old },
            { path: `scripts/${osdId}/ceph-osd.sh`, text: osd },
        ]);
    });
});

describe("node script bundles: one diff per stack, one line per node", () => {
    const files = ["lib.sh", "lvm-reconcile.sh"];
    // the plan reads bundle files only from this machine's bundle directory (content-addressed, so
    // writing the test's bundles there changes nothing else)
    const dir = privateDir(defaultBundleDir());
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    /** A bundle's file as the plan's asset names it: its path and sha256. */
    const asset = (text: string) => {
        const file = path.join(dir, `${sha(text)}.sh`);
        fs.writeFileSync(file, text);
        return { asset: "file", path: file, sha256: sha(text) };
    };
    const reconcile = readNodeScript("lvm-reconcile.sh").split("\n");
    const now = scriptBundle(files).text;
    // The older version's lvm-reconcile.sh lacked line 12.
    const old = [readNodeScript("lib.sh"), [...reconcile.slice(0, 11), ...reconcile.slice(12)].join("\n")].join("\n");
    const parent = "urn:pulumi:s::p::zcloud:storage:LvmStorage::fast";
    const node = (n: string, text: string, devices: string[]) => {
        const command = renderNodeCommand({ files, name: "lvm-reconcile", args: ["apply", "--vg", "zcloud-fast", "--node", n, ...devices], sudo: false });
        const release = renderNodeCommand({ files, name: "lvm-reconcile", args: ["release", "--vg", "zcloud-fast"], sudo: false });
        const swap = (s: string) => s.split(scriptBundle(files).sha256).join(sha(text));
        return [
            { ...planned(`${parent}$command:remote:CopyToRemote::fast-${n}-disks-scripts`, "command:remote:CopyToRemote", { source: asset(text), remotePath: `.zcloud-storage/scripts/${sha(text)}.sh` }), parent },
            { ...planned(`${parent}$command:remote:Command::fast-${n}-disks`, "command:remote:Command", { create: swap(command), delete: swap(release) }), parent },
        ];
    };
    const oldId = sha(old).slice(0, 12);
    const newId = sha(now).slice(0, 12);

    test("a changed lvm-reconcile.sh: no per-node update lines, its diff once, one line per node", () => {
        const before = [...node("n1", old, ["/dev/sdb"]), ...node("n2", old, ["/dev/sdb"])];
        const after = [...node("n1", now, ["/dev/sdb"]), ...node("n2", now, ["/dev/sdb"])];
        assert.equal(renderChanges(diffPlans(before, after)), ["4 to update", "(4 of them: node commands and their script copies that run another script set, listed below)"].join("\n"));
        assert.equal(
            renderScriptSetChanges(before, after),
            [
                "Script sets changed (each once):",
                "",
                `lvm-reconcile: script set ${newId} (was ${oldId}): lvm-reconcile.sh changed; lib.sh unchanged`,
                `--- lvm-reconcile.sh ${oldId}`,
                `+++ lvm-reconcile.sh ${newId}`,
                "@@ -9,6 +9,7 @@",
                ...reconcile.slice(8, 11).map((l) => ` ${l}`),
                `+${reconcile[11]}`,
                ...reconcile.slice(12, 15).map((l) => ` ${l}`),
                "",
                "Runs another script set:",
                `  fast-n1-disks: lvm-reconcile runs script set ${newId} (was ${oldId})`,
                `  fast-n2-disks: lvm-reconcile runs script set ${newId} (was ${oldId})`,
            ].join("\n"),
        );
        assert.deepEqual(scriptSetFiles(after), [{ path: `scripts/${newId}/lvm-reconcile.sh`, text: now }]);
    });

    test("a script change and a device that joins: the node's line tells the device, the script set its own part", () => {
        const before = node("n1", old, ["/dev/sdb"]);
        const after = node("n1", now, ["/dev/sdb", "/dev/sdc"]);
        const pad = " ".repeat(26);
        assert.equal(
            renderChanges(diffPlans(before, after)),
            [`~  update                 fast-n1-disks  fast prepare n1 [/dev/sdb, /dev/sdc]`, `${pad}note: n1 /dev/sdc: joins fast, not wiped: refused if it carries signatures`, "", "2 to update", "(1 of them: node commands and their script copies that run another script set, listed below)"].join("\n"),
        );
        assert.ok(renderScriptSetChanges(before, after).endsWith(`  fast-n1-disks: lvm-reconcile runs script set ${newId} (was ${oldId})`));
    });

    test("the old bundle's file gone (a saved plan made elsewhere): the old id only", () => {
        const before = node("n1", old, ["/dev/sdb"]);
        fs.rmSync(String((before[0].inputs as { source: { path: string } }).source.path));
        assert.ok(renderScriptSetChanges(before, node("n1", now, ["/dev/sdb"])).includes(`lvm-reconcile: script set ${newId} (was ${oldId}); the old plan does not carry the old text`));
    });
});

describe("leadingFilesThen", () => {
    const known = [
        { file: "lib.sh", text: "l1\nl2" },
        { file: "ceph/ceph-lib.sh", text: "c1" },
        { file: "ceph/ceph-osd.sh", text: "o-new" },
    ];
    test("an old set of known libraries then a script that changed since: the libraries, then the rest as that script", () => {
        assert.deepEqual(leadingFilesThen("l1\nl2\nc1\no-old\nmore", "ceph/ceph-osd.sh", known), [
            { file: "lib.sh", lines: 2 },
            { file: "ceph/ceph-lib.sh", lines: 1 },
            { file: "ceph/ceph-osd.sh", lines: 2 },
        ]);
    });
    test("no known leading file, or nothing after them: undefined (the whole text is diffed)", () => {
        assert.equal(leadingFilesThen("x\nl1\nl2\nc1\no", "ceph/ceph-osd.sh", known), undefined);
        assert.equal(leadingFilesThen("l1\nl2", "ceph/ceph-osd.sh", known), undefined);
    });
});
