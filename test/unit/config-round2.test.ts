// Hardening, round 2 (issue 19), the config contract's part: each hostile or careless input is
// refused with the exact message docs/validation.md shows.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { canonicalConfigKey, foldedKeyCollisions, parseFullConfig } from "../../components/config/namespaces";
import { parseStackConfig } from "../../components/config/parse";
import { readStackDocument } from "../../components/config/stackDocument";
import { drainKubeTarget } from "../../components/k8s/kubeTarget";
import { parseConfigValue } from "../../components/config/load";
import { loadBoundedYaml } from "../../components/config/yaml";

const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" } };
const ssh = { privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----abc", hostKeys: { node1: hostKey, node2: hostKey } };

describe("keys that Pulumi folds into one", () => {
    test("keys are read as the CLI and SDK read them", () => {
        assert.equal(canonicalConfigKey("zcloud-storage:config:lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("kubernetes:config:context"), "kubernetes:context");
        assert.equal(canonicalConfigKey("zcloud-storage:lvm"), "zcloud-storage:lvm");
        assert.equal(canonicalConfigKey("config:lvm"), "config:lvm", "a namespace named config is not the legacy form");
    });

    test("a folded twin of a storage list in a stack file is refused, naming both keys", () => {
        const text = [
            "config:",
            "  zcloud-storage:lvm:",
            "    - { name: local-fast, hosts: { node1: [/dev/disk/by-id/wwn-0x5001] } }",
            "  zcloud-storage:config:lvm: []",
            "  iscsi: []",
            "  zcloud-storage:iscsi: []",
            "",
        ].join("\n");
        assert.throws(() => readStackDocument(text, "stacks/Pulumi.x.yaml"), {
            message: [
                "stacks/Pulumi.x.yaml: zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm (Pulumi reads both as zcloud-storage:lvm), so one value would silently replace the other; keep only one of them",
                "stacks/Pulumi.x.yaml: zcloud-storage:iscsi: is the same key as iscsi (Pulumi reads both as zcloud-storage:iscsi), so one value would silently replace the other; keep only one of them",
            ].join("\n"),
        });
    });

    test("a clear private key under the folded twin of a secure: one is refused", () => {
        const text = "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:abc }\n  zcloud-storage:config:ssh:\n    privateKey: clear-key-text\n";
        assert.throws(() => readStackDocument(text, "f.yaml"), {
            message:
                "f.yaml: zcloud-storage:config:ssh: is the same key as zcloud-storage:ssh (Pulumi reads both as zcloud-storage:ssh), so one value would silently replace the other; keep only one of them",
        });
        assert.throws(() => readStackDocument(text, "f.yaml"), (e: Error) => !e.message.includes("clear-key-text"));
    });

    test("a legacy key alone is read under its folded name, secure: paths included", () => {
        const doc = readStackDocument("config:\n  zcloud-storage:config:ssh:\n    privateKey: { secure: v1:abc }\n  nodes: {}\n", "f.yaml");
        assert.deepEqual(Object.keys(doc.values), ["zcloud-storage:ssh", "zcloud-storage:nodes"]);
        assert.deepEqual(doc.securePaths, ["zcloud-storage:ssh.privateKey"]);
    });

    test("the program refuses twins among the keys the language host handed it", () => {
        const all = { "zcloud-storage:nodes": nodes, "zcloud-storage:ssh": ssh, "zcloud-storage:lvm": [] };
        const rawKeys = ["zcloud-storage:nodes", "zcloud-storage:lvm", "zcloud-storage:config:lvm", "zcloud-storage:ssh"];
        assert.deepEqual(parseFullConfig(all, { rawKeys }).errors.map(formatIssue), [
            "zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm (Pulumi reads both as zcloud-storage:lvm), so one value would silently replace the other; keep only one of them",
        ]);
        assert.deepEqual(foldedKeyCollisions(["zcloud-storage:lvm", "kubernetes:context"]), []);
    });
});

describe("secure: anywhere stays secret, or is refused where the value must be plain", () => {
    const credentials = ["ssh.privateKey", "iscsi[0].chap.password"];
    const iscsi = [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", chap: { username: "k8s", password: "pw" }, initiators: ["node1"] }];
    const errorsOf = (values: Record<string, unknown>, securePaths: string[]) => parseStackConfig(values, { securePaths }).errors.map(formatIssue);

    test("a secure CHAP user name is refused: the login command carries it in its arguments", () => {
        assert.deepEqual(errorsOf({ nodes, ssh, iscsi }, [...credentials, "iscsi[0].chap.username"]), [
            "iscsi[0].chap.username: is a secure: value, but a CHAP user name cannot stay secret: the login command carries it in its arguments (state, preview, a node's ps) and writes it into the node's iSCSI record; it is not a credential, so set it in clear (only chap.password is a secret)",
        ]);
    });

    test("a whole chap map as one secure: value is refused", () => {
        assert.deepEqual(errorsOf({ nodes, ssh, iscsi }, ["ssh.privateKey", "iscsi[0].chap"]), [
            "iscsi[0].chap: is one secure: value holding more than a credential; write its keys in clear and set each credential as a secret of its own (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets), e.g. pulumi config set --secret --path ssh.privateKey",
        ]);
    });

    test("every leaf of a full config is either a credential or refused as secure:, at its own path", () => {
        const full = {
            namespace: "storage",
            imageRegistry: "registry.local:5000",
            ssh: { user: "ops", port: 2222, privateKey: "k", hostKeys: { node1: hostKey }, bastion: { host: "jump.example", port: 22, user: "ops", privateKey: "b", hostKey } },
            nodes: { node1: { address: "10.0.0.11", port: 22, user: "root" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
            lvm: [{ name: "fast", default: true, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] }, wipe: false, thin: { overprovisionRatio: 4, poolPercent: 90, snapshots: false } }],
            cephfs: [{ name: "fs", hosts: { node2: ["/dev/disk/by-id/wwn-0x2"] }, replicas: 1, wipe: false }],
            iscsi: [{ ...iscsi[0], lun: 0, initiators: ["node3"], wipe: false }],
            nfs: [{ name: "share", server: "10.0.0.60", path: "/exports/k8s", onDelete: "retain", mountOptions: ["nfsvers=4.1"] }],
        };
        const leaves: string[] = [];
        const walk = (value: unknown, path: string) => {
            if (value !== null && typeof value === "object") {
                for (const [k, v] of Object.entries(value)) {
                    walk(v, Array.isArray(value) ? `${path}[${k}]` : path ? `${path}.${k}` : k);
                }
            } else {
                leaves.push(path);
            }
        };
        walk(full, "");
        const allCredentials = ["ssh.privateKey", "ssh.bastion.privateKey", "iscsi[0].chap.password"];
        assert.deepEqual(errorsOf(full, allCredentials), [], "the config is valid with its credentials secure:");
        assert.equal(leaves.length, 40);
        for (const leaf of leaves) {
            const errors = errorsOf(full, [...new Set([...allCredentials, leaf])]);
            if (allCredentials.includes(leaf)) {
                assert.deepEqual(errors, [], leaf);
            } else {
                assert.equal(errors.length, 1, `${leaf}: ${errors.join("\n")}`);
                assert.match(errors[0], new RegExp(`^${leaf.replace(/[.[\]]/g, "\\$&")}: is a secure: value, but `), leaf);
            }
        }
    });

    const cephfs = [{ name: "fs", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] } }];
    const withCephfs = { "zcloud-storage:nodes": nodes, "zcloud-storage:ssh": ssh, "zcloud-storage:cephfs": cephfs };
    const fullErrors = (all: Record<string, unknown>, securePaths: string[]) => parseFullConfig(all, { securePaths }).errors.map(formatIssue);

    const secure = ["zcloud-storage:ssh.privateKey", "kubernetes:kubeconfig", "kubernetes:context"];
    const refused = [
        "kubernetes:context: is a secure: value, but the node label commands (and the CephFS drains) pass the context to kubectl as --context in their arguments (state, preview, ps); a context name is not a credential, so set it in clear",
        "kubernetes:kubeconfig: is a secure: value that names a file, but the node label commands (and the CephFS drains) pass a kubeconfig path to kubectl in their arguments (state, preview, ps); set the path in clear (a path is not a credential) or make the file's content the secret",
    ];
    const kube = { "kubernetes:kubeconfig": "/srv/kube/prod.yaml", "kubernetes:context": "prod" };

    test("a secure kubernetes:kubeconfig path or context is refused while a cephfs storage exists: the label commands and the OSD drain pass them to kubectl", () => {
        const all = { ...withCephfs, ...kube };
        assert.deepEqual(fullErrors(all, secure), refused);
        assert.deepEqual(fullErrors({ ...all, "zcloud-storage:cephfs": [] }, secure), [], "no node, no command line");
    });

    test("the same for an lvm or iscsi storage alone: their nodes' label commands run kubectl where pulumi up runs", () => {
        const base = { "zcloud-storage:nodes": nodes, "zcloud-storage:ssh": ssh, ...kube };
        const lvm = [{ name: "fast", hosts: { [Object.keys(nodes)[0]]: ["/dev/sdb"] } }];
        assert.deepEqual(fullErrors({ ...base, "zcloud-storage:lvm": lvm }, secure), refused);
        const iscsi = [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: [Object.keys(nodes)[0]] }];
        assert.deepEqual(fullErrors({ ...base, "zcloud-storage:iscsi": iscsi }, secure), refused);
        // nfs only: no node is labelled, nothing runs kubectl
        assert.deepEqual(fullErrors({ ...base, "zcloud-storage:nfs": [{ name: "shared", server: "10.0.0.9", path: "/export" }] }, secure), []);
    });

    test("kubernetes:cluster is refused while kubectl runs for the stack's nodes (it would label the context's own cluster), and passes without such a storage", () => {
        const message = "kubernetes:cluster: is set, but the node label commands (and the CephFS gates and drains) run kubectl with kubernetes:context and kubernetes:kubeconfig only, so node labels could land on another cluster than the provider's; remove it and name the cluster with kubernetes:context (a context of that cluster) or kubernetes:kubeconfig";
        assert.deepEqual(fullErrors({ ...withCephfs, ...kube, "kubernetes:cluster": "prod-east" }, ["zcloud-storage:ssh.privateKey"]), [message]);
        const lvm = [{ name: "fast", hosts: { [Object.keys(nodes)[0]]: ["/dev/sdb"] } }];
        assert.deepEqual(fullErrors({ "zcloud-storage:nodes": nodes, "zcloud-storage:ssh": ssh, "zcloud-storage:lvm": lvm, "kubernetes:cluster": "prod-east" }, ["zcloud-storage:ssh.privateKey"]), [message]);
        assert.deepEqual(fullErrors({ "zcloud-storage:nfs": [{ name: "shared", server: "10.0.0.9", path: "/export" }], "kubernetes:cluster": "prod-east" }, []), [], "nfs only: nothing runs kubectl");
    });

    test("a secure kubeconfig content, or one the offline plan cannot read, passes", () => {
        const content = { ...withCephfs, "kubernetes:kubeconfig": "apiVersion: v1\nkind: Config\n" };
        assert.deepEqual(fullErrors(content, ["zcloud-storage:ssh.privateKey", "kubernetes:kubeconfig"]), []);
        const offline = { ...withCephfs, "kubernetes:kubeconfig": "offline-secret(kubernetes:kubeconfig)" };
        assert.deepEqual(fullErrors(offline, ["zcloud-storage:ssh.privateKey", "kubernetes:kubeconfig"]), []);
        assert.deepEqual(drainKubeTarget(undefined, "offline-secret(kubernetes:kubeconfig)", true), { context: undefined, kubeconfigContent: "offline-secret(kubernetes:kubeconfig)" });
        assert.deepEqual(drainKubeTarget(undefined, "/srv/kube/prod.yaml"), { context: undefined, kubeconfigPath: "/srv/kube/prod.yaml" });
    });
});

describe("messages: number-like strings, infinities, merge keys", () => {
    test("a value the runtime hands over as text is a string unless it is a map or list", () => {
        assert.equal(parseConfigValue("1234"), "1234");
        assert.equal(parseConfigValue("true"), "true");
        assert.equal(parseConfigValue("null"), "null");
        assert.deepEqual(parseConfigValue('{"username":"1234","port":22}'), { username: "1234", port: 22 });
        assert.deepEqual(parseConfigValue("[1]"), [1]);
        assert.equal(parseConfigValue("[not json"), "[not json");
    });

    test('a quoted "1234" as a CHAP user name or node name is a string; an unquoted one is named as a number', () => {
        const doc = readStackDocument(
            'config:\n  zcloud-storage:nodes: { "1234": { address: 10.0.0.11 } }\n  zcloud-storage:iscsi:\n    - { name: san, portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", chap: { username: "1234", password: pw }, initiators: ["1234"] }\n  zcloud-storage:ssh: { privateKey: k }\n',
            "f.yaml",
        );
        const values = Object.fromEntries(Object.entries(doc.values).map(([k, v]) => [k.replace("zcloud-storage:", ""), v]));
        assert.deepEqual(parseStackConfig(values).errors, []);
        const unquoted = { ...values, iscsi: [{ ...(values.iscsi as object[])[0], chap: { username: 1234, password: "pw" } }] };
        assert.deepEqual(parseStackConfig(unquoted).errors.map(formatIssue), ["iscsi[0].chap.username: must be a string, not number 1234"]);
    });

    test(".inf, -.inf and .nan are refused by name, with their key paths", () => {
        const text = "config:\n  zcloud-storage:iscsi:\n    - { lun: .inf, name: a }\n  zcloud-storage:lvm:\n    - { thin: { overprovisionRatio: -.inf, poolPercent: .nan } }\n";
        assert.throws(() => readStackDocument(text, "f.yaml"), {
            message: [
                "f.yaml: zcloud-storage:iscsi[0].lun: .inf (infinity) is not a number a config value can hold (Pulumi passes config as JSON, which has no infinity or NaN); write a finite number",
                "f.yaml: zcloud-storage:lvm[0].thin.overprovisionRatio: -.inf (minus infinity) is not a number a config value can hold (Pulumi passes config as JSON, which has no infinity or NaN); write a finite number",
                "f.yaml: zcloud-storage:lvm[0].thin.poolPercent: .nan (not a number) is not a number a config value can hold (Pulumi passes config as JSON, which has no infinity or NaN); write a finite number",
            ].join("\n"),
        });
    });

    test("a YAML merge key is refused: it hides keys such as wipe: true from a reviewer", () => {
        const text = "x-defaults: &wipe { wipe: true }\nconfig:\n  zcloud-storage:lvm:\n    - name: a\n      <<: *wipe\n    - name: b\n      <<: [*wipe]\n";
        assert.throws(() => loadBoundedYaml(text, "f.yaml"), {
            message:
                "f.yaml: a YAML merge key (<<) at config.zcloud-storage:lvm[0], config.zcloud-storage:lvm[1] is refused: it pulls keys in from an anchor, so a reviewer reading or grepping the file does not see them (a wipe: true, say); write the keys out",
        });
        assert.deepEqual(loadBoundedYaml("a: &x { b: 1 }\nc: *x\nd: 2001-12-14\n", "f.yaml"), { a: { b: 1 }, c: { b: 1 }, d: new Date("2001-12-14") }, "anchors and the other YAML types still load");
    });
});

describe("strings that reach nodes: CHAP user names, IQNs, device paths", () => {
    const iscsiWith = (over: Record<string, unknown>) => ({
        nodes,
        ssh,
        iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", initiators: ["node1"], ...over }],
    });
    const errors = (values: Record<string, unknown>, securePaths = ["ssh.privateKey", "iscsi[0].chap.password"]) => parseStackConfig(values, { securePaths }).errors.map(formatIssue);
    const chapUserMessage =
        "is not a CHAP user name: 1 to 255 printable characters without blanks or line breaks (a line break would add lines to the node's iSCSI record)";

    test("a CHAP user name with a line break, a blank or a control character is refused", () => {
        assert.deepEqual(errors(iscsiWith({ chap: { username: "k8s\nnode.session.auth.authmethod = None", password: "pw" } })), [
            `iscsi[0].chap.username: "k8s\\nnode.session.auth.authmethod = None" ${chapUserMessage}`,
        ]);
        assert.deepEqual(errors(iscsiWith({ chap: { username: "k8s user", password: "pw" } })), [`iscsi[0].chap.username: "k8s user" ${chapUserMessage}`]);
        assert.deepEqual(errors(iscsiWith({ chap: { username: "k8s\u0007", password: "pw" } })), [`iscsi[0].chap.username: "k8s\\u0007" ${chapUserMessage}`]);
        assert.deepEqual(errors(iscsiWith({ chap: { username: "x".repeat(256), password: "pw" } })).length, 1);
        assert.deepEqual(errors(iscsiWith({ chap: { username: "k8s-user@SITE_1", password: "pw" } })), []);
    });

    test("a CHAP password with a line break is refused without quoting it", () => {
        assert.deepEqual(errors(iscsiWith({ chap: { username: "k8s", password: "pw\nnode.session.auth.authmethod = None" } })), [
            "iscsi[0].chap.password: a secret string is not one line without control characters (a line break would cut it short, or add lines to the node's iSCSI record)",
        ]);
    });

    test("an IQN outside RFC 3720's characters is refused", () => {
        const iqnMessage =
            "is not an iSCSI name (RFC 3720): iqn.YYYY-MM.reverse.domain[:identifier] of lowercase letters, digits, '-', '.' and ':' without '..' (e.g. iqn.2003-01.org.linux-iscsi.san:sn.1234), eui.<16 hex digits> or naa.<16 or 32 hex digits>";
        for (const iqn of ["iqn.2003-01.org.san:../../etc", "iqn.2003-01.org.san:a/b", "iqn.2003-01.org.san:$(id)", "iqn.2003-01.org.san:*", "iqn.2003-01.org.san:SN.1", "iqn.2003-01.org.san:sn..1"]) {
            assert.deepEqual(errors(iscsiWith({ iqn })), [`iscsi[0].iqn: ${JSON.stringify(iqn)} ${iqnMessage}`], iqn);
        }
        assert.deepEqual(errors(iscsiWith({ iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234:lun-0" })), []);
    });

    const lvmWith = (device: string) => ({ nodes, ssh, lvm: [{ name: "fast", hosts: { node1: [device] } }] });

    test("a device path with a comma or blank, the separators of the node's device list, is refused", () => {
        assert.deepEqual(errors(lvmWith("/dev/disk/by-id/wwn-0x1,/dev/sdc")), [
            'lvm[0].hosts.node1[0]: "/dev/disk/by-id/wwn-0x1,/dev/sdc" contains a blank or a comma, which separate devices in the node\'s device list; use the disk\'s /dev/disk/by-id or /dev/disk/by-path link',
        ]);
        assert.deepEqual(errors(lvmWith("/dev/disk/by-id/wwn-0x1 x")).length, 1);
    });

    test("by-uuid, by-label, by-partuuid and by-partlabel links are refused: a wipe makes them vanish", () => {
        for (const dir of ["by-uuid", "by-label", "by-partuuid", "by-partlabel"]) {
            const device = `/dev/disk/${dir}/0a1b2c3d`;
            assert.deepEqual(errors(lvmWith(device)), [
                `lvm[0].hosts.node1[0]: "${device}" is a /dev/disk/${dir} link, which names what is on the disk, not the disk: it vanishes when the device is wiped and every later apply would fail; use the disk's /dev/disk/by-id or /dev/disk/by-path link`,
            ]);
        }
    });

    test("each name of a device path within NAME_MAX, the path within PATH_MAX", () => {
        assert.deepEqual(errors(lvmWith(`/dev/disk/by-id/${"a".repeat(256)}`)), [
            "lvm[0].hosts.node1[0]: has a name of 256 bytes between slashes; a file name has at most 255 (NAME_MAX)",
        ]);
        assert.deepEqual(errors(lvmWith(`/dev/disk/by-id/${"a".repeat(255)}`)), []);
        const long = `/dev/${Array(20).fill("b".repeat(250)).join("/")}`;
        assert.deepEqual(errors(lvmWith(long)), [`lvm[0].hosts.node1[0]: is ${long.length} bytes long; a path has at most 4095 (PATH_MAX)`]);
    });
});

describe("addresses: the unspecified address, zones, IPv4-mapped forms", () => {
    const errors = (values: Record<string, unknown>) => parseStackConfig(values, { securePaths: ["ssh.privateKey"] }).errors.map(formatIssue);
    const unspecified = (a: string) =>
        `${JSON.stringify(a)} is the unspecified address, which names no machine (a connection to it reaches whichever host makes it); give the machine's own address`;

    test("0.0.0.0 and :: in any spelling are refused as node, bastion, portal and NFS server addresses", () => {
        for (const a of ["0.0.0.0", "::", "::0", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0"]) {
            assert.deepEqual(errors({ nodes: { node1: { address: a } } }), [`nodes.node1.address: ${unspecified(a)}`], a);
        }
        assert.deepEqual(errors({ nodes, ssh: { ...ssh, bastion: { host: "0.0.0.0" } } }), [`ssh.bastion.host: ${unspecified("0.0.0.0")}`]);
        assert.deepEqual(errors({ nodes, ssh, iscsi: [{ name: "san", portals: ["[::]:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: ["node1"] }] }), [
            `iscsi[0].portals[0]: ${unspecified("::")}`,
        ]);
        assert.deepEqual(errors({ nfs: [{ name: "nfs", server: "0.0.0.0", path: "/e" }] }), [`nfs[0].server: ${unspecified("0.0.0.0")}`]);
    });

    test("an IPv6 zone id is refused: it names an interface of one machine", () => {
        assert.deepEqual(errors({ nodes: { node1: { address: "fe80::1%eth0" } } }), [
            'nodes.node1.address: "fe80::1%eth0" carries an IPv6 zone (%eth0): a zone names a network interface of one machine, so it does not hold for every machine that uses the address; use a global or unique-local address, or a hostname',
        ]);
        assert.deepEqual(errors({ nodes, ssh, iscsi: [{ name: "san", portals: ["[fe80::1%eth0]:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: ["node1"] }] }).length, 1);
    });

    test("an IPv4-mapped IPv6 address is one endpoint with its IPv4 form", () => {
        assert.deepEqual(errors({ nodes: { node1: { address: "10.0.0.11" }, node2: { address: "::ffff:10.0.0.11" } } }), [
            "nodes.node2.address: ::ffff:10.0.0.11 reaches the same SSH endpoint as nodes.node1 (10.0.0.11 port 22); one machine under two node names could have one disk claimed twice, so give each node its own address",
        ]);
    });
});

describe("one shared LUN claimed twice", () => {
    const three = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } };
    const errors = (values: Record<string, unknown>) => parseStackConfig({ nodes: three, ssh, ...values }, { securePaths: ["ssh.privateKey"] }).errors.map(formatIssue);
    const san = (name: string, iqn: string, lun: number, initiators: string[], portals = ["10.0.0.50:3260"]) => ({ name, portals, iqn, lun, initiators });

    test("two iscsi storages on one target LUN are refused, whatever portal or IQN case they write", () => {
        assert.deepEqual(
            errors({
                iscsi: [
                    san("san-a", "iqn.2003-01.org.linux-iscsi.san:sn.1234", 0, ["node1"]),
                    san("san-b", "iqn.2003-01.org.linux-iscsi.san:sn.1234", 0, ["node2"], ["10.0.0.51:3260"]),
                    san("san-c", "iqn.2003-01.org.linux-iscsi.san:sn.1234", 1, ["node3"]),
                ],
            }),
            [
                "iscsi[1].lun: LUN 0 of iqn.2003-01.org.linux-iscsi.san:sn.1234 is already the LUN of iscsi[0] (san-a); two storages on one LUN would each create, adopt or wipe its shared volume group, so give each storage its own LUN",
            ],
        );
        const eui = errors({ iscsi: [san("san-a", "eui.02004567A425678D", 3, ["node1"]), san("san-b", "eui.02004567a425678d", 3, ["node2"])] });
        assert.deepEqual(eui, [
            "iscsi[1].lun: LUN 3 of eui.02004567a425678d is already the LUN of iscsi[0] (san-a); two storages on one LUN would each create, adopt or wipe its shared volume group, so give each storage its own LUN",
        ]);
    });

    const tail = "; a device that several machines see belongs to one node's volume group or OSD, or this node would adopt or wipe that data (an iscsi storage shares a LUN between nodes safely)";

    test("an iSCSI LUN path on two nodes of lvm storages is refused, whatever portal reaches it", () => {
        const lun = (portal: string) => `/dev/disk/by-path/ip-${portal}-iscsi-iqn.2003-01.org.linux-iscsi.san:sn.1234-lun-0`;
        assert.deepEqual(errors({ lvm: [{ name: "a", hosts: { node1: [lun("10.0.0.50:3260")] } }, { name: "b", hosts: { node2: [lun("10.0.0.51:3260")] } }] }), [
            `lvm[1].hosts.node2[0]: ${lun("10.0.0.51:3260")} is LUN 0 of iSCSI target iqn.2003-01.org.linux-iscsi.san:sn.1234, which lvm[0].hosts.node1[0] already claims on node1${tail}`,
        ]);
    });

    test("a multipath device or a world-wide name on two nodes of one cephfs storage is refused", () => {
        assert.deepEqual(
            errors({
                cephfs: [
                    {
                        name: "fs",
                        hosts: {
                            node1: ["/dev/mapper/mpatha", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"],
                            node2: ["/dev/mapper/mpatha", "/dev/disk/by-id/dm-uuid-mpath-3600a0b80"],
                            node3: ["/dev/disk/by-id/wwn-0x5000C500A1B2C3D4", "/dev/disk/by-id/dm-uuid-mpath-3600a0b80"],
                        },
                    },
                ],
            }),
            [
                `cephfs[0].hosts.node2[0]: /dev/mapper/mpatha is a device-mapper (multipath) device, which cephfs[0].hosts.node1[0] already claims on node1${tail}`,
                `cephfs[0].hosts.node3[0]: /dev/disk/by-id/wwn-0x5000C500A1B2C3D4 is a device with a world-wide name, which cephfs[0].hosts.node1[1] already claims on node1${tail}`,
                `cephfs[0].hosts.node3[1]: /dev/disk/by-id/dm-uuid-mpath-3600a0b80 is a device-mapper (multipath) device, which cephfs[0].hosts.node2[1] already claims on node2${tail}`,
            ],
        );
    });

    test("an lvm storage on the LUN of an iscsi storage is refused, even on one node", () => {
        const lun = "/dev/disk/by-path/ip-10.0.0.50:3260-iscsi-iqn.2003-01.org.linux-iscsi.san:sn.1234-lun-2";
        assert.deepEqual(errors({ iscsi: [san("san", "iqn.2003-01.org.linux-iscsi.san:sn.1234", 2, ["node2"])], lvm: [{ name: "a", hosts: { node1: [lun] } }] }), [
            `lvm[0].hosts.node1[0]: ${lun} is LUN 2 of iSCSI target iqn.2003-01.org.linux-iscsi.san:sn.1234, which iscsi[0] (san) holds its shared volume group on${tail}`,
        ]);
    });

    test("node-local paths repeat across nodes freely", () => {
        const local = ["/dev/sdb", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1", "/dev/dm-3"];
        assert.deepEqual(errors({ lvm: [{ name: "a", hosts: { node1: local, node2: local } }] }), []);
    });

    test("a partition of a shared LUN counts as the LUN", () => {
        const lun = "/dev/disk/by-path/ip-10.0.0.50:3260-iscsi-iqn.2003-01.org.linux-iscsi.san:sn.1234-lun-0";
        assert.deepEqual(errors({ lvm: [{ name: "a", hosts: { node1: [`${lun}-part1`], node2: [`${lun}-part2`] } }] }), [
            `lvm[0].hosts.node2[0]: ${lun}-part2 is LUN 0 of iSCSI target iqn.2003-01.org.linux-iscsi.san:sn.1234, which lvm[0].hosts.node1[0] already claims on node1${tail}`,
        ]);
    });
});

describe("the program refuses folded twins among the keys the language host hands it", () => {
    test("PULUMI_CONFIG with zcloud-storage:lvm and zcloud-storage:config:lvm fails before anything is registered", () => {
        const root = path.join(__dirname, "../..");
        const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-rawkeys-"));
        try {
            const script = `
                const pulumi = require("@pulumi/pulumi");
                pulumi.runtime.setMocks({ newResource: (a) => ({ id: a.name, state: a.inputs }), call: (a) => a.inputs }, "zcloud-storage", "site", false).then(() => {
                    process.chdir(${JSON.stringify(cwd)});
                    const { loadStackConfig } = require(${JSON.stringify(path.join(root, "components/config/load.ts"))});
                    try { loadStackConfig(); process.stdout.write("loaded"); } catch (e) { process.stdout.write(e.message); }
                });
            `;
            const env = {
                ...process.env,
                PULUMI_CONFIG: JSON.stringify({
                    "zcloud-storage:nodes": JSON.stringify(nodes),
                    "zcloud-storage:lvm": JSON.stringify([{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }]),
                    "zcloud-storage:config:lvm": "[]",
                    "zcloud-storage:ssh": JSON.stringify(ssh),
                }),
                PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(["zcloud-storage:ssh"]),
            };
            const out = execFileSync(process.execPath, ["--import", "tsx", "-e", script], { cwd: root, env, encoding: "utf8", timeout: 60_000 });
            assert.equal(
                out,
                [
                    "zcloud-storage config has 1 error; nothing was changed:",
                    "  - zcloud-storage:config:lvm: is the same key as zcloud-storage:lvm (Pulumi reads both as zcloud-storage:lvm), so one value would silently replace the other; keep only one of them",
                ].join("\n"),
            );
        } finally {
            fs.rmSync(cwd, { recursive: true, force: true });
        }
    });
});
