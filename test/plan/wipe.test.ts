/**
 * The wipe licence in the plan: which disk command arguments each `wipe` form gives each node, the
 * `--diff` line per device that joins a storage (wiped or not), and what the new arguments do to
 * a stack planned by the previous program (an in-place update of the disk command, no replace).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { diffPlans } from "../../tools/plan/diff";
import { nodeCommandArgs } from "../../tools/plan/describe";
import { COMMAND, baseConfig, planValues, resourceNamed } from "../helpers/plan";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wipe-plan-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const lvm = (hosts: Record<string, string[]>, wipe: unknown) => ({ ...baseConfig, lvm: [{ name: "local-fast", hosts, wipe }] });

function stackFile(name: string, values: Record<string, unknown>): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [`zcloud-storage:${k}`, v]));
    fs.writeFileSync(file, yaml.dump({ config }));
    return file;
}

/** The note lines of a `--diff` output, without their indent. */
const notes = (stdout: string) => stdout.split("\n").filter((l) => /^ +(note|DESTRUCTIVE): /.test(l)).map((l) => l.trim());

describe("wipe: the disk command's licence per node", () => {
    test("true gives --wipe-on-create, a map gives each node only its own --wipe-device, false nothing; cephfs the same", async () => {
        const run = await planValues({
            ...baseConfig,
            lvm: [{ name: "local-fast", hosts: { node1: ["/dev/sdb", "/dev/sdc"], node2: ["/dev/sdb"] }, wipe: { node1: ["/dev/sdc"] } }],
            cephfs: [{ name: "shared-fs", hosts: { node3: ["/dev/sdd"] }, wipe: true }],
        });
        assert.equal(run.error, undefined, run.error?.message);
        const args = (name: string) => nodeCommandArgs(resourceNamed(run, name, COMMAND).inputs.create);
        assert.equal(args("local-fast-node1-disks"), "lvm-reconcile apply --vg zcloud-local-fast --node node1 --wipe-device /dev/sdc /dev/sdb /dev/sdc");
        assert.equal(args("local-fast-node2-disks"), "lvm-reconcile apply --vg zcloud-local-fast --node node2 /dev/sdb");
        assert.match(args("shared-fs-node3-disks"), /^cephfs-disks apply --node node3 --wipe-on-create --fsid [0-9a-f-]+ \/dev\/sdd$/);
    });
});

describe("npm run plan -- <stack> --diff: one line per device that joins, wiped or not", () => {
    test("under wipe: true a new node's devices will be wiped, a device added to an existing node will not", async () => {
        const current = stackFile("true-current", lvm({ node1: ["/dev/sdb"] }, true));
        const next = stackFile("true-next", lvm({ node1: ["/dev/sdb", "/dev/sdc"], node3: ["/dev/sdc"] }, true));
        const r = await plan(next, "--diff", current);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(notes(r.stdout), [
            "note: node1 /dev/sdc: joins local-fast, not wiped: wipe: true covers only the devices node1 joined local-fast with; refused if it carries signatures (list it under wipe.node1 to allow wiping)",
            "DESTRUCTIVE: node3 /dev/sdc: joins local-fast, will be wiped if it carries signatures (wipe: true, node3 is new in local-fast)",
        ]);
        assert.match(r.stdout, /^~  update +local-fast-node1-disks  local-fast prepare node1 \[\/dev\/sdb, \/dev\/sdc\]$/m);
    });

    test("a wipe map licenses exactly the devices it lists; wipe: false wipes nothing", async () => {
        const current = stackFile("map-current", lvm({ node1: ["/dev/sdb"] }, false));
        const next = stackFile("map-next", lvm({ node1: ["/dev/sdb", "/dev/sdc"], node3: ["/dev/sdc"] }, { node1: ["/dev/sdc"] }));
        const r = await plan(next, "--diff", current);
        assert.equal(r.code, 0, r.stderr);
        // The licensed device is listed once in the resource line: a --wipe-device value is no extra device.
        assert.match(r.stdout, /^~  update +local-fast-node1-disks  local-fast prepare node1 \[\/dev\/sdb, \/dev\/sdc\]$/m);
        assert.deepEqual(notes(r.stdout), [
            "DESTRUCTIVE: node1 /dev/sdc: joins local-fast, will be wiped if it carries signatures (listed under wipe.node1)",
            "note: node3 /dev/sdc: joins local-fast, not wiped: refused if it carries signatures",
        ]);
    });
});

