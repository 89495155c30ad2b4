// The plan CLI checks its arguments and files before it loads the Pulumi SDK: a refusal answers
// in well under a second instead of after the SDK's load (about 1.5 s of CPU), for users and for
// the many CLI tests alike. The modules tools/plan.ts loads up front must not pull the SDK in.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";

const root = path.resolve(__dirname, "..", "..");

test("tools/plan.ts's up-front modules load no @pulumi package (the plan loads it when it runs)", () => {
    const probe = [
        "require('./tools/plan/render'); require('./tools/plan/roll'); require('./tools/plan/diff'); require('./tools/plan/scriptSets');",
        "require('./tools/plan/stackFile'); require('./tools/plan/cliInputs'); require('./tools/plan/savedPlan'); require('./tools/plan/gitRevision');",
        "require('./policy/policies');",
        "const sdk = Object.keys(require.cache).filter((k) => /node_modules\\/@pulumi\\//.test(k));",
        "process.stdout.write(JSON.stringify(sdk.slice(0, 3)));",
    ].join("\n");
    const loaded = JSON.parse(execFileSync(process.execPath, ["--import", "tsx", "-e", probe], { cwd: root, encoding: "utf8" }));
    assert.deepEqual(loaded, []);
});
