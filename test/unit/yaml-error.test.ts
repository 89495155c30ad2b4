// A YAML error in a stack file shows where it is, never a value: the lines around an error can
// hold a `secure:` ciphertext or a key pasted in clear, and CI posts the plan's output publicly.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { lineStructure, loadBoundedYaml } from "../../components/config/yaml";

const messageOf = (text: string) => {
    try {
        loadBoundedYaml(text, "s.yaml");
    } catch (e) {
        return (e as Error).message;
    }
    throw new Error("parsed");
};

describe("YAML errors quote the stack file's structure only", () => {
    test("a clear private key above a bad indentation: keys and line numbers, no key material", () => {
        const text = [
            "config:",
            "  zcloud-storage:ssh:",
            "    privateKey: |",
            "      -----BEGIN OPENSSH PRIVATE KEY-----",
            "      b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
            "    user: root",
            "   port: 22",
            "",
        ].join("\n");
        assert.equal(
            messageOf(text),
            [
                "s.yaml is not valid YAML: bad indentation of a mapping entry (7:4); values are not shown",
                "",
                " 4 |       …",
                " 5 |       …",
                " 6 |     user: …",
                " 7 |    port: …",
                "--------^",
            ].join("\n"),
        );
    });

    test("a secure: value and a commented-out password next to an unclosed quote", () => {
        const text = 'config:\n  zcloud-storage:iscsi:\n    - name: san\n      chap: { username: k8s, password: { secure: v1:c2VjcmV0Y2lwaGVy } }\n      # password: hunter2\n      iqn: "iqn.2003-01.org.x\n';
        const message = messageOf(text);
        assert.equal(
            message,
            [
                "s.yaml is not valid YAML: unexpected end of the stream within a double quoted scalar (7:1); values are not shown",
                "",
                " 4 |       chap: …",
                " 5 |       # …",
                " 6 |       iqn: …",
                " 7 |",
                "-----^",
            ].join("\n"),
        );
        assert.doesNotMatch(message, /v1:|hunter2|k8s|iqn\.2003/);
    });

    test("lineStructure keeps indentation, list dashes and keys (quoted ones too)", () => {
        assert.equal(lineStructure("  - name: local-fast"), "  - name: …");
        assert.equal(lineStructure("  zcloud-storage:nodes:"), "  zcloud-storage:nodes:");
        assert.equal(lineStructure('    "node1": { address: 10.0.0.1 }'), '    "node1": …');
        assert.equal(lineStructure("    - /dev/sdb"), "    - …");
        assert.equal(lineStructure("-----BEGIN OPENSSH PRIVATE KEY-----"), "…");
        assert.equal(lineStructure("   "), "");
        assert.equal(lineStructure("  # a comment"), "  # …");
    });
});
