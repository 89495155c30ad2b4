/**
 * The plan tool's memory work (shared input copies in its records) must not change what any
 * plan shows: `--json` of a 50-node stack and of the example stacks, byte for byte, from the
 * plan tool of the commit before that work and from this checkout, both planning this checkout's
 * program (so later program changes do not count as the tool's).
 */
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import * as yaml from "js-yaml";
import { configFileReader, expandConfigFiles } from "../../components/config/configFiles";
import { generatedLvmValues } from "../../tools/benchStack";
import { oldProgram } from "../helpers/oldProgram";

/** The last commit before the plan records shared their input copies. */
const beforeSharedInputs = "b7ed79728792467ee4f9d66dd4064ad67d46bffc";
const root = path.resolve(__dirname, "..", "..");

/** `--json` of this checkout's program planned by the plan tool `planTs` (the old one or this one). */
function planJson(planTs: string, stackFile: string): Promise<string> {
    return new Promise((resolve, reject) => {
        execFile(process.execPath, ["--import", "tsx", planTs, stackFile, "--json", "--program", path.join(root, "index.ts")], { cwd: root, maxBuffer: 256 << 20 }, (err, stdout, stderr) => {
            if (err) {
                reject(new Error(`${planTs} ${stackFile}: ${stderr}`));
            } else {
                resolve(stdout);
            }
        });
    });
}

let old: ReturnType<typeof oldProgram> | undefined;
let dir = "";
before(() => {
    old = oldProgram(beforeSharedInputs);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-memory-"));
});
after(() => {
    old?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
});

/** The stack file with its configFiles merged in (secure: leaves kept as written), in the test's directory. */
function inlined(stack: string): string {
    const config = (yaml.load(fs.readFileSync(stack, "utf8")) as { config: Record<string, unknown> }).config;
    const expanded = expandConfigFiles(config, configFileReader(path.dirname(stack)));
    assert.deepEqual(expanded.issues, []);
    if (expanded.files.length === 0) {
        return stack;
    }
    const file = path.join(dir, path.basename(stack));
    fs.writeFileSync(file, yaml.dump({ config: expanded.values }));
    return file;
}

/**
 * `json` without the advisories on placeholder secrets, which the tool prints since (issue #36):
 * the example stacks hold placeholders, and everything else must stay the same byte for byte.
 */
function withoutPlaceholderAdvisories(json: string): string {
    const tail = /,\n  "advisories": (\[[\s\S]*\])\n\}\n$/.exec(json);
    if (!tail) {
        return json;
    }
    const kept = (JSON.parse(tail[1]) as string[]).filter((a) => !a.includes(" is a placeholder, not an encrypted secret "));
    return `${json.slice(0, tail.index)}${kept.length ? `,\n  "advisories": ${JSON.stringify(kept, null, 2).replace(/\n/g, "\n  ")}` : ""}\n}\n`;
}

test("--json of 50 LVM nodes and of the example stacks is byte-identical to the plan tool before the memory work", async () => {
    const values = generatedLvmValues(50);
    const ssh = { ...(values.ssh as Record<string, unknown>), privateKey: { secure: "v1:bench" } };
    const generated = path.join(dir, "Pulumi.fifty.yaml");
    fs.writeFileSync(generated, yaml.dump({ config: Object.fromEntries(Object.entries({ ...values, ssh }).map(([k, v]) => [`zcloud-storage:${k}`, v])) }));
    const stacks = [generated, ...fs.readdirSync(path.join(root, "stacks")).filter((f) => /^Pulumi\..+\.yaml$/.test(f)).map((f) => path.join(root, "stacks", f))];
    for (const stack of stacks) {
        // The old tool predates configFiles: it plans the stack with its files merged in, written out.
        const [was, now] = await Promise.all([planJson(path.join(old!.dir, "tools", "plan.ts"), inlined(stack)), planJson(path.join(root, "tools", "plan.ts"), stack)]);
        assert.ok(now.length > 10_000, `${stack}: a plan of ${now.length} bytes`);
        assert.equal(withoutPlaceholderAdvisories(now), was, `${path.basename(stack)}: --json changed`);
    }
});
