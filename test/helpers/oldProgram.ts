/**
 * The program of an earlier commit of this repository, unpacked into a temp dir (git archive, the
 * tree only) with this checkout's node_modules: plan tests compare what an existing stack made by
 * that version becomes under the current one. Needs the commit in the clone's history.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before } from "node:test";
import { PlanRun, planValues } from "./plan";

const root = path.resolve(__dirname, "..", "..");

/** The last commit whose program carried the scripts inline (in every remote command and workload). */
export const inlineScriptsCommit = "b2e623684638ef02933adcad7f9bb7cc601db69f";

/** The last commit whose program labelled nodes by NodePatch (manager `zcloud-<storage>`), before the label commands. */
export const nodePatchLabelsCommit = "58181c8d2f5acf628b1ffbe8333b68e067cae07d";

/**
 * `commit`'s program (index.ts, components) and its plan tool (tools, policy), unpacked;
 * `cleanup` removes the copy.
 */
export function oldProgram(commit: string): { dir: string; program: string; cleanup: () => void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-old-program-"));
    const archive = execFileSync("git", ["archive", "--format=tar", commit, "index.ts", "components", "tools", "policy", "Pulumi.yaml", "package.json", "tsconfig.json"], { cwd: root, maxBuffer: 1 << 28 });
    execFileSync("tar", ["-x", "-C", dir], { input: archive });
    fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
    return { dir, program: path.join(dir, "index.ts"), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Registers the test file's `before`/`after`: `config` planned by `commit`'s program and by this
 * one (both must plan without error); the getters give the two plans once `before` ran.
 */
export function plansBeforeAndNow(commit: string, config: Record<string, unknown>): { before: () => PlanRun; now: () => PlanRun } {
    let old: ReturnType<typeof oldProgram> | undefined;
    let was: PlanRun | undefined;
    let now: PlanRun | undefined;
    before(async () => {
        old = oldProgram(commit);
        [was, now] = await Promise.all([planValues(config, old.program), planValues(config)]);
        assert.equal(was.error, undefined, was.error?.message);
        assert.equal(now.error, undefined, now.error?.message);
    });
    after(() => old?.cleanup());
    return { before: () => was!, now: () => now! };
}
