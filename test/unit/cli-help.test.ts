// The tools behave like tools: --help prints the usage on stdout and exits 0, and the usage line
// names every option the tool takes.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const root = path.resolve(__dirname, "..", "..");
const run = (tool: string, args: string[]) => spawnSync(process.execPath, ["--import", "tsx", `tools/${tool}.ts`, ...args], { cwd: root, encoding: "utf8" });

for (const tool of ["plan", "discover", "status"]) {
    test(`${tool} --help: the usage on stdout, exit 0, nothing on stderr; -h the same`, () => {
        const r = run(tool, ["--help"]);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stderr, "");
        assert.match(r.stdout, new RegExp(`^usage: npm run ${tool} -- <stack\\|file> `));
        assert.equal(run(tool, ["-h"]).stdout, r.stdout);
    });
}

test("plan's usage line names every option it takes", () => {
    const usageLine = run("plan", ["--help"]).stdout.split("\n")[0];
    const source = fs.readFileSync(path.join(root, "tools/plan.ts"), "utf8");
    const parsed = [...source.matchAll(/a === "(--[a-z-]+)"/g)].map((m) => m[1]).filter((f) => f !== "--help");
    assert.ok(parsed.length >= 9, parsed.join(" "));
    assert.deepEqual(parsed.filter((f) => !usageLine.includes(f)), []);
});
