// discover and status read their stack argument as `npm run plan` does (tools/plan/stackFile.ts
// readStackArg) and validate every key as the program does (parseFullConfig): the same refusals,
// word for word, before any node or cluster is contacted.
import { after, describe, test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CliInputError } from "../../tools/plan/cliInputs";
import { readStackArg } from "../../tools/plan/stackFile";
import { Day2ConfigError, loadDay2Stack } from "../../tools/discover/stack";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-day2-stack-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const base = [
    "config:",
    "  zcloud-storage:ssh:",
    "    user: root",
    "    privateKey: { secure: v1:not-readable-offline }",
    '    hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1" }',
    "  zcloud-storage:nodes:",
    "    node1: { address: 10.0.0.11 }",
];

function stackFile(name: string, lines: string[]): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, [...lines, ""].join("\n"));
    return file;
}

/** The message of the refusal, and that it is a config error (exit 3) rather than a crash. */
function refusal(target: string): string {
    try {
        loadDay2Stack(target);
    } catch (e) {
        assert.ok(e instanceof Day2ConfigError, String(e));
        return e.message;
    }
    assert.fail(`${target} was accepted`);
}

/** What plan says for the same argument. */
function planRefusal(target: string): string {
    try {
        readStackArg(target);
    } catch (e) {
        assert.ok(e instanceof CliInputError || e instanceof Error);
        return (e as Error).message;
    }
    assert.fail(`${target} was accepted by plan`);
}

describe("day-2 stack reading is plan's", () => {
    test("a valid stack loads with its model", () => {
        const file = stackFile("ok", [...base, "  kubernetes:context: prod-admin"]);
        const stack = loadDay2Stack(file);
        assert.deepEqual(Object.keys(stack.model.nodes), ["node1"]);
        assert.equal(stack.kubeContext, "prod-admin");
    });

    test("stack names follow plan's lookup rules, with plan's messages", () => {
        for (const arg of ["Dev", "..", "a.b", "nope", path.join(dir, "missing.yaml")]) {
            assert.equal(refusal(arg), planRefusal(arg), arg);
        }
        assert.equal(
            refusal(".."),
            'stack "..": not a stack name (lower-case letters, digits and "-", at most 63) nor a stack file path (a path has a "/" or ends in .yaml)',
        );
        assert.equal(refusal(`${dir}/missing.yaml`), `stack file ${dir}/missing.yaml: no such file`);
        assert.equal(refusal(`${dir}/`), `stack file ${dir}/: not a file`);
    });

    test("a stack file that is a symbolic link, or reached through one, is refused as plan refuses it", () => {
        const real = stackFile("real", base);
        const link = path.join(dir, "Pulumi.link.yaml");
        fs.symlinkSync(real, link);
        const linkedDir = path.join(dir, "linked");
        fs.symlinkSync(dir, linkedDir);
        const through = path.join(linkedDir, "Pulumi.real.yaml");
        const why = "a stack file is read only through real directories and files, never through a link";
        assert.equal(refusal(link), `stack file ${link}: ${link} is a symbolic link; ${why}`);
        assert.equal(refusal(through), `stack file ${through}: ${linkedDir} is a symbolic link; ${why}`);
        for (const arg of [link, through]) {
            assert.equal(refusal(arg), planRefusal(arg), arg);
        }
    });

    test("an unknown namespace or provider key is refused, as the program refuses it", () => {
        const file = stackFile("ns", [...base, "  zcloud-storge:lvm: []", "  kubernetes:contxt: prod"]);
        assert.equal(
            refusal(file),
            `${path.relative(process.cwd(), file)}: 2 config error(s):\n` +
                '  - zcloud-storge:lvm: unknown config namespace "zcloud-storge"; did you mean "zcloud-storage:lvm"? (known namespaces: zcloud-storage, pulumi, kubernetes); the program would ignore this key\n' +
                '  - kubernetes:contxt: unknown kubernetes config key; did you mean "kubernetes:context"? (known keys: alwaysRender, cluster, clusterIdentifier, context, deleteUnreachable, enableConfigMapMutable, enablePatchForce, enableSecretMutable, enableServerSideApply, helmReleaseSettings, kubeClientSettings, kubeconfig, namespace, renderYamlToDirectory, skipUpdateUnreachable, suppressDeprecationWarnings, suppressHelmHookWarnings, upsertExistingObjects)',
        );
    });

    test("a system namespace as the storage namespace is refused", () => {
        const file = stackFile("sysns", [...base, "  zcloud-storage:namespace: kube-system"]);
        assert.equal(
            refusal(file),
            `${path.relative(process.cwd(), file)}: 1 config error(s):\n` +
                '  - namespace: "kube-system" is a system namespace (default, kube-node-lease, kube-public, kube-system): the storage\'s privileged pods and keys need a namespace of their own, e.g. zcloud-storage',
        );
    });

    test("a stack file beyond the YAML bounds is refused before it is parsed", () => {
        const file = stackFile("bomb", [...base, "  zcloud-storage:lvm: &a [*a]"]);
        assert.equal(refusal(file), `${path.relative(process.cwd(), file)}: an alias refers to itself (a YAML anchor used inside its own value)`);
    });

    test("a node address with an IPv6 zone id is refused by discover and status (exit 3), nothing contacted", async () => {
        const file = stackFile("zone", base.map((l) => l.replace("{ address: 10.0.0.11 }", '{ address: "fe80::1%eth0" }')));
        const expected =
            `${path.relative(process.cwd(), file)}: 1 config error(s):\n` +
            '  - nodes.node1.address: "fe80::1%eth0" carries an IPv6 zone (%eth0): a zone names a network interface of one machine, so it does not hold for every machine that uses the address; use a global or unique-local address, or a hostname';
        assert.equal(refusal(file), expected);
        const { runTool } = await import("../helpers/day2");
        // The message names the file relative to where the tool runs (the repository root).
        const fromRoot = expected.replace(path.relative(process.cwd(), file), path.relative(path.resolve(__dirname, "../.."), file));
        for (const tool of ["discover", "status"] as const) {
            const r = await runTool(tool, [file, "--identity", "package.json"]);
            assert.deepEqual([r.code, r.stderr.trim(), r.stdout], [3, fromRoot, ""], tool);
        }
    });

    test("a private key in clear is refused, as the program refuses it", () => {
        const file = stackFile("clear", [...base.map((l) => l.replace("{ secure: v1:not-readable-offline }", "not-a-secret"))]);
        assert.equal(
            refusal(file),
            `${path.relative(process.cwd(), file)}: 1 config error(s):\n` +
                "  - ssh.privateKey: is stored in clear text; set it as a secret: pulumi config set -s clear --secret --path ssh.privateKey (read the value from a file or stdin, not the command line)",
        );
    });
});
