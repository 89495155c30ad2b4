/** What docs/cephfs.md says an image of the pinned Ceph release must hold (test/plan/ceph-image.test.ts keeps it true). */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

/** The programs named in the sentence "It must hold these programs ...: `a`, `b`." of docs/cephfs.md, as written. */
export function documentedCephImagePrograms(): string[] {
    const docs = fs.readFileSync(path.join(__dirname, "..", "..", "docs", "cephfs.md"), "utf8");
    const paragraph = docs.split(/\n\s*\n/).find((p) => p.includes("It must hold these programs"));
    assert.ok(paragraph, "docs/cephfs.md: no paragraph names the programs the Ceph image must hold");
    // from the colon after the phrase to the end of that sentence
    const from = paragraph.slice(paragraph.indexOf(":", paragraph.indexOf("It must hold these programs")));
    const list = from.slice(0, from.search(/\.(\s|$)/));
    return [...list.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]);
}
