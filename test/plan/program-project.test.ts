// Issue #36: `npm run plan -- <stack> --program FILE` runs FILE as the project its Pulumi.yaml
// names (or --project NAME): its `new pulumi.Config()` reads that project's keys; and every
// `secure:` placeholder is an advisory naming the command that sets it, in text and in --json.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { plan } from "../helpers/planCli";

const root = path.resolve(__dirname, "..", "..");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-program-project-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A program of project `other`, outside the repository, with the repository's packages. */
const app = path.join(dir, "app");
fs.mkdirSync(app);
fs.symlinkSync(path.join(root, "node_modules"), path.join(app, "node_modules"));
fs.writeFileSync(path.join(app, "Pulumi.yaml"), "name: other\nruntime: nodejs\n");
fs.writeFileSync(
    path.join(app, "index.ts"),
    `import * as pulumi from "@pulumi/pulumi";
const cfg = new pulumi.Config();
new pulumi.CustomResource("test:index:Thing", "thing", { region: cfg.require("region"), key: cfg.requireSecret("sshKey") });
`,
);
const stack = path.join(app, "Pulumi.edge.yaml");
fs.writeFileSync(stack, "config:\n  region: eu-1\n  other:sshKey:\n    secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret\n");
const program = path.join(app, "index.ts");

const sshKeyAdvisory =
    "other:sshKey is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); set it: pulumi config set -s edge --secret --path 'other:sshKey' < ssh-key-file";

describe("npm run plan --program: the program's project", () => {
    test("a program whose Pulumi.yaml says name: other reads other: keys (a key without a namespace is other's)", async () => {
        const r = await plan(stack, "--program", program, "--json");
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout);
        const thing = out.resources.find((x: { type: string }) => x.type === "test:index:Thing");
        assert.deepEqual(thing.inputs, { region: "eu-1", key: "[secret]" });
        assert.match(thing.urn, /^urn:pulumi:edge::other::pulumi:pulumi:Stack\$test:index:Thing::thing$/);
        assert.deepEqual(out.advisories, [sshKeyAdvisory]);
    });

    test("--project NAME overrides the Pulumi.yaml: the program reads NAME: keys", async () => {
        const r = await plan(stack, "--program", program, "--project", "edge-app");
        assert.equal(r.code, 2);
        assert.match(r.stderr, /edge-app:sshKey/);
        const usage = await plan(stack, "--project", "edge-app");
        assert.equal(usage.code, 2);
        assert.match(usage.stderr, /^--project goes with --program: it names the project your program runs as\n/);
    });

    test("a program without a Pulumi.yaml above it is refused, naming --project", async () => {
        const lone = path.join(dir, "lone.ts");
        fs.writeFileSync(lone, "");
        const r = await plan(stack, "--program", lone);
        assert.equal(r.code, 2);
        assert.equal(r.stderr, `--program ${lone}: no Pulumi.yaml in its directory or above, so no project name for its config; give it with --project NAME\n`);
        assert.equal(r.stdout, "");
    });
});

describe("npm run plan: secure: placeholders", () => {
    test("the prod example: one advisory per placeholder with its pulumi config set line, in text and --json", async () => {
        const lines = [
            "zcloud-storage:ssh.privateKey is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); set it: pulumi config set -s prod --secret --path 'zcloud-storage:ssh.privateKey' < private-key-file",
            "zcloud-storage:iscsi[0].chap.password is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); set it: pulumi config set -s prod --secret --path 'zcloud-storage:iscsi[0].chap.password' < password-file",
        ];
        const [text, json] = await Promise.all([plan("prod"), plan("prod", "--json")]);
        assert.equal(text.code, 0, text.stderr);
        assert.deepEqual(
            text.stdout.split("\n").filter((l) => l.startsWith("advisory: ")),
            lines.map((l) => `advisory: ${l}`),
        );
        assert.equal(json.code, 0, json.stderr);
        assert.deepEqual(JSON.parse(json.stdout).advisories, lines);
    });
});
