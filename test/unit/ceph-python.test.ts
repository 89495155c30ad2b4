/**
 * The Ceph scripts read Ceph's JSON with `python3 -c '...'` snippets, run by the Python of the
 * Ceph image: 3.9 in quay.io's (CentOS Stream 9), 3.13 or later in Debian's builds. Every snippet
 * must parse as Python 3.9 (`ast.parse(..., feature_version=(3, 9))`: newer syntax such as
 * `match` or `except*` is refused; a best effort, it does not check library calls).
 */
import { test } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(__dirname, "..", "..");
const scriptDirs = [path.join(root, "components", "node", "ceph"), path.join(root, "components", "node")];

/** Every `python3 -c '<snippet>'` of a shell script (a single-quoted word holds no quote). */
export function pythonSnippets(text: string): string[] {
    return [...text.matchAll(/python3 -c '([^']*)'/g)].map((m) => m[1]);
}

test("pythonSnippets finds each single-quoted snippet, and only those", () => {
    assert.deepEqual(pythonSnippets("a | python3 -c '\nimport json\nprint(1)\n' x\npython3 -c 'pass'\npython3 x.py"), ["\nimport json\nprint(1)\n", "pass"]);
});

test("every python3 snippet of the Ceph scripts parses as Python 3.9", () => {
    const snippets: Array<{ where: string; code: string }> = [];
    for (const dir of scriptDirs) {
        for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".sh"))) {
            for (const code of pythonSnippets(fs.readFileSync(path.join(dir, file), "utf8"))) {
                snippets.push({ where: `${path.basename(dir)}/${file}`, code });
            }
        }
    }
    assert.ok(snippets.length >= 14, `only ${snippets.length} snippets found`);
    const check = "import ast, sys\nast.parse(sys.stdin.read(), feature_version=(3, 9))";
    for (const s of snippets) {
        const r = spawnSync("python3", ["-c", check], { input: s.code, encoding: "utf8" });
        assert.equal(r.status, 0, `${s.where}: a snippet does not parse as Python 3.9:\n${r.stderr}\n${s.code}`);
    }
    // the check refuses what 3.9 cannot parse
    const r = spawnSync("python3", ["-c", check], { input: "match 1:\n    case 1:\n        pass\n", encoding: "utf8" });
    assert.notEqual(r.status, 0, "a match statement parsed as Python 3.9");
});
