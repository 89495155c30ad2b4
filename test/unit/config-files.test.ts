// zcloud-storage:configFiles: more of a stack's config in files beside its stack file, merged in
// before validation (components/config/configFiles.ts), refused with one issue per problem.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import * as yaml from "js-yaml";
import { configFileReader, configFilesKey, expandConfigFiles, maxConfigFiles, readNoFollow } from "../../components/config/configFiles";
import { formatIssue } from "../../components/config/errors";
import { checkStackFileConfigSize } from "../../tools/plan/configSize";
import { loadDay2Stack } from "../../tools/discover/stack";
import { loadStackFile, readStackArg } from "../../tools/plan/stackFile";

const files = (contents: Record<string, string>) => (file: string) => {
    if (!Object.hasOwn(contents, file)) {
        throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), { code: "ENOENT" });
    }
    return contents[file];
};
const issues = (r: { issues: Array<{ path: string; message: string }> }) => r.issues.map(formatIssue);

describe("configFiles: merging", () => {
    test("a file adds keys and map entries: nodes and lvm from the file, ssh.hostKeys beside the stack's ssh.privateKey", () => {
        const r = expandConfigFiles(
            {
                [configFilesKey]: ["inventory.yaml"],
                "kubernetes:context": "prod",
                "zcloud-storage:ssh": { user: "zcloud", privateKey: "[secret]" },
            },
            files({
                "inventory.yaml": [
                    "config:",
                    "  zcloud-storage:ssh:",
                    "    hostKeys: { node1: ssh-ed25519 AAAA }",
                    "  nodes:",
                    "    node1: { address: 10.0.0.11 }",
                    "  zcloud-storage:lvm: [{ name: local-fast, hosts: { node1: [/dev/sdb] } }]",
                ].join("\n"),
            }),
            "stacks/Pulumi.prod.yaml",
        );
        assert.deepEqual(r.issues, []);
        assert.deepEqual(r.files, ["inventory.yaml"]);
        assert.deepEqual(r.values, {
            "kubernetes:context": "prod",
            "zcloud-storage:ssh": { user: "zcloud", privateKey: "[secret]", hostKeys: { node1: "ssh-ed25519 AAAA" } },
            "zcloud-storage:nodes": { node1: { address: "10.0.0.11" } },
            "zcloud-storage:lvm": [{ name: "local-fast", hosts: { node1: ["/dev/sdb"] } }],
        });
    });

    test("values without configFiles come back as they are (the same object)", () => {
        const values = { "zcloud-storage:nodes": {} };
        assert.equal(expandConfigFiles(values, files({})).values, values);
    });

    test("the stack's own values are not changed in place", () => {
        const ssh = { user: "root" };
        expandConfigFiles({ [configFilesKey]: ["a.yaml"], "zcloud-storage:ssh": ssh }, files({ "a.yaml": "config:\n  zcloud-storage:ssh: { port: 2222 }\n" }));
        assert.deepEqual(ssh, { user: "root" });
    });

    test("a value set twice is refused, naming both places: stack and file, two files, a list, an entry inside a whole map", () => {
        const r = expandConfigFiles(
            {
                [configFilesKey]: ["a.yaml", "b.yaml"],
                "zcloud-storage:nodes": { node1: { address: "10.0.0.11" } },
                "zcloud-storage:lvm": [],
            },
            files({
                "a.yaml": "config:\n  zcloud-storage:nodes:\n    node1: { address: 10.0.0.99 }\n    node2: { address: 10.0.0.12 }\n  zcloud-storage:lvm: []\n",
                "b.yaml": "config:\n  zcloud-storage:nodes:\n    node2: { address: 10.0.0.13, port: 2222 }\n",
            }),
            "stacks/Pulumi.prod.yaml",
        );
        assert.deepEqual(issues(r), [
            "zcloud-storage:nodes.node1.address: is set in stacks/Pulumi.prod.yaml and again in a.yaml; a config file adds keys, it does not override them: keep the value in one place",
            "zcloud-storage:lvm: is set in stacks/Pulumi.prod.yaml and again in a.yaml; a config file adds keys, it does not override them: keep the value in one place",
            "zcloud-storage:nodes.node2.address: is set in a.yaml and again in b.yaml; a config file adds keys, it does not override them: keep the value in one place",
        ]);
    });

    test("property: however a config's keys and map entries are spread over the stack file and its files, the merge is the config", () => {
        const leaf = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }));
        const tree = fc.letrec((tie) => ({
            node: fc.oneof({ depthSize: "small" }, leaf, tie("map")),
            map: fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9.-]{0,6}$/), tie("node"), { maxKeys: 4, noNullPrototype: true }),
        })).map as fc.Arbitrary<Record<string, unknown>>;
        fc.assert(
            fc.property(fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), tree, { minKeys: 1, maxKeys: 4, noNullPrototype: true }), fc.infiniteStream(fc.nat(2)), (config, choices) => {
                const full = Object.fromEntries(Object.entries(config).map(([k, v]) => [`zcloud-storage:${k}`, v]));
                // Each leaf goes to the stack (0) or one of two files (1, 2); maps are split entry by entry.
                const parts: Array<Record<string, unknown>> = [{}, {}, {}];
                const place = (value: unknown, at: string[]) => {
                    if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0) {
                        for (const [k, v] of Object.entries(value)) place(v, [...at, k]);
                        return;
                    }
                    let target = parts[choices.next().value as number];
                    for (const k of at.slice(0, -1)) target = (target[k] ??= {}) as Record<string, unknown>;
                    target[at[at.length - 1]] = value;
                };
                for (const [k, v] of Object.entries(full)) place(v, [k]);
                // A file holds at least one key: an empty config: map is refused.
                const dump = (p: Record<string, unknown>, n: number) => yaml.dump({ config: { ...p, [`zcloud-storage:unused${n}`]: "x" } });
                const r = expandConfigFiles({ ...parts[0], [configFilesKey]: ["one.yaml", "two.yaml"] }, files({ "one.yaml": dump(parts[1], 1), "two.yaml": dump(parts[2], 2) }));
                assert.deepEqual(issues(r), []);
                const { ["zcloud-storage:unused1"]: _1, ["zcloud-storage:unused2"]: _2, ...merged } = r.values;
                assert.deepEqual(merged, full);
            }),
            { numRuns: 200 },
        );
    });
});

