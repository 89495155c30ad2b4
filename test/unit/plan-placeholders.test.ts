// Issue #36: a `secure:` placeholder left in a stack file is named with the command that sets it;
// the project a `--program` plan runs as comes from the program's Pulumi.yaml (or --project).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { isPlaceholderCiphertext, readStackDocument } from "../../components/config/stackDocument";
import { CliInputError } from "../../tools/plan/cliInputs";
import { configSetPath, placeholderAdvisories, shellWord } from "../../tools/plan/placeholders";
import { findProjectFile, projectOfProgram } from "../../tools/plan/project";
import { parseStackYaml } from "../../tools/plan/stackFile";

const advisory = (key: string, stack: string, word: string, file: string) =>
    `${key} is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); set it: pulumi config set -s ${stack} --secret --path ${word} < ${file}`;

describe("placeholder secrets", () => {
    test("a placeholder holds REPLACE-ME (any case) or nothing; a ciphertext is none", () => {
        assert.equal(isPlaceholderCiphertext("v1:REPLACE-ME-WITH-pulumi-config-set-secret"), true);
        assert.equal(isPlaceholderCiphertext("replace-me"), true);
        assert.equal(isPlaceholderCiphertext(""), true);
        assert.equal(isPlaceholderCiphertext("  "), true);
        assert.equal(isPlaceholderCiphertext("v1:0eW3BYdlTGBVnDo3:6WfPFtVhWZ7c4uiypDCJDVJrwqvrLw=="), false);
        assert.equal(isPlaceholderCiphertext("AAABAJ0v1MhpRvk2bpY7D3dZy5UJDdgZH1a8Hs9E0wQ="), false);
        assert.equal(isPlaceholderCiphertext("v1:abc"), false);
    });

    test("the stack file reader lists each placeholder by its key and the keys and indexes under it", () => {
        const doc = readStackDocument(
            [
                "config:",
                "  zcloud-storage:ssh:",
                "    privateKey: { secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret }",
                "    bastion: { host: j, privateKey: { secure: v1:0eW3BYdlTGBVnDo3:6WfPFtVhWZ7c4uiypDCJDVJrwqvrLw== } }",
                "  iscsi:",
                "    - chap: { username: u, password: { secure: '' } }",
                "  kubernetes:kubeconfig: { secure: v1:REPLACE-ME }",
                "",
            ].join("\n"),
            "f",
        );
        assert.deepEqual(doc.placeholders, [["zcloud-storage:ssh", "privateKey"], ["zcloud-storage:iscsi", 0, "chap", "password"], ["kubernetes:kubeconfig"]]);
        assert.deepEqual(doc.securePaths, ["zcloud-storage:ssh.privateKey", "zcloud-storage:ssh.bastion.privateKey", "zcloud-storage:iscsi[0].chap.password", "kubernetes:kubeconfig"]);
    });

    test("a key without a namespace is the project's, as the Pulumi CLI reads it", () => {
        const doc = readStackDocument("config:\n  sshKey: { secure: v1:REPLACE-ME }\n  edge:region: a\n", "f", "edge");
        assert.deepEqual(Object.keys(doc.values), ["edge:sshKey", "edge:region"]);
        assert.deepEqual(doc.placeholders, [["edge:sshKey"]]);
        assert.throws(() => readStackDocument("config:\n  region: a\n  edge:region: b\n", "f", "edge"), { message: /f: edge:region: is the same key as region \(Pulumi reads both as edge:region\)/ });
    });

    test("pulumi config set --path names nested keys, indexes and keys Pulumi must quote", () => {
        assert.equal(configSetPath(["zcloud-storage:ssh", "privateKey"]), "zcloud-storage:ssh.privateKey");
        assert.equal(configSetPath(["zcloud-storage:iscsi", 0, "chap", "password"]), "zcloud-storage:iscsi[0].chap.password");
        assert.equal(configSetPath(["kubernetes:kubeconfig"]), "kubernetes:kubeconfig");
        assert.equal(configSetPath(["edge:db", "node-1", "pass"]), "edge:db.node-1.pass");
        assert.equal(configSetPath(["edge:db.main", "a.b", 'say "hi"', "x[0]"]), 'edge:["db.main"]["a.b"]["say \\"hi\\""]["x[0]"]');
        assert.equal(configSetPath(["edge:db", "back\\slash"]), undefined);
        assert.equal(configSetPath(["edge:db", ""]), undefined);
    });

    test("shell words: safe ones as they are, others in single quotes", () => {
        assert.equal(shellWord("prod-pool-a"), "prod-pool-a");
        assert.equal(shellWord("zcloud-storage:ssh.privateKey"), "'zcloud-storage:ssh.privateKey'");
        assert.equal(shellWord("edge:it's"), `'edge:it'\\''s'`);
    });

    test("one advisory per placeholder, in stack file order, with the command that sets it", () => {
        const config = parseStackYaml(
            "config:\n  zcloud-storage:ssh: { privateKey: { secure: v1:REPLACE-ME } }\n  zcloud-storage:iscsi: [{ chap: { password: { secure: v1:REPLACE-ME } } }]\n  kubernetes:kubeconfig: { secure: '' }\n",
            "prod",
        );
        assert.deepEqual(placeholderAdvisories(config), [
            advisory("zcloud-storage:ssh.privateKey", "prod", "'zcloud-storage:ssh.privateKey'", "private-key-file"),
            advisory("zcloud-storage:iscsi[0].chap.password", "prod", "'zcloud-storage:iscsi[0].chap.password'", "password-file"),
            advisory("kubernetes:kubeconfig", "prod", "'kubernetes:kubeconfig'", "kubeconfig-file"),
        ]);
        assert.deepEqual(placeholderAdvisories(parseStackYaml("config:\n  zcloud-storage:ssh: { privateKey: { secure: v1:abc } }\n", "prod")), []);
        assert.deepEqual(placeholderAdvisories(parseStackYaml("config:\n  edge:db: { 'a\\b': { secure: v1:REPLACE-ME } }\n", "x")), [
            '["edge:db","a\\\\b"] is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); no pulumi config set --path can name this key: rename it, then set it with --secret',
        ]);
    });
});

