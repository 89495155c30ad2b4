/**
 * A saved plan (`--diff-plan FILE`) is data, not a list of paths to read: the bundle files its
 * script copies name are read only when they are regular files of at most 1 MiB directly in this
 * machine's bundle directory; any other is skipped and named, and nothing blocks or reads on and on
 * (a FIFO would block, `/dev/zero` never ends).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-saved-paths-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
/** The plan runs with TMPDIR=tmp: its bundle directory is tmp/zcloud-storage-scripts. */
const bundleDir = path.join(tmp, "zcloud-storage-scripts");

function plan(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
        execFile(process.execPath, ["--import", "tsx", "tools/plan.ts", ...args], { maxBuffer: 64 << 20, timeout: 120_000, env: { ...process.env, TMPDIR: tmp } }, (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
        );
    });
}

test("--diff-plan: /dev/zero, a FIFO and a link named as bundle files are skipped and named; the diff finishes", async () => {
    const base = await plan("dev", "--json");
    assert.equal(base.code, 0, base.stderr);
    const json = JSON.parse(base.stdout);
    const copies = json.resources.filter((r: { type: string }) => r.type === "command:remote:CopyToRemote");
    assert.ok(copies.length >= 2, "the dev stack has two script copies");
    const fifo = path.join(bundleDir, `${"f".repeat(64)}.sh`);
    const link = path.join(bundleDir, `${"e".repeat(64)}.sh`);
    execFileSync("mkfifo", [fifo]);
    fs.symlinkSync("/dev/zero", link);
    const paths = ["/dev/zero", fifo, link];
    copies.forEach((c: { inputs: { source: { path: string; sha256: string } } }, i: number) => {
        c.inputs.source.path = paths[i % paths.length];
        c.inputs.source.sha256 = path.basename(paths[i % paths.length]).replace(/\.sh$/, "").padEnd(64, "0");
    });
    if (copies.length < 3) {
        // a third copy, only to carry the link
        json.resources.push({ ...copies[0], urn: `${copies[0].urn}-x`, name: `${copies[0].name}-x`, inputs: { ...copies[0].inputs, source: { asset: "file", path: link, sha256: "e".repeat(64) } } });
    }
    const saved = path.join(tmp, "dev.json");
    fs.writeFileSync(saved, JSON.stringify(json));
    const started = Date.now();
    const r = await plan("dev", "--diff-plan", saved);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - started < 60_000, "the diff finished");
    const notRead = r.stdout.split("\n").filter((l) => l.startsWith("  not read: "));
    assert.deepEqual([...new Set(notRead)].sort(), [
        `  not read: ${fifo}: not a regular file`,
        `  not read: ${link}: a symbolic link`,
        `  not read: /dev/zero: not in this machine's bundle directory ${bundleDir}`,
    ].sort());
});
