// Hostile and mistaken stack configs: each refused with the exact message, before anything is
// planned (docs/validation.md lists them).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { canonicalAddress } from "../../components/config/formats";
import { parseFullConfig, unknownConfigKeys } from "../../components/config/namespaces";
import { parseStackConfig } from "../../components/config/parse";
import { readStackDocument } from "../../components/config/stackDocument";
import { expandedSize, loadBoundedYaml } from "../../components/config/yaml";

const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } };
const ssh = { privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----abc", hostKeys: { node1: hostKey, node2: hostKey, node3: hostKey } };
const keyOnly = { privateKey: ssh.privateKey };
const errorsOf = (values: Record<string, unknown>, securePaths?: string[]) =>
    parseStackConfig(values, securePaths ? { securePaths } : {}).errors.map(formatIssue);
const fullErrorsOf = (all: Record<string, unknown>) => parseFullConfig(all).errors.map(formatIssue);

describe("item 1: every key of the stack is known", () => {
    test("a typo in the namespace is refused with the key it meant", () => {
        assert.deepEqual(fullErrorsOf({ "zcloud-storage:nodes": nodes, "zcloud-storge:lvm": [{ name: "a", hosts: { node1: ["/dev/sdb"] } }] }), [
            'zcloud-storge:lvm: unknown config namespace "zcloud-storge"; did you mean "zcloud-storage:lvm"? (known namespaces: zcloud-storage, pulumi, kubernetes); the program would ignore this key',
        ]);
    });

    test("a kubernetes provider key with a typo is refused; pulumi: keys pass", () => {
        assert.deepEqual(unknownConfigKeys(["kubernetes:contxt", "kubernetes:context", "pulumi:disable-default-providers", "zcloud-storage:lvm"]).map(formatIssue), [
            'kubernetes:contxt: unknown kubernetes config key; did you mean "kubernetes:context"? (known keys: alwaysRender, cluster, clusterIdentifier, context, deleteUnreachable, enableConfigMapMutable, enablePatchForce, enableSecretMutable, enableServerSideApply, helmReleaseSettings, kubeClientSettings, kubeconfig, namespace, renderYamlToDirectory, skipUpdateUnreachable, suppressDeprecationWarnings, suppressHelmHookWarnings, upsertExistingObjects)',
        ]);
    });

    test("a stack with no zcloud-storage key is refused: it would plan the deletion of every storage", () => {
        assert.deepEqual(fullErrorsOf({ "kubernetes:context": "prod" }), [
            "the stack sets no zcloud-storage: key, so the plan would delete every storage of the stack; check the stack file's config: map (to remove every storage on purpose, set zcloud-storage:lvm: [] and the other types, or run pulumi destroy)",
        ]);
        assert.deepEqual(fullErrorsOf({ "zcloud-storage:lvm": [] }), []);
    });

    test("a stack file without a config: map, or with an empty one, is refused", () => {
        assert.throws(() => readStackDocument("encryptionsalt: v1:abc\n", "stacks/Pulumi.x.yaml"), {
            message: "stacks/Pulumi.x.yaml has no config: map; a stack file holds its settings under config:",
        });
        assert.throws(() => readStackDocument("config: {}\n", "stacks/Pulumi.x.yaml"), {
            message: "stacks/Pulumi.x.yaml: config is empty; a plan of it would delete every storage of the stack",
        });
        assert.throws(() => readStackDocument("config:\n", "stacks/Pulumi.x.yaml"), { message: /has no config: map/ });
        assert.throws(() => readStackDocument("config: [a]\n", "stacks/Pulumi.x.yaml"), { message: "stacks/Pulumi.x.yaml: config must be a map of keys" });
    });
});

describe("item 2: secret leaves are checked one by one", () => {
    const bastion = { host: "jump.example", privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----xyz" };
    test("a clear bastion key is refused although ssh.privateKey is a secure: value", () => {
        assert.deepEqual(errorsOf({ nodes, ssh: { ...ssh, bastion } }, ["ssh.privateKey"]), [
            "ssh.bastion.privateKey: is stored in clear text; set it as a secret: pulumi config set --secret --path ssh.bastion.privateKey (read the value from a file or stdin, not the command line)",
        ]);
        assert.deepEqual(errorsOf({ nodes, ssh: { ...ssh, bastion } }, ["ssh.privateKey", "ssh.bastion.privateKey"]), []);
    });

    test("a clear CHAP password is refused although the sibling storage's is secure:", () => {
        const iscsi = (i: number) => ({ name: `san${i}`, portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", lun: i, chap: { username: "k8s", password: `pw${i}` }, initiators: [`node${i}`] });
        assert.deepEqual(errorsOf({ nodes, ssh, iscsi: [iscsi(1), iscsi(2)] }, ["ssh.privateKey", "iscsi[0].chap.password"]), [
            "iscsi[1].chap.password: is stored in clear text; set it as a secret: pulumi config set --secret --path iscsi[1].chap.password (read the value from a file or stdin, not the command line)",
        ]);
    });

    test("a whole key set as one secret covers its leaves, but is refused: only credentials are secrets", () => {
        assert.deepEqual(errorsOf({ nodes, ssh: { ...ssh, bastion } }, ["ssh"]), [
            "ssh: is one secure: value holding more than a credential; write its keys in clear and set each credential as a secret of its own (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets), e.g. pulumi config set --secret --path ssh.privateKey",
        ]);
    });

    test("the stack file reader lists every secure: leaf by its path", () => {
        const doc = readStackDocument(
            "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:a }\n    bastion: { host: j, privateKey: clear }\n  zcloud-storage:iscsi:\n    - chap: { password: { secure: v1:b } }\n",
            "f",
        );
        assert.deepEqual(doc.securePaths, ["zcloud-storage:ssh.privateKey", "zcloud-storage:iscsi[0].chap.password"]);
        assert.deepEqual(doc.secretKeys, ["zcloud-storage:ssh", "zcloud-storage:iscsi"]);
    });
});

describe("item 3: messages quote values, never a secret's", () => {
    test("a format error quotes the offending value", () => {
        assert.deepEqual(errorsOf({ nodes: { n1: { address: "10.1.0.300" } } }), [
            'nodes.n1.address: "10.1.0.300" is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.11',
        ]);
    });

    test("a secret of the wrong type is named by its type only", () => {
        const errors = errorsOf({ nodes, ssh: { privateKey: 123456789 } }, ["ssh.privateKey"]);
        assert.deepEqual(errors, ["ssh.privateKey: must be a string, not a secret number"]);
    });

    test("a value under a secure: key is not quoted, in format errors or in rules", () => {
        const values = {
            nodes: { node1: { address: "10.0.0.11" }, node2: { address: "s3cr3t-host..x" } },
            nfs: [
                { name: "team-share", server: "10.0.0.60", path: "/e" },
                { name: "team-share", server: "hidden-nas.example", path: "/e" },
            ],
        };
        const errors = errorsOf(values, ["nodes.node2.address", "nfs[1].server", "nfs[1].name"]).join("\n");
        assert.equal(
            errors,
            [
                "nodes.node2.address: a secret string is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.11",
                'nfs[1].name: "[secret]" is already used by nfs[0]; StorageClass names must be unique across all storage types',
                "nodes.node2.address: is a secure: value, but an SSH endpoint (address, port, user, host key) is not a credential: a reviewer must see which machine a change touches; set it in clear (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets)",
                "nfs[1].server: is a secure: value, but the program uses it in clear (resource names, node command lines, Kubernetes objects: state, preview, --json, --out, a node's ps), so it cannot stay secret; set it in clear (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets)",
                "nfs[1].name: is a secure: value, but the program uses it in clear (resource names, node command lines, Kubernetes objects: state, preview, --json, --out, a node's ps), so it cannot stay secret; set it in clear (only ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password are secrets)",
            ].join("\n"),
        );
        assert.doesNotMatch(errors, /s3cr3t|hidden-nas|team-share/);
    });

    test("a node whose entry is invalid is reported once, not also as missing from nodes", () => {
        assert.deepEqual(errorsOf({ nodes: { node1: { address: "10.0.0.300" } }, ssh: keyOnly, lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }] }), [
            'nodes.node1.address: "10.0.0.300" is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.11',
        ]);
    });
});

describe("item 4: derived names never collide", () => {
    // One message per pair of sources: the first name they share (the others follow from it).
    test("storage and node names joined with - ", () => {
        const errors = errorsOf({
            nodes: { c: { address: "10.0.0.1" }, "b-c": { address: "10.0.0.2" } },
            ssh: keyOnly,
            lvm: [{ name: "a-b", hosts: { c: ["/dev/sdb"] } }, { name: "a", hosts: { "b-c": ["/dev/sdb"] } }],
        });
        assert.deepEqual(errors, [
            'lvm[1].hosts.b-c: b-c gives the disk command the name "a-b-c-disks", which lvm[0].hosts.c (c) already gives its disk command; two resources cannot share a name, so rename the storage or node, or use another path of the device',
        ]);
    });

    test("OSD names derived from two device paths with one slug", () => {
        const errors = errorsOf({ nodes, ssh, cephfs: [{ name: "fs", hosts: { node1: ["/dev/disk/by-id/wwn_1", "/dev/disk/by-path/wwn-1"] } }] });
        assert.deepEqual(errors, [
            'cephfs[0].hosts.node1[1]: /dev/disk/by-path/wwn-1 gives the OSD workload the name "ceph-fs-osd-node1-wwn-1", which cephfs[0].hosts.node1[0] (/dev/disk/by-id/wwn_1) already gives its OSD workload; two resources cannot share a name, so rename the storage or node, or use another path of the device',
        ]);
    });

    test("OSD names cut to 63 characters", () => {
        const node = `n${"x".repeat(50)}`;
        const errors = errorsOf({
            nodes: { [node]: { address: "10.0.0.1" } },
            ssh: keyOnly,
            cephfs: [{ name: "fs", hosts: { [node]: ["/dev/disk/by-id/disk-a", "/dev/disk/by-id/disk-b"] } }],
        });
        assert.deepEqual(errors, [
            `cephfs[0].hosts.${node}[1]: /dev/disk/by-id/disk-b gives the OSD workload the name "ceph-fs-osd-${node}", which cephfs[0].hosts.${node}[0] (/dev/disk/by-id/disk-a) already gives its OSD workload; two resources cannot share a name, so rename the storage or node, or use another path of the device`,
        ]);
    });
});

describe("item 5: one SSH endpoint, one node entry", () => {
    const two = (a: object, b: object, sshPort?: number) =>
        errorsOf({ nodes: { node1: a, node2: b }, ssh: { privateKey: "k", ...(sshPort ? { port: sshPort } : {}) } }, ["ssh.privateKey"]);
    test("hostname case and a final dot", () => {
        assert.deepEqual(two({ address: "Node1.Example" }, { address: "node1.example." }), [
            "nodes.node2.address: node1.example. reaches the same SSH endpoint as nodes.node1 (node1.example port 22); one machine under two node names could have one disk claimed twice, so give each node its own address",
        ]);
    });
    test("IPv6 spellings and IPv4-mapped IPv6", () => {
        assert.equal(two({ address: "fd00:0:0::11" }, { address: "FD00::11" }).length, 1);
        assert.equal(two({ address: "10.0.0.11" }, { address: "::ffff:10.0.0.11" }).length, 1);
    });
    test("the default port and an explicit one", () => {
        assert.equal(two({ address: "10.0.0.11" }, { address: "10.0.0.11", port: 22 }).length, 1);
        assert.equal(two({ address: "10.0.0.11", port: 2222 }, { address: "10.0.0.11" }, 2222).length, 1);
        assert.deepEqual(two({ address: "10.0.0.11" }, { address: "10.0.0.11", port: 2222 }), [], "two ports: two machines behind one address");
    });
    test("canonical addresses", () => {
        assert.equal(canonicalAddress("0:0:0:0:0:ffff:a00:b"), "10.0.0.11");
        assert.equal(canonicalAddress("FE80:0::1%eth0"), "fe80::1%eth0");
    });
});

describe("item 6: the storage namespace is not a system namespace", () => {
    for (const namespace of ["kube-system", "kube-public", "kube-node-lease", "default"]) {
        test(namespace, () => {
            assert.deepEqual(errorsOf({ namespace }), [
                `namespace: "${namespace}" is a system namespace (default, kube-node-lease, kube-public, kube-system): the storage's privileged pods and keys need a namespace of their own, e.g. zcloud-storage`,
            ]);
        });
    }
});

describe("item 7: map keys are own properties only", () => {
    test("a node named constructor is a plain name: valid when declared, missing when not", () => {
        const lvm = [{ name: "a", hosts: { constructor: ["/dev/disk/by-id/wwn-0x1"] } }];
        assert.deepEqual(errorsOf({ nodes, ssh, lvm }), [
            'lvm[0].hosts.constructor: constructor is not in zcloud-storage:nodes; add it there with its SSH address',
        ]);
        const r = parseStackConfig({ nodes: { ...nodes, constructor: { address: "10.0.0.20" } }, ssh: { privateKey: "k" }, lvm });
        assert.deepEqual(r.errors, []);
        assert.equal(r.model!.ssh!.hostKeys.constructor, undefined, "no inherited member stands in for a pinned key");
        assert.deepEqual(r.warnings.map(formatIssue), [
            "ssh.hostKeys.constructor: not pinned: the SSH connection to constructor accepts any host key; pin it with the output of ssh-keyscan -t ed25519 10.0.0.20",
        ]);
    });

    test("hasOwnProperty and toString as host names", () => {
        assert.deepEqual(errorsOf({ nodes, ssh, lvm: [{ name: "a", hosts: { hasOwnProperty: ["/dev/sdb"], tostring: ["/dev/sdb"] } }] }), [
            'lvm[0].hosts.hasOwnProperty: hasOwnProperty is not in zcloud-storage:nodes; add it there with its SSH address',
            'lvm[0].hosts.tostring: tostring is not in zcloud-storage:nodes; add it there with its SSH address',
        ]);
        assert.deepEqual(errorsOf({ nodes: { hasOwnProperty: { address: "10.0.0.9" } } }), [
            "nodes.hasOwnProperty: must be the Kubernetes node name (lowercase RFC 1123: a-z, 0-9, '-' and '.'), as `kubectl get nodes` shows it",
        ]);
    });

    test("__proto__ as a key anywhere is refused once, by name", () => {
        const values = JSON.parse('{"__proto__": {}, "nodes": {"n1": {"address": "10.0.0.1", "__proto__": 1}}, "lvm": [{"name": "a", "__proto__": 1, "hosts": {"n1": ["/dev/sdb"]}}]}');
        const proto = (path: string) => `${path}: "__proto__" is not a usable name: it is neither a Kubernetes node name nor a known key`;
        assert.deepEqual(errorsOf({ ...values, ssh: keyOnly }), [proto("__proto__"), proto("nodes.n1.__proto__"), proto("lvm[0].__proto__")]);
    });

    test("__proto__ as a node or host is refused by name, never dropped", () => {
        const values = JSON.parse(
            `{"nodes": {"node1": {"address": "10.0.0.11"}, "__proto__": {"address": "10.0.0.12"}}, "ssh": {"privateKey": "k"}, "lvm": [{"name": "a", "hosts": {"node1": ["/dev/sdb"], "__proto__": ["/dev/sdb"]}}]}`,
        );
        assert.deepEqual(errorsOf(values), [
            'nodes.__proto__: "__proto__" is not a usable name: it is neither a Kubernetes node name nor a known key',
            'lvm[0].hosts.__proto__: "__proto__" is not a usable name: it is neither a Kubernetes node name nor a known key',
        ]);
    });
});

describe("item 8: YAML is bounded", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) {
        const prev = String.fromCharCode(96 + i);
        bomb.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${prev}`).join(", ")}]`);
    }
    const text = `config:\n${bomb.map((l) => `  ${l}`).join("\n")}\n`;

    test("an alias bomb (10^9 values) is refused in well under a second and little memory", () => {
        const rss = process.memoryUsage().rss;
        const start = performance.now();
        assert.throws(() => loadBoundedYaml(text, "bomb.yaml"), {
            message: "bomb.yaml: aliases expand to more than 2000000 values (an alias bomb?); write the values out or use fewer nested aliases",
        });
        const ms = performance.now() - start;
        assert.ok(ms < 500, `took ${ms} ms`);
        assert.ok(process.memoryUsage().rss - rss < 64 * 1024 * 1024, "grew more than 64 MiB");
    });

    test("an alias inside its own anchor is refused", () => {
        assert.throws(() => loadBoundedYaml("config: &a { x: [*a] }\n", "loop.yaml"), {
            message: "loop.yaml: an alias refers to itself (a YAML anchor used inside its own value)",
        });
    });

    test("a few aliases for device lists stay fine, and count as expanded", () => {
        const doc = loadBoundedYaml("d: &d [/dev/sdb, /dev/sdc]\nh: { n1: *d, n2: *d }\n", "ok.yaml");
        assert.deepEqual(doc, { d: ["/dev/sdb", "/dev/sdc"], h: { n1: ["/dev/sdb", "/dev/sdc"], n2: ["/dev/sdb", "/dev/sdc"] } });
        assert.equal(expandedSize(doc), 1 + 3 + 1 + 3 + 3);
    });

    test("a duplicate key is refused with its line (keys shown, values not)", () => {
        assert.throws(() => readStackDocument("config:\n  zcloud-storage:lvm: []\n  zcloud-storage:lvm: [{ name: a }]\n", "dup.yaml"), {
            message: ["dup.yaml is not valid YAML: duplicated mapping key (3:3); values are not shown", "", " 1 | config:", " 2 |   zcloud-storage:lvm: …", " 3 |   zcloud-storage:lvm: …", "-------^"].join("\n"),
        });
    });
});
