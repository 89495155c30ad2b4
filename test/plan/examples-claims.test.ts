// The stacks/ examples say in their header what their plan reports (`# Plan: N warnings, N
// advisories, N mandatory`); each is planned as a user would and compared with that claim.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import { plan } from "../helpers/planCli";

const stacks = path.resolve(__dirname, "..", "..", "stacks");
const examples = fs.readdirSync(stacks).filter((f) => /^Pulumi\..+\.yaml$/.test(f)).sort();

/** The claim of an example's header comment: `# Plan: 4 warnings (...), 2 advisories (...), 0 mandatory`. */
function claimOf(text: string): { warnings: number; advisories: number; mandatory: number } {
    const header = text.split("\nconfig:")[0].split("\n").map((l) => l.replace(/^# ?/, "")).join(" ");
    const m = /Plan: (\d+) warnings?\b.*?, (\d+) advisor(?:y|ies)\b.*?, (\d+) mandatory/.exec(header);
    assert.ok(m, "the header says what the plan reports: # Plan: N warnings, N advisories, N mandatory");
    return { warnings: Number(m[1]), advisories: Number(m[2]), mandatory: Number(m[3]) };
}

describe("stacks/ examples plan as their comments claim", () => {
    test("there are examples", () => assert.ok(examples.length >= 4, examples.join(", ")));
    for (const file of examples) {
        test(file, async () => {
            const claim = claimOf(fs.readFileSync(path.join(stacks, file), "utf8"));
            const r = await plan(path.join("stacks", file));
            const lines = r.stdout.split("\n");
            const actual = {
                warnings: lines.filter((l) => l.startsWith("warning: ")).length,
                // Loopback advisories and advisory policy entries (one per cause).
                advisories: lines.filter((l) => l.startsWith("advisory: ") || l.startsWith("        - [advisory]")).length,
                mandatory: lines.filter((l) => l.startsWith("        - [mandatory]")).length,
            };
            assert.deepEqual(actual, claim, r.stdout.split("\n").filter((l) => /^(warning|advisory): |^ {8}- \[/.test(l)).join("\n"));
            assert.equal(r.code, claim.mandatory ? 1 : 0, r.stderr);
        });
    }
});
