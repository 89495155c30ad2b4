/**
 * A stack whose config Pulumi cannot pass to the program (over 128 KiB in PULUMI_CONFIG; the real
 * CLI failed with "argument list too long" at 500 nodes x 4 devices) is refused by the offline plan
 * before anything is planned, naming the size and the way out; near the limit, an advisory.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { generatedLvmValues } from "../../tools/benchStack";
import * as path from "node:path";
import { scratchStacks, stackYaml } from "../helpers/stackFiles";
import { plan } from "../helpers/planCli";

/** The stack file as the plan names it: relative to where it runs. */
const planPath = (file: string) => path.relative(process.cwd(), file);

const stacks = scratchStacks("zcloud-config-size-");
/** The benchmark's generated stack (N LVM nodes x 4 devices) with its SSH key as a secret. */
function stackOf(nodes: number): string {
    const values = generatedLvmValues(nodes, 4);
    const ssh = { ...(values.ssh as Record<string, unknown>), privateKey: { secure: "v1:test" } };
    return stackYaml(Object.fromEntries(Object.entries({ ...values, ssh }).map(([k, v]) => [`zcloud-storage:${k}`, v])));
}

test("500 nodes x 4 devices: refused before planning (exit 2) with the size, the limit and what to do", async () => {
    const file = stacks.writeStack("big", stackOf(500));
    const r = await plan(file);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, "");
    assert.equal(
        r.stderr.trim(),
        `${planPath(file)}: the config is 158.2 KiB as Pulumi passes it to the program (one environment variable, PULUMI_CONFIG), over Linux's 128.0 KiB limit for one: ` +
            'pulumi preview and up would fail before the program starts ("argument list too long"); move the node inventory (zcloud-storage:nodes, ssh.hostKeys, the storages) into files listed in zcloud-storage:configFiles, or split the stack (docs/splitting-stacks.md) (--over-config-limit plans it anyway)',
    );
});

test("350 nodes: planned, with one advisory naming the size and the share of the limit", async () => {
    const file = stacks.writeStack("near", stackOf(350));
    const r = await plan(file);
    assert.equal(r.code, 0, r.stderr);
    const advisories = r.stdout.split("\n").filter((l) => l.startsWith("advisory: "));
    assert.deepEqual(advisories, [
        `advisory: ${planPath(file)}: the config is 110.8 KiB as Pulumi passes it to the program, 87% of the 128.0 KiB Pulumi can pass (one environment variable); before it grows past that, move the node inventory (zcloud-storage:nodes, ssh.hostKeys, the storages) into files listed in zcloud-storage:configFiles, or split the stack (docs/splitting-stacks.md)`,
    ]);
});
