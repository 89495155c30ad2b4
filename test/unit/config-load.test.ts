// The real program's config loading (components/config/load.ts) under the CLI's conditions: all
// keys from the runtime, which leaves are secure: from the stack file in the project directory.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";

const root = path.join(__dirname, "../..");
const project = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-load-"));
after(() => fs.rmSync(project, { recursive: true, force: true }));

const config = {
    "zcloud-storage:ssh": { privateKey: "decrypted-node-key", bastion: { host: "jump.example", privateKey: "clear-bastion-key" } },
    "zcloud-storage:nodes": { node1: { address: "10.0.0.11" } },
    "zcloud-storage:lvm": [{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }],
};

/** Runs loadStackConfig in a fresh process (the SDK's state is global) as stack `site` in `project`. */
function load(): string {
    const script = `
        const pulumi = require("@pulumi/pulumi");
        const config = ${JSON.stringify(Object.fromEntries(Object.entries(config).map(([k, v]) => [k, JSON.stringify(v)])))};
        pulumi.runtime.setAllConfig(config, ["zcloud-storage:ssh"]);
        pulumi.runtime.setMocks({ newResource: (a) => ({ id: a.name, state: a.inputs }), call: (a) => a.inputs }, "zcloud-storage", "site", false).then(() => {
            process.chdir(${JSON.stringify(project)});
            const { loadStackConfig } = require(${JSON.stringify(path.join(root, "components/config/load.ts"))});
            try { loadStackConfig(); process.stdout.write("loaded"); } catch (e) { process.stdout.write(e.message); }
        });
    `;
    return execFileSync(process.execPath, ["--import", "tsx", "-e", script], { cwd: root, encoding: "utf8", timeout: 60_000 });
}

describe("loadStackConfig reads which leaves are secure: from the stack file", () => {
    test("a clear bastion key next to a secure: node key is refused, without quoting either", () => {
        fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: zcloud-storage\nruntime: nodejs\nstackConfigDir: stacks\n");
        fs.mkdirSync(path.join(project, "stacks"), { recursive: true });
        fs.writeFileSync(
            path.join(project, "stacks", "Pulumi.site.yaml"),
            "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:abc }\n    bastion: { host: jump.example, privateKey: clear-bastion-key }\n",
        );
        const out = load();
        assert.equal(
            out,
            [
                "zcloud-storage config has 1 error; nothing was changed:",
                "  - ssh.bastion.privateKey: is stored in clear text; set it as a secret: pulumi config set -s site --secret --path ssh.bastion.privateKey (read the value from a file or stdin, not the command line)",
            ].join("\n"),
        );
    });

    test("without a stack file the check falls back to the runtime's secret keys", () => {
        fs.rmSync(path.join(project, "stacks"), { recursive: true, force: true });
        assert.equal(load(), "loaded");
    });
});
