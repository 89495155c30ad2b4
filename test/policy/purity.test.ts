// evaluatePolicies must not need policy/index.ts: constructing the PolicyPack starts a gRPC server
// and blocks the process. The pure module loads neither @pulumi/policy, gRPC nor the Pulumi SDK.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const root = path.join(__dirname, "../..");

describe("policy/policies.ts is pure", () => {
    it("evaluates in a fresh process without loading @pulumi/policy, gRPC or @pulumi/pulumi, and exits", () => {
        const script = `
            const { evaluatePolicies } = require("./policy/policies.ts");
            const np = (type, storage) => ({
                type: "command:local:Command", name: storage + "-node3-label",
                urn: "urn:pulumi:dev::zcloud-storage::command:local:Command::" + storage + "-node3-label",
                props: { stdin: JSON.stringify({ kind: "Node", metadata: { name: "node3", labels: { ["storage.zcloud.io/" + type]: storage } } }) },
            });
            const violations = evaluatePolicies([np("lvm", "local-fast"), np("cephfs", "shared-fs")]);
            const loaded = Object.keys(require.cache).filter((f) => /node_modules[\\\\/](@pulumi|@grpc|google-protobuf)[\\\\/]/.test(f));
            process.stdout.write(JSON.stringify({ policies: violations.map((v) => v.policy), loaded }));
        `;
        const out = execFileSync(process.execPath, ["--import", "tsx", "-e", script], { cwd: root, timeout: 60_000, encoding: "utf8" });
        assert.deepEqual(JSON.parse(out), { policies: ["storage-node-exclusive"], loaded: [] });
    });

    it("has no value import of @pulumi/policy outside policy/index.ts", () => {
        const dir = path.join(root, "policy");
        const files = [
            ...fs.readdirSync(dir).filter((f) => f.endsWith(".ts")),
            ...fs.readdirSync(path.join(dir, "rules")).map((f) => `rules/${f}`),
        ].filter((f) => f !== "index.ts");
        for (const file of files) {
            const text = fs.readFileSync(path.join(dir, file), "utf8");
            const valueImports = text.match(/^import\s+(?!type\b)[^;]*from\s+["']@pulumi\/(policy|pulumi)[^"']*["']/gm) ?? [];
            assert.deepEqual(valueImports, [], file);
            assert.doesNotMatch(text, /new\s+PolicyPack\s*\(/, file);
        }
    });
});
