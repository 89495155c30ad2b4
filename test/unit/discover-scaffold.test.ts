// `npm run discover -- <stack> --write-stack FILE`: the pure writer of the first stack file
// (tools/discover/scaffold.ts). The file it writes validates as the program validates a stack,
// keeps what the input says, pins the keys the nodes showed, and proposes the clean devices only
// as a comment; the target checks refuse to overwrite anything.
import { after, describe, test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { parseFullConfig } from "../../components/config/namespaces";
import { formatIssue } from "../../components/config/errors";
import { parseStackYaml } from "../../tools/plan/stackFile";
import { keyCommand, keyPlaceholder, proposedName, scaffoldText, secretCommand, withPlaceholders, stackNameOf, writeNewFile, writeTargetProblem } from "../../tools/discover/scaffold";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-scaffold-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const key1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJxHO3r0xPYpaJZajH+yQvWVQ7obmw/1tHu/Kq7qzj5s";
const key2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest2";
const wwn1 = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4";
const wwn2 = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d5";
const nvme = "/dev/disk/by-id/nvme-Samsung_SSD_980_S64DNX0T123456";

const nodesOnly = { "zcloud-storage:nodes": { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12", port: 2222 } } };

/** The written text validated as the program validates a stack file: the model, or the errors. */
function validated(text: string) {
    const cfg = parseStackYaml(text, "first");
    const result = parseFullConfig(cfg.values, { secretKeys: new Set(cfg.secretKeys), securePaths: cfg.securePaths });
    assert.deepEqual(result.errors.map(formatIssue), []);
    assert.ok(result.model);
    return result.model;
}

/** The commented proposal made live: every `  # ` line from `  # zcloud-storage:lvm:` on. */
function uncommented(text: string): string {
    const lines = text.split("\n");
    const from = lines.indexOf("  # zcloud-storage:lvm:");
    assert.ok(from > 0, text);
    return [...lines.slice(0, from), ...lines.slice(from).map((l) => l.replace(/^ {2}# /, "  "))].join("\n");
}

describe("a stack with nodes only", () => {
    const text = scaffoldText({
        config: nodesOnly,
        nodes: { node1: { learnedHostKey: key1, proposed: [{ name: wwn1 }, { name: wwn2 }] }, node2: { learnedHostKey: key2, proposed: [{ name: nvme }] } },
        source: "stacks/Pulumi.first.yaml",
        target: "stacks/Pulumi.prod.yaml",
    });

    test("pins both keys, sets the placeholder key, keeps the nodes as written, proposes nothing live", () => {
        const model = validated(text);
        assert.deepEqual({ ...model.ssh!.hostKeys }, { node1: key1, node2: key2 });
        assert.deepEqual(model.lvm, []);
        assert.deepEqual(model.cephfs, []);
        const doc = yaml.load(text) as { config: Record<string, Record<string, unknown>> };
        assert.deepEqual(Object.keys(doc.config), ["zcloud-storage:ssh", "zcloud-storage:nodes"]);
        assert.deepEqual(doc.config["zcloud-storage:ssh"], { user: "root", privateKey: { secure: keyPlaceholder }, hostKeys: { node1: key1, node2: key2 } });
        assert.deepEqual(doc.config["zcloud-storage:nodes"], nodesOnly["zcloud-storage:nodes"]);
    });

    test("the command that sets the key stands right above the placeholder, for the target's stack", () => {
        const lines = text.split("\n");
        const at = lines.indexOf("    privateKey:");
        assert.deepEqual(lines.slice(at - 2, at + 2), [
            "    # A placeholder: pulumi cannot decrypt it. Set the key the nodes accept before preview:",
            "    #   pulumi config set -s prod --secret --path ssh.privateKey < ~/.ssh/zcloud_ed25519",
            "    privateKey:",
            `      secure: ${keyPlaceholder}`,
        ]);
        assert.equal(lines[0], "# Written by npm run discover -- stacks/Pulumi.first.yaml --write-stack stacks/Pulumi.prod.yaml");
    });

    test("uncommented, the proposal is one default lvm storage over exactly the clean devices", () => {
        const model = validated(uncommented(text));
        assert.equal(model.lvm.length, 1);
        assert.equal(model.lvm[0].name, "local");
        assert.equal(model.lvm[0].default, true);
        assert.deepEqual({ ...model.lvm[0].hosts }, { node1: [wwn1, wwn2], node2: [nvme] });
    });
});

test("what the input says is kept: its pins, its storages, other namespaces; only unpinned nodes get the learned key", () => {
    const config = {
        "kubernetes:context": "prod-admin",
        "zcloud-storage:ssh": { user: "ops", port: 2200, privateKey: { secure: "v1:realciphertext" }, hostKeys: { node1: key1 } },
        ...nodesOnly,
        "zcloud-storage:lvm": [{ name: "fast", hosts: { node1: [wwn1] } }],
        "zcloud-storage:iscsi": [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 1, chap: { username: "k8s", password: { secure: "v1:chapciphertext" } }, initiators: ["node1"] }],
    };
    // node1's key as learned would differ: the pin in the file wins (discover checked it strictly).
    const text = scaffoldText({ config, nodes: { node1: { proposed: [{ name: wwn2 }] }, node2: { learnedHostKey: key2, proposed: [] } }, source: "first", target: "stacks/Pulumi.san.yaml" });
    const doc = yaml.load(text) as { config: Record<string, unknown> };
    assert.deepEqual(Object.keys(doc.config), Object.keys(config));
    assert.deepEqual(doc.config["zcloud-storage:ssh"], { ...config["zcloud-storage:ssh"], privateKey: { secure: keyPlaceholder }, hostKeys: { node1: key1, node2: key2 } });
    assert.deepEqual(doc.config["zcloud-storage:lvm"], config["zcloud-storage:lvm"]);
    assert.equal(doc.config["kubernetes:context"], "prod-admin");
    const model = validated(text);
    assert.deepEqual(model.lvm.map((s) => s.name), ["fast"]);
    assert.deepEqual(model.iscsi.map((s) => s.name), ["san"]);
    assert.doesNotMatch(text, /realciphertext|chapciphertext/, "a ciphertext of another stack is never copied: it would not decrypt there");
    assert.deepEqual(text.split("\n").slice(3, 5), [
        "# Every secure: value of the input is a placeholder here (a ciphertext works only in its own stack); set each:",
        "#   pulumi config set -s san --secret --path 'zcloud-storage:iscsi[0].chap.password' < <file holding it>",
    ]);
});

test("withPlaceholders: every secure value, at its key path", () => {
    assert.deepEqual(withPlaceholders({ a: [{ p: { secure: "v1:x" } }, { q: 1 }], b: { secure: "v1:y" } }, "ns:k"), {
        value: { a: [{ p: { secure: keyPlaceholder } }, { q: 1 }], b: { secure: keyPlaceholder } },
        paths: ["ns:k.a[0].p", "ns:k.b"],
    });
    assert.equal(secretCommand("x.yaml", "zcloud-storage:ssh.privateKey"), "pulumi config set --secret --path ssh.privateKey < ~/.ssh/zcloud_ed25519");
});

test("no clean device: a comment says so, and no commented storage", () => {
    const text = scaffoldText({ config: nodesOnly, nodes: { node1: { learnedHostKey: key1, proposed: [] }, node2: { learnedHostKey: key2, proposed: [] } }, source: "first", target: "Pulumi.x.yaml" });
    assert.ok(text.endsWith("  # discover found no clean device that no storage declares: nothing to propose.\n"), text);
    assert.ok(!text.includes("zcloud-storage:lvm"));
});

test("a by-id name the config refuses is proposed by its kernel name, with the reason", () => {
    const hostile = "/dev/disk/by-id/zc-esc\u001b[31m\u202e";
    assert.deepEqual(proposedName(wwn1, "/dev/sdb"), { name: wwn1 });
    assert.deepEqual(proposedName(hostile, "/dev/sdb"), { name: "/dev/sdb", note: "its by-id name is not a valid device path in a stack; a kernel name can change at reboot, give it a stable link" });
    assert.equal(proposedName("/dev/disk/by-id/a b", "/dev/x y"), undefined);
});

test("a device name with control characters is quoted so that it reads back exactly", () => {
    const hostile = "/dev/disk/by-id/zc-esc\u001b[31m\u202e";
    const text = scaffoldText({ config: nodesOnly, nodes: { node1: { learnedHostKey: key1, proposed: [{ name: hostile }] }, node2: { learnedHostKey: key2, proposed: [] } }, source: "first", target: "x.yaml" });
    assert.doesNotMatch(text, /[\u001b\u202e]/);
    const live = yaml.load(uncommented(text)) as { config: { "zcloud-storage:lvm": Array<{ hosts: Record<string, string[]> }> } };
    assert.deepEqual(live.config["zcloud-storage:lvm"][0].hosts, { node1: [hostile] });
});

test("stack name and key command from the target's file name", () => {
    assert.equal(stackNameOf("stacks/Pulumi.prod-a.yaml"), "prod-a");
    assert.equal(stackNameOf("stacks/prod.yaml"), undefined);
    assert.equal(stackNameOf("Pulumi.Prod.yaml"), undefined);
    assert.equal(keyCommand("stacks/Pulumi.edge.yaml"), "pulumi config set -s edge --secret --path ssh.privateKey < ~/.ssh/zcloud_ed25519");
});

describe("the target file", () => {
    test("a new file in an existing directory is fine; written once, never twice", () => {
        const file = path.join(dir, "Pulumi.new.yaml");
        assert.equal(writeTargetProblem(file), undefined);
        writeNewFile(file, "config: {}\n");
        assert.equal(writeTargetProblem(file), `--write-stack ${file}: exists; discover never overwrites a stack file (remove it or name another file)`);
        assert.throws(() => writeNewFile(file, "other\n"), { code: "EEXIST" });
        assert.equal(fs.readFileSync(file, "utf8"), "config: {}\n");
    });

    test("a symbolic link, even a dangling one, is refused and its target never written", () => {
        const link = path.join(dir, "Pulumi.link.yaml");
        const target = path.join(dir, "elsewhere.yaml");
        fs.symlinkSync(target, link);
        assert.equal(writeTargetProblem(link), `--write-stack ${link}: is a symbolic link; discover never overwrites a stack file (remove it or name another file)`);
        assert.throws(() => writeNewFile(link, "x\n"), { code: "EEXIST" });
        assert.equal(fs.existsSync(target), false);
    });

    test("a missing directory is named", () => {
        const file = path.join(dir, "nope", "Pulumi.a.yaml");
        assert.equal(writeTargetProblem(file), `--write-stack ${file}: ${path.join(dir, "nope")} is not a directory`);
    });
});
