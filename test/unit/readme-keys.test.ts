// README's stack config table names every key the config schema takes: a key added to the schema
// without a row (cephfs csiKey was one) fails here. iSCSI and NFS keys are told in their own
// sections' YAML examples, which the table points to.
import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { cephfsSchema, iscsiSchema, lvmSchema, nfsSchema, nodeSchema, sshSchema, stackSchema } from "../../components/config/schema";

const readme = fs.readFileSync(path.resolve(__dirname, "..", "..", "README.md"), "utf8");
const keysOf = (schema: z.ZodObject) => Object.keys(schema.shape);

/** The first cell of each row of the table under `| key | meaning |`, its code spans. */
function tableKeys(): string[] {
    const table = readme.slice(readme.indexOf("| key | meaning |"));
    const rows = table.split("\n").slice(2);
    const end = rows.findIndex((l) => !l.startsWith("|"));
    return rows.slice(0, end).flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]));
}

/** `cephfs[].name`, `.hosts` in one cell: each continued key under the prefix of the first. */
function expandedKeys(): Set<string> {
    const out = new Set<string>();
    let prefix = "";
    for (const cell of tableKeys()) {
        if (cell.startsWith(".")) {
            out.add(`${prefix}${cell.slice(1)}`);
        } else {
            out.add(cell);
            prefix = cell.includes(".") ? cell.slice(0, cell.lastIndexOf(".") + 1) : "";
        }
    }
    return out;
}

/** The YAML example of a README section, by its heading. */
function sectionYaml(heading: string): string {
    const at = readme.indexOf(`\n## ${heading}\n`);
    assert.ok(at >= 0, heading);
    const section = readme.slice(at + 1, readme.indexOf("\n## ", at + 1));
    return [...section.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]).join("\n");
}

test("the stack config table names every key of the schema", () => {
    const keys = expandedKeys();
    const named = (key: string) => keys.has(key) || [...keys].some((k) => k.startsWith(`${key}.`) || k.startsWith(`${key}[]`) || k === `${key}[]`);
    const missing = [
        ...[...keysOf(stackSchema), "configFiles"].filter((k) => !named(k)),
        ...keysOf(sshSchema).filter((k) => !keys.has(`ssh.${k}`) && !(k === "hostKeys" && keys.has("ssh.hostKeys.<node>"))),
        ...keysOf(lvmSchema).filter((k) => !keys.has(`lvm[].${k}`)).map((k) => `lvm[].${k}`),
        ...keysOf(cephfsSchema).filter((k) => !keys.has(`cephfs[].${k}`)).map((k) => `cephfs[].${k}`),
    ];
    assert.deepEqual(missing, []);
    // A node's keys are told in its row.
    const nodeRow = readme.split("\n").find((l) => l.startsWith("| `nodes.<node>` |")) ?? "";
    assert.deepEqual(keysOf(nodeSchema).filter((k) => !nodeRow.includes(`\`${k}\``)), []);
});

test("the iSCSI and NFS sections' examples name every key of their storages", () => {
    const iscsi = sectionYaml("iSCSI");
    const nfs = sectionYaml("NFS");
    assert.deepEqual(keysOf(iscsiSchema).filter((k) => !new RegExp(`^\\s*(- )?${k}:`, "m").test(iscsi)), []);
    assert.deepEqual(keysOf(nfsSchema).filter((k) => !new RegExp(`^\\s*(- )?${k}:`, "m").test(nfs)), []);
});
