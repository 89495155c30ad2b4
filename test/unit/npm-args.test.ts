// `npm run plan <stack> --diff old.yaml` without `--`: npm takes the flags, so the tools refuse
// instead of printing a plain plan (or text for --json) with exit 0.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { describe, test } from "node:test";
import { flagsNpmTook, npmTookMessage } from "../../tools/npmArgs";

const root = path.resolve(__dirname, "..", "..");

describe("flagsNpmTook", () => {
    test("under npm: each of the tool's flags npm exported as npm_config_<name> (dashes as underscores)", () => {
        const env = { npm_lifecycle_event: "plan", npm_config_diff: "old.yaml", npm_config_diff_plan: "true", npm_config_json: "true", npm_config_cache: "/root/.npm" };
        assert.deepEqual(flagsNpmTook(["--json", "--diff", "--diff-ref", "--diff-plan", "--out"], env), ["--json", "--diff", "--diff-plan"]);
    });
    test("not under npm (node tools/plan.ts ...): nothing, whatever the environment holds", () => {
        assert.deepEqual(flagsNpmTook(["--json"], { npm_config_json: "true" }), []);
    });
    test("the message names the flags and the command", () => {
        assert.equal(npmTookMessage("plan", ["--diff", "--json"]), "npm took --diff, --json for itself (an option before `--` is npm's): nothing was run; put -- before the tool's arguments: npm run plan -- <stack> --diff --json ...");
    });
});

describe("through npm itself", () => {
    const npm = (args: string[]) => spawnSync("npm", ["run", "--silent", ...args], { cwd: root, encoding: "utf8", env: { ...process.env, npm_config_update_notifier: "false" } });

    test("npm run plan dev --diff old.yaml --json: refused, exit 2, no plan printed", () => {
        const r = npm(["plan", "dev", "--diff", "old.yaml", "--json"]);
        assert.equal(r.status, 2, r.stderr);
        // (npm, given --json, prints its own error object for the failed script)
        assert.doesNotMatch(r.stdout, /Plan of stack|"resources"/);
        assert.equal(r.stderr, "npm took --json, --diff for itself (an option before `--` is npm's): nothing was run; put -- before the tool's arguments: npm run plan -- <stack> --json --diff ...\n");
    });

    test("npm run status prod --json: refused by the day-2 tools the same way (their usage error, exit 3)", () => {
        const r = npm(["status", "prod", "--json"]);
        assert.equal(r.status, 3, r.stderr);
        assert.match(r.stderr, /^npm took --json for itself \(an option before `--` is npm's\): nothing was run; put -- before the tool's arguments: npm run status -- <stack> --json \.\.\.\n/);
    });
});
