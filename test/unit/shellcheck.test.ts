import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { test } from "node:test";

/** Every shell script in the repo passes shellcheck (POSIX sh for node scripts). */
test("shellcheck passes on every tracked shell script", () => {
    const version = spawnSync("shellcheck", ["--version"], { encoding: "utf8" });
    assert.equal(version.status, 0, "shellcheck is not installed (bash test/setup installs it)");
    const files = execFileSync("git", ["ls-files", "*.sh", "test/run", "test/setup", ".ci/run", "test/drivers/sanity-paths/*"], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean);
    assert.ok(files.some((f) => f.startsWith("components/node/")), "no node scripts found");
    const result = spawnSync("shellcheck", ["-x", ...files], { encoding: "utf8" });
    assert.equal(result.status, 0, result.stdout + result.stderr);
});
