// Hardening, round 2 (issue 19), through `npm run plan` and the real program under the mock
// runtime: refused before anything is planned, with the message docs/validation.md shows.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import { baseConfig } from "../helpers/plan";
import { plan } from "../helpers/planCli";
import { oneLvm, scratchStacks, stackYaml } from "../helpers/stackFiles";

const { dir, writeStack, good } = scratchStacks("zcloud-round2-");
const lvm = oneLvm;
const stack = stackYaml;

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

describe("secure: anywhere stays secret, or is refused where the value must be plain", () => {
    const iscsi = (chap: Record<string, unknown>) => [
        { name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", chap, initiators: ["node2"] },
    ];
    const full = {
        "zcloud-storage:ssh": { ...baseConfig.ssh, bastion: { host: "jump.example", privateKey: { secure: "v1:bastion" } } },
        "zcloud-storage:nodes": baseConfig.nodes,
        "zcloud-storage:lvm": lvm,
        "zcloud-storage:cephfs": [{ name: "shared", hosts: { node3: ["/dev/disk/by-id/wwn-0x5003"] } }],
        "zcloud-storage:iscsi": iscsi({ username: "k8s", password: { secure: "v1:chap" } }),
        "kubernetes:kubeconfig": { secure: "v1:kubeconfig" },
    };

    test("every secure: value a stack may hold stays out of --json, --out and command lines", async () => {
        const out = path.join(dir, "out-secure");
        const r = await plan(writeStack("secure", stack(full)), "--json", "--out", out);
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stdout, /offline-secret/);
        const written = fs.readdirSync(out, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
        assert.ok(written.length > 10, "manifests and node commands written");
        for (const e of written) {
            assert.doesNotMatch(fs.readFileSync(path.join(e.parentPath, e.name), "utf8"), /offline-secret/, e.name);
        }
        // The secret kubeconfig travels in the drain's secret environment, never in its arguments.
        const drain = (JSON.parse(r.stdout).resources as Array<{ name: string; inputs: { delete: string; environment: unknown } }>).find((x) => x.name === "shared-node3-osd-wwn-0x5003-drain");
        assert.ok(drain);
        assert.match(drain.inputs.delete, / --kubeconfig-from-env$/);
        assert.equal(drain.inputs.environment, "[secret]");
    });

    test("a secure CHAP user name fails the plan with the reason", async () => {
        const r = await plan(writeStack("chapuser", stack({ ...full, "zcloud-storage:iscsi": iscsi({ username: { secure: "v1:user" }, password: { secure: "v1:chap" } }) })));
        assert.equal(r.code, 1, r.stdout);
        assert.equal(
            r.stderr.slice(r.stderr.indexOf(": ") + 2),
            [
                "zcloud-storage config has 1 error; nothing was changed:",
                "  - iscsi[0].chap.username: is a secure: value, but a CHAP user name cannot stay secret: the login command carries it in its arguments (state, preview, a node's ps) and writes it into the node's iSCSI record; it is not a credential, so set it in clear (only chap.password is a secret)",
                "",
            ].join("\n"),
        );
    });
});

describe("messages: number-like strings, infinities, merge keys", () => {
    test('a quoted "1234" namespace and CHAP user name plan as strings', async () => {
        const file = writeStack(
            "digits",
            [
                "config:",
                '  zcloud-storage:namespace: "1234"',
                "  zcloud-storage:ssh: { privateKey: { secure: v1:abc } }",
                "  zcloud-storage:nodes: { node1: { address: 10.0.0.11 } }",
                '  zcloud-storage:iscsi: [{ name: san, portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", chap: { username: "1234", password: { secure: v1:pw } }, initiators: [node1] }]',
                "",
            ].join("\n"),
        );
        const packConfig = path.join(dir, "pack-1234.json");
        fs.writeFileSync(packConfig, JSON.stringify({ "storage-privileged-namespace": { namespace: "1234" } }));
        const r = await plan(file, "--json", "--policy-pack-config", packConfig);
        assert.equal(r.code, 0, r.stderr);
        const resources = JSON.parse(r.stdout).resources as Array<{ name: string; type: string; inputs: Record<string, any> }>;
        assert.equal(resources.find((x) => x.type === "kubernetes:core/v1:Namespace")?.inputs.metadata.name, "1234");
        assert.match(resources.find((x) => x.name === "san-node1-login")?.inputs.create, / --chap-user 1234$/);
    });

    test("a merge key fails the plan with the reason", async () => {
        const r = await plan(writeStack("merge", "x: &wipe { wipe: true }\nconfig:\n  zcloud-storage:lvm:\n    - name: a\n      <<: *wipe\n"));
        assert.equal(r.code, 2);
        assert.match(r.stderr, /Pulumi\.merge\.yaml: a YAML merge key \(<<\) at config\.zcloud-storage:lvm\[0\] is refused: it pulls keys in from an anchor, so a reviewer reading or grepping the file does not see them \(a wipe: true, say\); write the keys out\n/);
    });

    test(".inf fails the plan with a correct message", async () => {
        const r = await plan(writeStack("inf", "config:\n  zcloud-storage:iscsi: [{ name: san, lun: .inf }]\n"));
        assert.equal(r.code, 2);
        assert.match(r.stderr, /Pulumi\.inf\.yaml: zcloud-storage:iscsi\[0\]\.lun: \.inf \(infinity\) is not a number a config value can hold/);
    });
});

describe("one shared LUN claimed twice", () => {
    test("a second iscsi storage with wipe: true on the first one's LUN fails the PR plan", async () => {
        const san = (name: string, node: string, extra: Record<string, unknown> = {}) => ({ name, portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", lun: 0, initiators: [node], ...extra });
        const file = writeStack("lun", stack({ "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:iscsi": [san("san-a", "node1"), san("san-b", "node2", { wipe: true })] }));
        const r = await plan(file, "--diff", good);
        assert.equal(r.code, 1, r.stdout);
        assert.equal(r.stdout, "");
        assert.equal(
            r.stderr.slice(r.stderr.indexOf(": ") + 2),
            [
                "zcloud-storage config has 1 error; nothing was changed:",
                "  - iscsi[1].lun: LUN 0 of iqn.2003-01.org.linux-iscsi.san:sn.1234 is already the LUN of iscsi[0] (san-a); two storages on one LUN would each create, adopt or wipe its shared volume group, so give each storage its own LUN",
                "",
            ].join("\n"),
        );
    });
});
