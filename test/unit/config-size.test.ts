import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { checkConfigSize, configBudget, maxEnvironmentString, pulumiConfigJson } from "../../tools/plan/configSize";

describe("the config's size as Pulumi passes it (PULUMI_CONFIG)", () => {
    test("a map of full keys to strings, objects JSON-encoded inside, <>& escaped as Go does", () => {
        const json = pulumiConfigJson({ "zcloud-storage:namespace": "zs", "zcloud-storage:nodes": { n1: { address: "10.0.0.1" } }, "zcloud-storage:note": "a<b&c>" });
        assert.equal(json, '{"zcloud-storage:namespace":"zs","zcloud-storage:nodes":"{\\"n1\\":{\\"address\\":\\"10.0.0.1\\"}}","zcloud-storage:note":"a\\u003cb\\u0026c\\u003e"}');
        assert.equal(configBudget, 131072 - 15);
        assert.equal(maxEnvironmentString, 131072);
    });

    test("under three quarters of the budget: nothing to say", () => {
        assert.deepEqual(checkConfigSize({ "zcloud-storage:x": "y" }, "s.yaml"), { bytes: 24 });
    });

    test("over three quarters: an advisory with the size and the share; over the budget: the error", () => {
        const filler = (n: number) => ({ "zcloud-storage:nodes": "x".repeat(n - '{"zcloud-storage:nodes":""}'.length) });
        const near = checkConfigSize(filler(100_000), "stacks/Pulumi.big.yaml");
        assert.equal(near.bytes, 100_000);
        assert.equal(near.error, undefined);
        assert.equal(near.advisory, "stacks/Pulumi.big.yaml: the config is 97.7 KiB as Pulumi passes it to the program, 76% of the 128.0 KiB Pulumi can pass (one environment variable); before it grows past that, move the node inventory (zcloud-storage:nodes, ssh.hostKeys, the storages) into files listed in zcloud-storage:configFiles, or split the stack (docs/splitting-stacks.md)");
        assert.equal(checkConfigSize(filler(configBudget), "s.yaml").error, undefined);
        const over = checkConfigSize(filler(configBudget + 1), "stacks/Pulumi.big.yaml");
        assert.equal(
            over.error,
            'stacks/Pulumi.big.yaml: the config is 128.0 KiB as Pulumi passes it to the program (one environment variable, PULUMI_CONFIG), over Linux\'s 128.0 KiB limit for one: pulumi preview and up would fail before the program starts ("argument list too long"); move the node inventory (zcloud-storage:nodes, ssh.hostKeys, the storages) into files listed in zcloud-storage:configFiles, or split the stack (docs/splitting-stacks.md)',
        );
    });

    test("the size is the UTF-8 length of exactly what the language host sets", () => {
        fc.assert(
            fc.property(fc.dictionary(fc.string({ minLength: 1 }), fc.oneof(fc.string(), fc.array(fc.string()), fc.dictionary(fc.string(), fc.string()))), (values) => {
                const json = pulumiConfigJson(values);
                assert.equal(checkConfigSize(values, "s").bytes, Buffer.byteLength(json, "utf8"));
                // Round trip: the program reads back every value as the CLI gave it.
                const back = JSON.parse(json) as Record<string, string>;
                for (const [k, v] of Object.entries(values)) {
                    assert.equal(back[k], typeof v === "string" ? v : JSON.stringify(v));
                }
            }),
        );
    });
});
