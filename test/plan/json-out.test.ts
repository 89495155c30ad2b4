import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { writeJsonStreaming } from "../../tools/plan/jsonOut";

/** Everything writeJsonStreaming writes, with a reader that drains slowly (backpressure). */
async function streamed(listKey: string, list: unknown[], rest: Record<string, unknown>): Promise<string> {
    const out = new PassThrough({ highWaterMark: 1024 });
    let text = "";
    out.setEncoding("utf8");
    out.on("data", (chunk: string) => {
        text += chunk;
        out.pause();
        setImmediate(() => out.resume());
    });
    const done = new Promise((resolve) => out.on("end", resolve));
    await writeJsonStreaming(out, listKey, list, rest);
    out.end();
    await done;
    return text;
}

test("the streamed --json text is exactly JSON.stringify(doc, null, 2) plus a newline", async () => {
    const big = "sh -c '" + "x\n'\"'\"'".repeat(300_000) + "' lvm-reconcile apply";
    const resources = [
        { urn: "urn:a", dependencies: [], inputs: { create: big, nested: { list: [1, { a: null }], empty: {} } } },
        { urn: "urn:b", dependencies: ["urn:a"], inputs: {} },
        { urn: "urn:c\u2028", dependencies: [], inputs: { text: "tab\there \"quoted\"" } },
    ];
    const violations = [{ policyName: "p", message: "m\nline" }];
    const changes = [{ kind: "create", urn: "urn:a", fields: [] }];
    for (const [list, rest] of [
        [resources, { violations, changes }],
        [resources, { violations: [], changes: undefined }],
        [[], { violations: [] }],
        [[{ only: true }], { violations }],
    ] as Array<[unknown[], Record<string, unknown>]>) {
        const expected = JSON.stringify({ resources: [...list], ...rest }, null, 2) + "\n";
        assert.equal(await streamed("resources", [...list], rest), expected);
    }
});

test("items are released from the list once written", async () => {
    const list: unknown[] = [{ a: 1 }, { b: 2 }];
    await streamed("resources", list, {});
    assert.deepEqual(list, [undefined, undefined]);
});