describe("configFiles: refusals", () => {
    test("the list: not a list, absolute, out of the stack's directory, not YAML, listed twice, too many", () => {
        const r = expandConfigFiles({ [configFilesKey]: ["/etc/inv.yaml", "../other/inv.yaml", "inv.json", "a/../inv.yaml", "./inv.yaml", 7, "C:\\inv.yaml"] }, files({ "inv.yaml": "config:\n  nodes: {}\n" }));
        assert.deepEqual(issues(r), [
            `zcloud-storage:configFiles[0]: "/etc/inv.yaml" must be relative to the stack file's directory (with / between folders), so the stack reads the same file on every machine`,
            `zcloud-storage:configFiles[1]: "../other/inv.yaml" leads out of the stack file's directory; keep a stack's config files beside it (or in a folder below it), where its reviewers find them`,
            `zcloud-storage:configFiles[2]: "inv.json" must name a .yaml or .yml file`,
            `zcloud-storage:configFiles[4]: lists "./inv.yaml" again (as zcloud-storage:configFiles[3]); list each file once`,
            "zcloud-storage:configFiles[5]: must be the path of a YAML file, relative to the stack file's directory",
            `zcloud-storage:configFiles[6]: "C:\\\\inv.yaml" must be relative to the stack file's directory (with / between folders), so the stack reads the same file on every machine`,
        ]);
        assert.deepEqual(issues(expandConfigFiles({ [configFilesKey]: "inv.yaml" }, files({}))), [
            "zcloud-storage:configFiles: must be a list of YAML files (paths relative to the stack file's directory)",
        ]);
        const many = Array.from({ length: maxConfigFiles + 1 }, (_, i) => `f${i}.yaml`);
        assert.equal(issues(expandConfigFiles({ [configFilesKey]: many }, () => "config:\n  nodes: {}\n"))[0], `zcloud-storage:configFiles: lists 65 files; a stack lists at most ${maxConfigFiles}`);
    });

    test("a file: missing, not YAML, not a config: map, another namespace, nested configFiles, a secret, infinity, two spellings of a key", () => {
        const list = ["missing.yaml", "bad.yaml", "plain.yaml", "extra.yaml", "kube.yaml", "nested.yaml", "secret.yaml", "inf.yaml", "twice.yaml", "empty.yaml"];
        const r = expandConfigFiles(
            { [configFilesKey]: list },
            files({
                "bad.yaml": "config: [unclosed\n",
                "plain.yaml": "nodes: {}\n",
                "extra.yaml": "config: { nodes: {} }\nencryptionsalt: v1:abc\n",
                "kube.yaml": "config:\n  kubernetes:context: other\n",
                "nested.yaml": "config:\n  zcloud-storage:configFiles: [more.yaml]\n",
                "secret.yaml": "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:abc }\n",
                "inf.yaml": "config:\n  zcloud-storage:ssh: { port: .inf }\n",
                "twice.yaml": "config:\n  zcloud-storage:nodes: {}\n  nodes: {}\n",
                "empty.yaml": "config: {}\n",
            }),
        );
        const got = issues(r);
        assert.deepEqual(got.filter((m) => !m.startsWith("zcloud-storage:configFiles[1]:")), [
            "zcloud-storage:configFiles[0]: missing.yaml does not exist (paths are relative to the stack file's directory)",
            "zcloud-storage:configFiles[2]: plain.yaml must hold one config: map, as a stack file does (config:\\n  zcloud-storage:nodes: ...)",
            "zcloud-storage:configFiles[3]: extra.yaml must hold one config: map, as a stack file does (config:\\n  zcloud-storage:nodes: ...)",
            "zcloud-storage:configFiles[4]: kube.yaml: kubernetes:context is not a zcloud-storage: key; provider and engine keys (kubernetes:, pulumi:) stay in the stack file, where Pulumi reads them",
            "zcloud-storage:configFiles[5]: nested.yaml: a config file cannot list more config files; list every file in the stack file",
            "zcloud-storage:configFiles[6]: secret.yaml: zcloud-storage:ssh.privateKey is a secure: value; secrets stay in the stack file, encrypted by the stack's secrets provider (pulumi config set --secret)",
            "zcloud-storage:configFiles[7]: inf.yaml: zcloud-storage:ssh.port is not a finite number (Pulumi config is JSON, which has no infinity or NaN)",
            "zcloud-storage:configFiles[8]: twice.yaml: nodes is the same key as zcloud-storage:nodes (Pulumi reads both as zcloud-storage:nodes), so one value would silently replace the other; keep only one of them",
            "zcloud-storage:configFiles[9]: empty.yaml has an empty config: map; a plan without the keys it held would delete what they declared (take it out of configFiles to drop it on purpose)",
        ]);
        assert.match(got.find((m) => m.startsWith("zcloud-storage:configFiles[1]:")) ?? "", /^zcloud-storage:configFiles\[1\]: bad\.yaml is not valid YAML: /);
        assert.doesNotMatch(got.join("\n"), /v1:abc/, "a ciphertext is not echoed");
    });
});

