// Hardening, round 2 (issue 19), through `npm run plan` and the real program under the mock
// runtime: refused before anything is planned, with the message docs/validation.md shows.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { baseConfig } from "../helpers/plan";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-round2-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeStack(name: string, text: string): string {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, text);
    return file;
}

const lvm = [{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }];
const stack = (config: Record<string, unknown>) => yaml.dump({ config });
const good = writeStack("good", stack({ "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:lvm": lvm }));

describe("keys that Pulumi folds into one", () => {
    test("a folded twin that would empty a storage list fails the PR plan instead of planning its deletion", async () => {
        const twin = writeStack("twin", stack({ "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:lvm": lvm, "zcloud-storage:config:lvm": [] }));
        const r = await plan(twin, "--diff", good);
        assert.equal(r.code, 2, r.stdout); // a stack file Pulumi cannot read as written, like a duplicate YAML key
        assert.equal(r.stdout, "", "nothing planned, no deletion shown");
        assert.match(
            r.stderr,
            /Pulumi\.twin\.yaml: zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm \(Pulumi reads both as zcloud-storage:lvm\), so one value would silently replace the other; keep only one of them\n/,
        );
    });

    test("a clear private key under the folded twin of a secure: one fails the plan without echoing it", async () => {
        const twin = writeStack(
            "keytwin",
            stack({ "zcloud-storage:ssh": baseConfig.ssh, "ssh": { privateKey: "clear-key-text" }, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:lvm": lvm }),
        );
        const r = await plan(twin);
        assert.equal(r.code, 2, r.stdout); // a stack file Pulumi cannot read as written, like a duplicate YAML key
        assert.match(r.stderr, /Pulumi\.keytwin\.yaml: ssh: is the same key as zcloud-storage:ssh \(Pulumi reads both as zcloud-storage:ssh\)/);
        assert.doesNotMatch(r.stdout + r.stderr, /clear-key-text/);
    });
});
