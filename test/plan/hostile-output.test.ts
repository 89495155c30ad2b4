/**
 * Output a contributor controls reaches no terminal or summary raw: config keys and values in the
 * plan's messages, and names from a `--diff-plan` file, are printed with control characters and
 * line breaks as escapes (`\x1b`, `\x0a`). An OSC 52 sequence would set the reviewer's clipboard;
 * a line break would close a PR summary's code fence and hide what follows behind `<!--`.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import * as yaml from "js-yaml";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-hostile-output-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** OSC 52 (set the clipboard), then a line break that closes a code fence and opens a comment. */
const hostile = "x\u001b]52;c;cm0gLXJmIH4=\u0007\n```\n<!--";
const shown = "x\\x1b]52;c;cm0gLXJmIH4=\\x07\\x0a```\\x0a<!--";
const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

/** No control character but the line breaks the tool writes itself, and no forged line. */
function assertNoForgedLines(text: string): void {
    assert.doesNotMatch(text, raw, "a raw control character was printed");
    for (const line of text.split("\n")) {
        assert.notEqual(line.trim(), "```", "a forged code-fence line");
        assert.ok(!line.startsWith("<!--"), "a forged comment line");
    }
}

test("a config key with an escape sequence and line breaks: the error names it escaped, on its own line", async () => {
    const file = path.join(dir, "Pulumi.keys.yaml");
    fs.writeFileSync(file, yaml.dump({ config: { "zcloud-storage:nodes": { [hostile]: { address: "10.0.0.1" } } } }));
    const r = await plan(file);
    assert.equal(r.code, 1, r.stderr);
    assertNoForgedLines(r.stdout + r.stderr);
    assert.ok(r.stderr.includes(`nodes.${shown}: `), r.stderr);
});

test("--diff-plan: a saved plan's resource name with an escape sequence and line breaks is shown escaped on its change line", async () => {
    const saved = path.join(dir, "dev.json");
    const base = await plan("dev", "--json");
    assert.equal(base.code, 0, base.stderr);
    const json = JSON.parse(base.stdout);
    const victim = json.resources.find((r: { type: string }) => r.type === "kubernetes:storage.k8s.io/v1:StorageClass");
    victim.name = `${victim.name}${hostile}`;
    victim.urn = `${victim.urn}${hostile}`;
    fs.writeFileSync(saved, JSON.stringify(json));
    const r = await plan("dev", "--diff-plan", saved);
    assert.equal(r.code, 0, r.stderr);
    assertNoForgedLines(r.stdout + r.stderr);
    assert.ok(r.stdout.split("\n").some((l) => l.startsWith("-  delete") && l.includes(shown)), r.stdout);
});
