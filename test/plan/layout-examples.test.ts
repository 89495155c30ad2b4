// examples/layouts/: one stack file per common layout (NFS only, LVM + NFS on three nodes, CephFS
// only, iSCSI with two initiators). Each header states what its plan reports:
//
//   # Plan (npm run plan -- examples/layouts/Pulumi.<name>.yaml), checked by ...:
//   #   resources: 41
//   #   StorageClasses: local (default), shared-nfs
//   #   warnings: 0
//   #   advisories: 1 (...)
//   #   policies: no violations
//
// Each file is planned as a user would (a child process of tools/plan.ts) and every claim is
// compared with the plan, so a header that goes stale fails here.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import { parseStackYaml } from "../../tools/plan/stackFile";
import { plan } from "../helpers/planCli";

const root = path.resolve(__dirname, "..", "..");
const dir = path.join(root, "examples", "layouts");
const layouts = fs.readdirSync(dir).filter((f) => /^Pulumi\..+\.yaml$/.test(f)).sort();

interface Claim {
    command: string;
    resources: number;
    storageClasses: string[];
    warnings: number;
    advisories: number;
    policies: string;
}

/** The header's `# Plan (...)` block, read key by key; a missing key fails. */
function claimOf(text: string): Claim {
    const header = text.split("\nconfig:")[0].split("\n");
    const start = header.findIndex((l) => l.startsWith("# Plan ("));
    assert.ok(start >= 0, "the header has a `# Plan (npm run plan -- <file>)` block");
    const command = /^# Plan \((npm run plan -- \S+)\)/.exec(header[start])?.[1] ?? "";
    const fields = new Map<string, string>();
    for (const line of header.slice(start + 1)) {
        const m = /^# {3}([A-Za-z]+): (.*)$/.exec(line);
        if (m) {
            fields.set(m[1], m[2].trim());
        }
    }
    const field = (key: string): string => {
        const v = fields.get(key);
        assert.ok(v !== undefined, `the header's plan block names ${key}`);
        return v;
    };
    const count = (key: string): number => {
        const m = /^(\d+)\b/.exec(field(key));
        assert.ok(m, `${key}: starts with a number`);
        return Number(m[1]);
    };
    return {
        command,
        resources: count("resources"),
        storageClasses: field("StorageClasses").split(/,\s*/),
        warnings: count("warnings"),
        advisories: count("advisories"),
        policies: field("policies"),
    };
}

/** The same facts read from the plan's text output. */
function actualOf(stdout: string): Omit<Claim, "command"> {
    const lines = stdout.split("\n");
    const advisoryPolicies = lines.filter((l) => l.startsWith("        - [advisory]")).length;
    const mandatory = lines.filter((l) => l.startsWith("        - [mandatory]")).length;
    return {
        resources: Number(/^Plan of stack \S+ \(.*\): (\d+) resources$/m.exec(stdout)?.[1] ?? NaN),
        storageClasses: lines.flatMap((l) => {
            const m = /^ +StorageClass (\S+)( \(default\))?/.exec(l);
            return m ? [`${m[1]}${m[2] ?? ""}`] : [];
        }),
        warnings: lines.filter((l) => l.startsWith("warning: ")).length,
        advisories: lines.filter((l) => l.startsWith("advisory: ")).length,
        policies: lines.includes("Policies: no violations")
            ? "no violations"
            : `${advisoryPolicies} advisory, ${mandatory} mandatory`,
    };
}

describe("examples/layouts plan as their headers claim", () => {
    test("the four layouts are there", () => {
        assert.deepEqual(layouts, [
            "Pulumi.cephfs-only.yaml",
            "Pulumi.iscsi-two-initiators.yaml",
            "Pulumi.lvm-nfs.yaml",
            "Pulumi.nfs-only.yaml",
        ]);
    });
    for (const file of layouts) {
        test(file, async () => {
            const rel = path.posix.join("examples", "layouts", file);
            const text = fs.readFileSync(path.join(dir, file), "utf8");
            const { command, ...claim } = claimOf(text);
            assert.equal(command, `npm run plan -- ${rel}`, "the header names the command that plans this file");
            const r = await plan(rel);
            const actual = actualOf(r.stdout);
            assert.deepEqual(actual, claim, r.stdout.split("\n").filter((l) => /^(warning|advisory|Plan of|Policies)|^ +StorageClass |^ {8}- \[/.test(l)).join("\n"));
            assert.equal(r.code, 0, r.stderr);

            // The advisories are the secret placeholders, each with the command that sets it; the
            // header shows each of those commands for the stack it is copied into.
            const stack = /^Pulumi\.(.+)\.yaml$/.exec(file)![1];
            const secure = parseStackYaml(text, stack).securePaths ?? [];
            assert.equal(text.match(/secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret/g)?.length ?? 0, secure.length, "every secure value is a placeholder");
            assert.deepEqual(
                r.stdout.split("\n").filter((l) => l.startsWith("advisory: ")).map((l) => /--path '([^']+)'/.exec(l)?.[1]),
                secure,
            );
            const header = text.split("\nconfig:")[0];
            const set = [...header.matchAll(/pulumi config set -s <stack> --secret --path '?([^' ]+)'? </g)].map((m) => m[1].replace(/^zcloud-storage:/, ""));
            assert.deepEqual(set.sort(), secure.map((p) => p.replace(/^zcloud-storage:/, "")).sort(), "the header sets every placeholder");
        });
    }
});

describe("docs/examples.md tells the layouts as they are", () => {
    const guide = fs.readFileSync(path.join(root, "docs", "examples.md"), "utf8");

    test("its table of what each plans matches each file's header", () => {
        for (const file of layouts) {
            const claim = claimOf(fs.readFileSync(path.join(dir, file), "utf8"));
            const row = guide.split("\n").find((l) => l.startsWith(`| ${file} |`));
            assert.ok(row, `docs/examples.md has a row for ${file}`);
            const [resources, storageClasses, advisories, policies] = row.split("|").slice(2, 6).map((c) => c.trim());
            assert.deepEqual(
                { resources: Number(resources), storageClasses: storageClasses.split(/,\s*/), advisories: Number(advisories), policies },
                { resources: claim.resources, storageClasses: claim.storageClasses, advisories: claim.advisories, policies: claim.policies },
                file,
            );
            assert.ok(guide.includes(`(../examples/layouts/${file})`), `docs/examples.md links ${file}`);
        }
    });

    test("its commands set every secret placeholder of every layout", () => {
        const block = [...guide.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes("pulumi stack init"));
        assert.ok(block, "a block with pulumi stack init");
        const stack = /pulumi stack init (\S+)/.exec(block)![1];
        const set = new Set([...block.matchAll(new RegExp(`pulumi config set -s ${stack} --secret --path '?([^' ]+)'? <`, "g"))].map((m) => m[1].replace(/^zcloud-storage:/, "")));
        const secure = new Set(layouts.flatMap((f) => parseStackYaml(fs.readFileSync(path.join(dir, f), "utf8"), "x").securePaths ?? []).map((p) => p.replace(/^zcloud-storage:/, "")));
        assert.deepEqual([...set].sort(), [...secure].sort());
        assert.ok(guide.includes(`cp examples/layouts/`) && guide.includes(`stacks/Pulumi.${stack}.yaml`), "the copy lands in stacks/ under the stack's name");
    });
});
