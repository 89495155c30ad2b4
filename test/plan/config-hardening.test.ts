// Hostile and mistaken stack files through `npm run plan` and the real program under the mock
// runtime: refused before anything is planned, with the message docs/validation.md shows.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import { derivedNames } from "../../components/config/collisions";
import { parseStackConfig } from "../../components/config/parse";
import { StackParsed } from "../../components/config/schema";
import { baseConfig, planValues } from "../helpers/plan";
import { plan } from "../helpers/planCli";
import { oneLvm, scratchStacks, stackYaml } from "../helpers/stackFiles";

const { dir, writeStack, good } = scratchStacks("zcloud-hardening-");
const lvm = oneLvm;
const stack = stackYaml;

describe("npm run plan refuses hostile and mistaken stack files", () => {
    test("a typo in the namespace fails the PR plan instead of planning the storage's deletion", async () => {
        const typo = writeStack("typo", stack({ "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storge:lvm": lvm }));
        const r = await plan(typo, "--diff", good);
        assert.equal(r.code, 1, r.stdout);
        assert.equal(r.stdout, "", "nothing planned, no deletion shown");
        assert.equal(
            r.stderr.slice(r.stderr.indexOf(": ") + 2),
            [
                "zcloud-storage config has 1 error; nothing was changed:",
                '  - zcloud-storge:lvm: unknown config namespace "zcloud-storge"; did you mean "zcloud-storage:lvm"? (known namespaces: zcloud-storage, pulumi, kubernetes); the program would ignore this key',
                "",
            ].join("\n"),
        );
    });

    test("an empty config: fails the plan", async () => {
        const r = await plan(writeStack("empty", "config: {}\n"));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /Pulumi\.empty\.yaml: config is empty; a plan of it would delete every storage of the stack\n/);
    });

    test("an alias bomb fails at once", async () => {
        const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
        for (let i = 1; i < 9; i++) {
            const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
            levels.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(", ")}]`);
        }
        const bomb = writeStack("bomb", `config:\n  zcloud-storage:namespace: x\n  zcloud-storage:bomb:\n${levels.map((l) => `    ${l}`).join("\n")}\n`);
        const start = Date.now();
        const r = await plan(bomb);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /Pulumi\.bomb\.yaml: aliases expand to more than 2000000 values \(an alias bomb\?\)/);
        assert.ok(Date.now() - start < 20_000, "the plan process (tsx start-up included) ends promptly");
    });

    test("the privileged-pod namespace comes from the pack's config, not from the stack under review", async () => {
        const config = { "zcloud-storage:namespace": "storage-system", "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:lvm": lvm };
        const file = writeStack("ns", stack(config));
        const own = await plan(file);
        assert.equal(own.code, 1, "the stack cannot move the namespace the pack allows");
        assert.match(own.stdout, /\[mandatory\] {2}storage-privileged-namespace/);
        const packConfig = path.join(dir, "pack.json");
        fs.writeFileSync(packConfig, JSON.stringify({ "storage-privileged-namespace": { namespace: "storage-system" } }));
        const allowed = await plan(file, "--policy-pack-config", packConfig);
        assert.equal(allowed.code, 0, allowed.stdout + allowed.stderr);
    });
});

describe("names like Object members plan as plain names", () => {
    test("a node named constructor gets its own commands, unpinned host key and all", async () => {
        const run = await planValues({
            ssh: { privateKey: { secure: "v1:abc" } },
            nodes: { constructor: { address: "10.0.0.20" }, node1: { address: "10.0.0.11" } },
            lvm: [{ name: "local-fast", hosts: { constructor: ["/dev/disk/by-id/wwn-0x5001"], node1: ["/dev/disk/by-id/wwn-0x5002"] } }],
        });
        assert.equal(run.error, undefined, run.error?.message);
        const disks = run.resources.find((r) => r.name === "local-fast-constructor-disks");
        assert.ok(disks, run.resources.map((r) => r.name).join(", "));
        const connection = (disks.policyInputs as { connection: Record<string, unknown> }).connection;
        assert.equal(connection.host, "10.0.0.20");
        assert.equal(connection.hostKey, undefined, "no inherited member stands in for a pinned key");
        assert.ok(run.resources.some((r) => r.name === "local-fast-constructor-label"));
    });
});

describe("derivedNames matches what the components register", () => {
    for (const monitoring of [undefined, {}]) {
        test(`every derived name of an lvm and a cephfs storage is a planned resource or object name (monitoring ${monitoring ? "on" : "off"})`, async () => {
            const values = {
                ...baseConfig,
                ...(monitoring ? { monitoring } : {}),
                lvm: [{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }],
                cephfs: [{ name: "shared", hosts: { node2: ["/dev/disk/by-id/wwn-0x5002", "/dev/sdc"], node3: ["/dev/disk/by-id/wwn-0x5003"] } }],
            };
            // The same config as the program reads it: the secure: key as its (here made-up) text.
            const parsed = parseStackConfig({ ...values, ssh: { ...values.ssh, privateKey: "key" } });
            assert.deepEqual(parsed.errors, []);
            const run = await planValues(values);
            assert.equal(run.error, undefined, run.error?.message);
            const planned = new Set(run.resources.flatMap((r) => [r.name, String((r.inputs.metadata as { name?: unknown } | undefined)?.name)]));
            const missing = derivedNames(parsed.model as unknown as StackParsed).filter((d) => !planned.has(d.name));
            assert.deepEqual(missing, []);
            assert.equal(derivedNames(parsed.model as unknown as StackParsed).some((d) => d.name === "ceph-shared-metrics"), monitoring !== undefined);
        });
    }
});
