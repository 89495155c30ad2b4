// The host programs the tiers run (test/host-tools.txt): test/setup installs each one's package,
// and test/run refuses a tier whose programs are missing, naming each with its package.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

const testDir = path.join(__dirname, "..");
const tiers = ["unit", "policy", "plan", "node", "vm", "ceph", "drivers", "drivers-prebuilt", "engine", "nodes"];

/** The list's entries: [tier, program, package]. */
function entries(text: string): string[][] {
    return text
        .split("\n")
        .map((l) => l.replace(/#.*/, "").trim())
        .filter(Boolean)
        .map((l) => l.split(/\s+/));
}

/** The packages of test/setup's `packages=( ... )` array (comments dropped). */
function setupPackages(): Set<string> {
    const setup = fs.readFileSync(path.join(testDir, "setup"), "utf8");
    const array = /^packages=\(\n([\s\S]*?)\n\)/m.exec(setup);
    assert.ok(array, "test/setup has no packages=( ... ) array");
    return new Set(array[1].split("\n").flatMap((l) => l.replace(/#.*/, "").trim().split(/\s+/)).filter(Boolean));
}

/** test/host-tools.sh run from a copy beside `list` (its own list), with the tiers given. */
function check(list: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-host-tools-"));
    try {
        fs.copyFileSync(path.join(testDir, "host-tools.sh"), path.join(dir, "host-tools.sh"));
        fs.writeFileSync(path.join(dir, "host-tools.txt"), list);
        const r = spawnSync("/bin/sh", [path.join(dir, "host-tools.sh"), ...args], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

describe("test/host-tools.txt", () => {
    const listed = entries(fs.readFileSync(path.join(testDir, "host-tools.txt"), "utf8"));

    test("each line is a known tier, a program and a package", () => {
        assert.ok(listed.length > 0);
        for (const e of listed) {
            assert.equal(e.length, 3, `not "tier program package": ${e.join(" ")}`);
            assert.ok(tiers.includes(e[0]), `unknown tier ${e[0]}`);
        }
    });

    test("test/setup installs every package it names", () => {
        const installed = setupPackages();
        const missing = [...new Set(listed.map((e) => e[2]))].filter((p) => !installed.has(p));
        assert.deepEqual(missing, []);
    });
});

describe("test/host-tools.sh", () => {
    test("every program of the tiers asked for is there: silent, exit 0", () => {
        assert.deepEqual(check("unit sh dash\nnode no-such-program-zc pkg-b\n", ["unit"]), { status: 0, stdout: "", stderr: "" });
    });

    test("missing programs: one line each with tier and package, exit 1; other tiers' programs are not asked for", () => {
        const r = check("# tier program package\nunit no-such-program-zc pkg-a   # why\nunit sh dash\nplan no-such-other-zc pkg-c\nnode no-such-node-zc pkg-b\n", ["unit", "plan"]);
        assert.equal(r.status, 1);
        assert.equal(r.stdout, "");
        assert.equal(
            r.stderr,
            "test: tier unit needs no-such-program-zc (Debian package pkg-a), which is not installed: run 'bash test/setup' (as root) first\n" +
                "test: tier plan needs no-such-other-zc (Debian package pkg-c), which is not installed: run 'bash test/setup' (as root) first\n",
        );
    });

    test("a daemon in sbin is found though PATH lacks sbin", () => {
        const inSbin = ["/usr/sbin", "/sbin"].map((d) => fs.readdirSync(d).find((f) => !fs.existsSync(path.join("/usr/bin", f)) && !fs.existsSync(path.join("/bin", f)))).find(Boolean);
        assert.ok(inSbin, "no program only in sbin on this host");
        assert.equal(check(`node ${inSbin} some-package\n`, ["node"]).status, 0);
    });
});
