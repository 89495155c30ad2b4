import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephScriptBundle, scriptSetsValue } from "../../components/cephfs/scripts";
import { PlannedResource } from "../../tools/plan/model";
import { renderScriptSetChanges, scriptSetFiles, unifiedDiff } from "../../tools/plan/scriptSets";

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
const setMap = (id: string, text: string) => planned(`u::cm-${id}`, "kubernetes:core/v1:ConfigMap", { metadata: { name: `cm-${id}`, labels: { "app.kubernetes.io/component": "ceph-scripts" } }, immutable: true, data: { "ceph-osd.sh": text } });
const workload = (name: string, annotation?: string) =>
    planned(`u::${name}`, "kubernetes:apps/v1:Deployment", { spec: { template: { metadata: { labels: {}, ...(annotation ? { annotations: { "storage.zcloud.io/script-sets": annotation } } : {}) }, spec: {} } } });

describe("renderScriptSetChanges", () => {
    const changed = `${osd}\n# one more line`;
    const sha = (text: string) => require("node:crypto").createHash("sha256").update(text).digest("hex") as string;
    const before = [setMap("old", osd), workload("osd-a", scriptSetsValue(["ceph-osd.sh"])), workload("osd-b", scriptSetsValue(["ceph-osd.sh"]))];
    const after = [setMap("new", changed), workload("osd-a", `ceph-osd.sh=${sha(changed)}`), workload("osd-b", `ceph-osd.sh=${sha(changed)}`)];
    const oldId = cephScriptBundle("ceph-osd.sh").id;
    const newId = sha(changed).slice(0, 12);

    test("a changed set: its diff once, then one line per workload", () => {
        assert.equal(
            renderScriptSetChanges(before, after),
            [
                "Script sets changed (each once):",
                "",
                unifiedDiff(osd, changed, `ceph-osd.sh ${oldId}`, `ceph-osd.sh ${newId}`),
                "",
                "Runs another script set:",
                `  osd-a: ceph-osd.sh runs script set ${newId} (was ${oldId})`,
                `  osd-b: ceph-osd.sh runs script set ${newId} (was ${oldId})`,
            ].join("\n"),
        );
    });

    test("the old plan without the old text (a saved plan of another shape): the old id only; inline scripts: said so", () => {
        const text = renderScriptSetChanges(before.slice(1), after);
        assert.ok(text.includes(`ceph-osd.sh: script set ${newId} (was ${oldId}); the old plan does not carry the old text`), text);
        const inline = renderScriptSetChanges([workload("osd-a")], after.slice(0, 2));
        assert.ok(inline.endsWith(`  osd-a: ceph-osd.sh runs script set ${newId} (was inline in the old plan)`), inline);
    });

    test("nothing changed, or only new workloads: nothing to say", () => {
        assert.equal(renderScriptSetChanges(after, after), "");
        assert.equal(renderScriptSetChanges([], after), "");
    });

    test("--out files: each set's text under scripts/<id>/<script>", () => {
        assert.deepEqual(scriptSetFiles(after), [{ path: `scripts/${newId}/ceph-osd.sh`, text: changed }]);
    });
});