describe("configFiles: from disk", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-config-files-"));
    const write = (file: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        fs.writeFileSync(path.join(dir, file), text);
    };
    write("Pulumi.fleet.yaml", "config:\n  zcloud-storage:configFiles: [fleet/nodes.yaml]\n  zcloud-storage:ssh: { user: root, privateKey: { secure: v1:abc } }\n");
    write("fleet/nodes.yaml", "config:\n  zcloud-storage:nodes:\n    node1: { address: 10.0.0.11 }\n");
    write("real.yaml", "config:\n  nodes: {}\n");
    fs.symlinkSync("real.yaml", path.join(dir, "link.yaml"));
    fs.mkdirSync(path.join(dir, "dir.yaml"));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    test("loadStackFile merges the files from the stack file's directory; the config-size check counts the stack file alone", () => {
        const { config } = loadStackFile(path.join(dir, "Pulumi.fleet.yaml"));
        assert.deepEqual(config.values["zcloud-storage:nodes"], { node1: { address: "10.0.0.11" } });
        assert.equal(Object.hasOwn(config.values, configFilesKey), false);
        assert.deepEqual(config.configFiles, ["fleet/nodes.yaml"]);
        assert.deepEqual(Object.keys(config.passedValues ?? {}), [configFilesKey, "zcloud-storage:ssh"]);
        assert.deepEqual(config.securePaths, ["zcloud-storage:ssh.privateKey"]);
        const size = checkStackFileConfigSize({ file: path.join(dir, "Pulumi.fleet.yaml"), config });
        assert.equal(size.bytes, Buffer.byteLength(JSON.stringify({ [configFilesKey]: '["fleet/nodes.yaml"]', "zcloud-storage:ssh": JSON.stringify(config.values["zcloud-storage:ssh"]) })));
    });

    test("discover and status read the stack's config files too (the nodes they reach come from the file)", () => {
        write("Pulumi.day2.yaml", "config:\n  zcloud-storage:configFiles: [day2/inventory.yaml]\n  zcloud-storage:ssh: { user: root, agent: true }\n");
        write("day2/inventory.yaml", "config:\n  zcloud-storage:nodes:\n    node1: { address: 10.0.0.11 }\n  zcloud-storage:lvm: [{ name: local-fast, hosts: { node1: [/dev/disk/by-id/wwn-0x5000c500a1b2c3d4] } }]\n");
        const { model } = loadDay2Stack(path.join(dir, "Pulumi.day2.yaml"));
        assert.deepEqual(Object.keys(model.nodes), ["node1"]);
        assert.deepEqual(model.lvm.map((s) => [s.name, { ...s.hosts }]), [["local-fast", { node1: ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"] }]]);
    });

    test("a folder on the way that is a symbolic link (out of the stack's directory), a FIFO, a device: refused by name, nothing read, nothing blocks", () => {
        const outside = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-config-outside-"));
        try {
            fs.writeFileSync(path.join(outside, "inv.yaml"), "config:\n  zcloud-storage:nodes:\n    evil: { address: 10.6.6.6 }\n");
            fs.symlinkSync(outside, path.join(dir, "inv"));
            fs.mkdirSync(path.join(dir, "real"));
            fs.symlinkSync(outside, path.join(dir, "real", "deeper"));
            execFileSync("mkfifo", [path.join(dir, "pipe.yaml")]);
            const asRoot = process.getuid?.() === 0;
            if (asRoot) execFileSync("mknod", [path.join(dir, "zero.yaml"), "c", "1", "5"]);
            const started = Date.now();
            const got = issues(expandConfigFiles({ [configFilesKey]: ["inv/inv.yaml", "real/deeper/inv.yaml", "pipe.yaml", ...(asRoot ? ["zero.yaml"] : [])] }, configFileReader(dir)));
            assert.ok(Date.now() - started < 2000, "nothing blocked");
            assert.deepEqual(got, [
                "zcloud-storage:configFiles[0]: inv/inv.yaml is reached through inv, a symbolic link; keep config files in real folders beside the stack file, so that what reviewers read is what the stack uses",
                "zcloud-storage:configFiles[1]: real/deeper/inv.yaml is reached through real/deeper, a symbolic link; keep config files in real folders beside the stack file, so that what reviewers read is what the stack uses",
                "zcloud-storage:configFiles[2]: pipe.yaml is not a regular file (a FIFO, device or socket); list YAML files",
                ...(asRoot ? ["zcloud-storage:configFiles[3]: zero.yaml is not a regular file (a FIFO, device or socket); list YAML files"] : []),
            ]);
        } finally {
            fs.rmSync(outside, { recursive: true, force: true });
        }
    });

    test("a stack file that is a FIFO is refused without blocking", () => {
        const fifo = path.join(dir, "Pulumi.fifo.yaml");
        execFileSync("mkfifo", [fifo]);
        assert.throws(() => readStackArg(fifo), { message: `stack file ${fifo}: not a file` });
        assert.throws(() => readNoFollow(fifo), { message: `${fifo} is not a regular file` });
    });

    test("a symbolic link or a directory is refused by name; loadStackFile lists every problem", () => {
        const read = configFileReader(dir);
        assert.deepEqual(issues(expandConfigFiles({ [configFilesKey]: ["link.yaml", "dir.yaml", "real.yaml"] }, read)), [
            "zcloud-storage:configFiles[0]: link.yaml is a symbolic link; list the file itself, so that what reviewers read is what the stack uses",
            "zcloud-storage:configFiles[1]: dir.yaml is a directory; list YAML files",
        ]);
        write("Pulumi.broken.yaml", "config:\n  zcloud-storage:configFiles: [link.yaml, none.yaml]\n");
        assert.throws(() => loadStackFile(path.join(dir, "Pulumi.broken.yaml")), {
            message: [
                `${path.relative(process.cwd(), path.join(dir, "Pulumi.broken.yaml"))}: 2 error(s) in the config files it lists; nothing was planned:`,
                "  - zcloud-storage:configFiles[0]: link.yaml is a symbolic link; list the file itself, so that what reviewers read is what the stack uses",
                "  - zcloud-storage:configFiles[1]: none.yaml does not exist (paths are relative to the stack file's directory)",
            ].join("\n"),
        });
    });
});
