// The documentation holds together: docs/README.md links every page of docs/, every relative link
// in README.md and docs/*.md reaches a file (and its heading, for a #fragment), and the README's
// real-CLI block sets every secret placeholder of the stack it names.
import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseStackYaml } from "../../tools/plan/stackFile";
import { keyCommand } from "../../tools/discover/scaffold";

const root = path.resolve(__dirname, "..", "..");
const docs = path.join(root, "docs");
const pages = fs.readdirSync(docs).filter((f) => f.endsWith(".md")).sort();

/** Markdown without its code blocks and code spans (a link in a code sample is not a link). */
function prose(text: string): string {
    return text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** The targets of `[text](target)` links. */
function links(text: string): string[] {
    return [...prose(text).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

/** GitHub's heading anchors of a Markdown file. */
function anchors(text: string): Set<string> {
    const out = new Set<string>();
    for (const m of prose(text).matchAll(/^#{1,6} +(.+)$/gm)) {
        out.add(
            m[1]
                .trim()
                .toLowerCase()
                .replace(/[^\p{L}\p{N} _-]/gu, "")
                .replace(/ /g, "-"),
        );
    }
    return out;
}

test("docs/README.md links every page of docs/", () => {
    const index = new Set(links(fs.readFileSync(path.join(docs, "README.md"), "utf8")).map((l) => l.split("#")[0]));
    assert.deepEqual(
        pages.filter((p) => p !== "README.md" && !index.has(p)),
        [],
    );
});

test("every relative link in README.md and docs/ reaches its file and heading", () => {
    const broken: string[] = [];
    for (const file of ["README.md", ...pages.map((p) => path.join("docs", p))]) {
        const text = fs.readFileSync(path.join(root, file), "utf8");
        for (const link of links(text)) {
            if (/^[a-z]+:/.test(link)) {
                continue; // https:, mailto: are not this repository's
            }
            const [target, fragment] = link.split("#");
            const resolved = target ? path.resolve(path.dirname(path.join(root, file)), target) : path.join(root, file);
            if (!fs.existsSync(resolved)) {
                broken.push(`${file}: ${link}: no such file`);
                continue;
            }
            if (fragment && resolved.endsWith(".md") && !anchors(fs.readFileSync(resolved, "utf8")).has(fragment)) {
                broken.push(`${file}: ${link}: no such heading`);
            }
        }
    }
    assert.deepEqual(broken, []);
});

test("the README's real-CLI block sets every secure placeholder of the stack it names", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
    const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes("pulumi stack init"));
    assert.ok(block, "README has a block with pulumi stack init");
    const stack = /pulumi stack init (\S+)/.exec(block)![1];
    const file = path.join(root, "stacks", `Pulumi.${stack}.yaml`);
    const text = fs.readFileSync(file, "utf8");
    const secure = parseStackYaml(text, stack).securePaths ?? [];
    // Every secure value of the example is the placeholder: the steps must set each one.
    assert.equal(text.match(/secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret/g)?.length, secure.length);
    const placeholders = secure.map((p) => p.replace(/^zcloud-storage:/, "")).sort();
    assert.ok(placeholders.length > 0, `${file} has placeholders`);
    const set = [...block.matchAll(new RegExp(`pulumi config set -s ${stack} --secret --path '?([^' ]+)'?`, "g"))].map((m) => m[1].replace(/^zcloud-storage:/, "")).sort();
    assert.deepEqual(set, placeholders);
    assert.match(block, /PULUMI_CONFIG_PASSPHRASE/, "the passphrase is named");
    assert.match(block, /encryptionsalt/, "the salt stack init writes is named");
});

test("getting-started sets the key with the very command --write-stack writes into its stack file", () => {
    const doc = fs.readFileSync(path.join(docs, "getting-started.md"), "utf8");
    const written = /--write-stack (\S+)/.exec(doc)![1];
    assert.equal(written, "stacks/Pulumi.edge.yaml");
    assert.ok(doc.split("\n").includes(keyCommand(written)), `the doc runs: ${keyCommand(written)}`);
    assert.ok(doc.includes("pulumi stack init edge "), "and creates that stack");
});
