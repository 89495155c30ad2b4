/**
 * csi-sanity's path programs (test/drivers/sanity-paths), run for real in a temporary folder: each
 * spec gets a directory of its own beside the named path, so a directory a failed spec left (its
 * volume still mounted there) cannot fail the specs after it, as one fixed path did.
 */
import { test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { csiSanityCommand, sanityPathPrograms } from "../drivers/guestFiles";

const mkpath = path.join(sanityPathPrograms, "mkpath");
const rmpath = path.join(sanityPathPrograms, "rmpath");

/** `check` in a new temporary folder, removed after it. */
function inWork(check: (dir: string) => void): void {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sanity-paths-"));
    try {
        check(dir);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("mkpath: a new empty directory beside the named path for each call, printed; the named path itself never made", () => inWork((dir) => {
    const named = path.join(dir, "mount");
    const made = [1, 2, 3].map(() => execFileSync(mkpath, [named], { encoding: "utf8" }).trim());
    assert.equal(new Set(made).size, 3);
    for (const m of made) {
        assert.equal(path.dirname(m), dir);
        assert.match(path.basename(m), /^mount\.[A-Za-z0-9]{6}$/);
        assert.deepEqual(fs.readdirSync(m), []);
    }
    assert.equal(fs.existsSync(named), false);
}));

test("mkpath: a directory a failed spec left behind does not stop the next spec's", () => inWork((dir) => {
    const named = path.join(dir, "mount");
    const left = execFileSync(mkpath, [named], { encoding: "utf8" }).trim();
    fs.writeFileSync(path.join(left, "data"), "still mounted"); // as a volume left mounted there
    assert.notEqual(execFileSync(mkpath, [named], { encoding: "utf8" }).trim(), left);
}));

test("rmpath: removes an empty path, passes on one the plugin already removed, refuses (exit 1, the path kept) one still holding a volume", () => inWork((dir) => {
    const empty = path.join(dir, "empty");
    fs.mkdirSync(empty);
    assert.equal(spawnSync(rmpath, [empty]).status, 0);
    assert.equal(fs.existsSync(empty), false);

    assert.equal(spawnSync(rmpath, [path.join(dir, "gone")]).status, 0);

    const held = path.join(dir, "held");
    fs.mkdirSync(held);
    fs.writeFileSync(path.join(held, "data"), "x");
    const r = spawnSync(rmpath, [held], { encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /rmdir: .*held.*Directory not empty/);
    assert.equal(fs.readFileSync(path.join(held, "data"), "utf8"), "x");
}));

test("csiSanityCommand: with pathPrograms, csi-sanity makes and removes each spec's target and staging path through them, with a minute for each", () => {
    const base = { program: "/g/csi-sanity", nodeSocket: "/n.sock", controllerSocket: "/c.sock", work: "/w", params: "/p.yaml" };
    const flags = csiSanityCommand({ ...base, pathPrograms: "/g/sanity-paths" }).split(" ");
    for (const f of ["--csi.createmountpathcmd=/g/sanity-paths/mkpath", "--csi.createstagingpathcmd=/g/sanity-paths/mkpath", "--csi.removemountpathcmd=/g/sanity-paths/rmpath", "--csi.removestagingpathcmd=/g/sanity-paths/rmpath", "--csi.createpathcmdtimeout=60s", "--csi.removepathcmdtimeout=60s", "--csi.mountdir=/w/mount", "--csi.stagingdir=/w/staging"]) {
        assert.ok(flags.includes(f), f);
    }
    assert.equal(csiSanityCommand(base).includes("pathcmd"), false);
});
