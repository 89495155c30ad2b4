// The tools behave like tools: --help prints the usage on stdout and exits 0, the usage line
// names every option the tool takes, --version prints the version and what it pins, exit 0, and
// the exit codes of docs/tools.md hold for a usage error.
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

test("discover's and status's usage lines name every option they take", () => {
    const common = [...fs.readFileSync(path.join(root, "tools/discover/args.ts"), "utf8").matchAll(/"(--[a-z-]+)": \{/g)].map((m) => m[1]);
    assert.ok(common.length >= 5, common.join(" "));
    for (const tool of ["discover", "status"]) {
        const own = [...fs.readFileSync(path.join(root, `tools/${tool}.ts`), "utf8").matchAll(/"(--[a-z-]+)": \{/g)].map((m) => m[1]);
        assert.ok(own.length >= 1, `${tool}: ${own.join(" ")}`);
        const usageLine = run(tool, ["--help"]).stdout.split("\n")[0];
        assert.deepEqual([...common, ...own, "--version", "--help"].filter((f) => !usageLine.includes(f)), [], usageLine);
    }
    assert.match(run("plan", ["--help"]).stdout.split("\n")[0], / \| --version \| --help$/);
});

for (const tool of ["plan", "discover", "status"]) {
    test(`${tool} --version: the version and what it pins on stdout, exit 0, nothing on stderr`, () => {
        const r = run(tool, ["--version"]);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stderr, "");
        const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version;
        assert.equal(r.stdout.split("\n")[0], `zcloud-storage ${version}`);
        assert.ok(r.stdout.includes("quay.io/ceph/ceph:"), r.stdout);
    });

    test(`${tool}: an unknown option is a usage error, exit ${tool === "plan" ? 2 : 3} (docs/tools.md)`, () => {
        const r = run(tool, ["dev", "--no-such-option"]);
        assert.equal(r.status, tool === "plan" ? 2 : 3, r.stderr);
        assert.equal(r.stdout, "");
        assert.match(r.stderr, /^unknown option --no-such-option\n\nusage: /);
    });
}