describe("npm run plan -- <stack> --diff: a new wipe licence for devices already in the config", () => {
    test("a device newly listed under wipe.<node>, and wipe: true added, each name the devices they license, marked destructive; the harmless line stays a note", async () => {
        const current = stackFile("licence-current", lvm({ node1: ["/dev/sdb", "/dev/sdc"], node2: ["/dev/sdb"] }, false));
        const mapped = stackFile("licence-map", lvm({ node1: ["/dev/sdb", "/dev/sdc"], node2: ["/dev/sdb", "/dev/sdd"] }, { node1: ["/dev/sdc"] }));
        const r = await plan(mapped, "--diff", current);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(notes(r.stdout).sort(), [
            "DESTRUCTIVE: node1 /dev/sdc: may now be wiped if it carries signatures (newly listed under wipe.node1)",
            "note: node2 /dev/sdd: joins local-fast, not wiped: refused if it carries signatures",
        ]);
        assert.ok(!/local-fast-node1-disks .*create changed/.test(r.stdout), "the licence is told in disk terms, not as a raw create change");
        const all = stackFile("licence-true", lvm({ node1: ["/dev/sdb", "/dev/sdc"], node2: ["/dev/sdb"] }, true));
        const t = await plan(all, "--diff", current);
        assert.equal(t.code, 0, t.stderr);
        assert.deepEqual(notes(t.stdout).sort(), [
            "DESTRUCTIVE: node1 /dev/sdb: may now be wiped if it carries signatures (wipe: true added: if local-fast is not yet made on node1, e.g. its last apply was refused)",
            "DESTRUCTIVE: node1 /dev/sdc: may now be wiped if it carries signatures (wipe: true added: if local-fast is not yet made on node1, e.g. its last apply was refused)",
            "DESTRUCTIVE: node2 /dev/sdb: may now be wiped if it carries signatures (wipe: true added: if local-fast is not yet made on node2, e.g. its last apply was refused)",
        ]);
    });
});

describe("an existing stack with wipe: true, planned by the previous program", () => {
    test("its disk command changes in place (new arguments, same resource): an update, never a replace", async () => {
        const run = await planValues(lvm({ node1: ["/dev/sdb"] }, true));
        assert.equal(run.error, undefined, run.error?.message);
        const now = resourceNamed(run, "local-fast-node1-disks", COMMAND);
        const newArgs = "lvm-reconcile apply --vg zcloud-local-fast --node node1 --wipe-on-create /dev/sdb";
        assert.equal(nodeCommandArgs(now.inputs.create), newArgs);
        // What the previous program planned for the same config: `apply --vg <vg> --wipe <dev>`.
        const oldArgs = "lvm-reconcile apply --vg zcloud-local-fast --wipe /dev/sdb";
        // (The command has no `update` input: an update runs `create` again.)
        assert.equal(now.inputs.update, undefined);
        const tail = (args: string) => args.slice(args.indexOf(" apply "));
        const before = { ...now, inputs: { ...now.inputs, create: String(now.inputs.create).replace(tail(newArgs), tail(oldArgs)) } };
        assert.equal(nodeCommandArgs(before.inputs.create), oldArgs);
        const changes = diffPlans([before], [now]);
        assert.deepEqual(
            changes.map((c) => ({ kind: c.kind, fields: c.fields, replaceBecause: c.replaceBecause })),
            [{ kind: "update", fields: ["create"], replaceBecause: [] }],
        );
    });
});