describe("the project of a --program plan", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-project-"));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const put = (file: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        fs.writeFileSync(path.join(dir, file), text);
        return path.join(dir, file);
    };
    const refused = (program: string, flag: string | undefined, message: string) =>
        assert.throws(() => projectOfProgram(program, flag, "index.ts"), (e: Error) => e instanceof CliInputError && e.message === message);

    test("the name of the first Pulumi.yaml in the program's directory or above; --project overrides it", () => {
        put("app/Pulumi.yaml", "name: other\nruntime: nodejs\n");
        const program = put("app/src/index.ts", "");
        assert.equal(findProjectFile(path.dirname(program)), path.join(dir, "app/Pulumi.yaml"));
        assert.deepEqual(projectOfProgram(program, undefined), { name: "other", file: path.join(dir, "app/Pulumi.yaml") });
        assert.deepEqual(projectOfProgram(program, "edge"), { name: "edge" });
        put("yml/Pulumi.yml", "name: from-yml\n");
        assert.equal(projectOfProgram(put("yml/index.ts", ""), undefined).name, "from-yml");
        assert.equal(projectOfProgram(path.resolve(__dirname, "../../index.ts"), undefined).name, "zcloud-storage");
    });

    test("a project file without a valid name, an unreadable one, or a bad --project is refused in one line", () => {
        const shown = (f: string) => path.relative(process.cwd(), path.join(dir, f));
        refused(put("noname/index.ts", ""), undefined, "--program index.ts: no Pulumi.yaml in its directory or above, so no project name for its config; give it with --project NAME");
        put("noname/Pulumi.yaml", "runtime: nodejs\n");
        refused(path.join(dir, "noname/index.ts"), undefined, `--program index.ts: ${shown("noname/Pulumi.yaml")} has no name: (the project's name, as pulumi new writes it); or give the project with --project NAME`);
        put("badname/Pulumi.yaml", "name: has space\n");
        refused(put("badname/index.ts", ""), undefined, `--program index.ts: ${shown("badname/Pulumi.yaml")}: name: "has space" is not a Pulumi project name (letters, digits, "_", "." and "-", at most 100)`);
        put("dir/Pulumi.yaml/x", "");
        refused(put("dir/index.ts", ""), undefined, `--program index.ts: cannot read ${shown("dir/Pulumi.yaml")}: EISDIR: illegal operation on a directory, read; or give the project with --project NAME`);
        refused(path.join(dir, "app/src/index.ts"), "a/b", '--project a/b: "a/b" is not a Pulumi project name (letters, digits, "_", "." and "-", at most 100)');
    });
});
