import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import * as f from "../../components/config/formats";
import { parseStackConfig } from "../../components/config/parse";

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const base = () => ({
    ssh: { privateKey: "k", hostKeys: { node1: key, node2: key, node3: key } },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "node2.example" }, node3: { address: "fd00::13", port: 2222 } },
});
const errorsOf = (values: Record<string, unknown>, secretKeys?: string[]) =>
    parseStackConfig(values, secretKeys ? { secretKeys: new Set(secretKeys) } : {}).errors.map(formatIssue);

describe("config: valid", () => {
    test("a full config parses with defaults applied", () => {
        const r = parseStackConfig(
            {
                ...base(),
                lvm: [{ name: "local-fast", default: true, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] }, thin: {} }],
                cephfs: [{ name: "shared-fs", hosts: { node2: ["/dev/disk/by-id/a"], node3: ["/dev/disk/by-id/b"] } }],
                iscsi: [{ name: "san", portals: ["10.0.0.50:3260", "[fd00::50]:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", chap: { username: "k8s", password: "p" }, initiators: ["node1", "node2"] }],
                nfs: [{ name: "nfs", server: "10.0.0.60", path: "/exports/k8s", mountOptions: ["nfsvers=4.1", "hard"] }],
            },
            { secretKeys: new Set(["ssh", "iscsi"]) },
        );
        assert.deepEqual(r.errors, []);
        // The model's maps have no prototype (a node may be named constructor); compare as plain data.
        const m = structuredClone(r.model!);
        assert.equal(m.namespace, "zcloud-storage");
        assert.deepEqual(m.ssh, { user: "root", port: 22, privateKey: "k", agent: false, hostKeys: { node1: key, node2: key, node3: key }, bastion: undefined });
        assert.deepEqual(m.lvm[0].thin, { overprovisionRatio: 4, poolPercent: 90, snapshots: false });
        assert.equal(m.lvm[0].wipe, false);
        assert.equal(m.cephfs[0].wipe, false);
        assert.equal(m.iscsi[0].wipe, false);
        assert.equal(m.cephfs[0].replicas, 2, "min(3, hosts)");
        assert.equal(m.iscsi[0].lun, 0);
        assert.equal(m.nfs[0].onDelete, "archive");
        assert.equal(m.nfs[0].default, false);
    });

    test("an empty config is valid and plans only the namespace", () => {
        const r = parseStackConfig({});
        assert.deepEqual(r.errors, []);
        assert.deepEqual(structuredClone(r.model), { namespace: "zcloud-storage", imageRegistry: undefined, ssh: undefined, nodes: {}, lvm: [], cephfs: [], iscsi: [], nfs: [] });
    });

    test("bastion user defaults to the ssh user", () => {
        const r = parseStackConfig({ ...base(), ssh: { ...base().ssh, user: "ops", bastion: { host: "jump.example" } } });
        assert.deepEqual(r.model!.ssh!.bastion, { host: "jump.example", port: 22, user: "ops" });
    });

    test("warnings: kernel device names and unpinned host keys, not errors", () => {
        const r = parseStackConfig({ ...base(), ssh: { privateKey: "k" }, lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }] });
        assert.deepEqual(r.errors, []);
        assert.deepEqual(r.warnings.map(formatIssue), [
            "lvm[0].hosts.node1[0]: /dev/sdb is a kernel name that can change across reboots; the node command reports its /dev/disk/by-id name, prefer that in the config",
            "ssh.hostKeys.node1: not pinned: the SSH connection to node1 accepts any host key; pin it with the output of ssh-keyscan -t ed25519 10.0.0.11",
        ]);
    });
});

describe("config: each rule reports its key path and a fix", () => {
    const cases: Array<[string, Record<string, unknown>, string[]]> = [
        ["unknown top-level key", { nodez: {} }, ['nodez: unknown key; did you mean "nodes"? (known keys: namespace, imageRegistry, ssh, nodes, lvm, cephfs, iscsi, nfs, sharedResources, drivers, monitoring, leaderElection, configFiles)']],
        ["unknown nested key", { ...base(), lvm: [{ name: "a", hots: {}, hosts: { node1: ["/dev/sdb"] } }] }, ['lvm[0].hots: unknown key; did you mean "hosts"? (known keys: name, default, hosts, wipe, thin, alerts)']],
        ["unknown key far from any", { ...base(), lvm: [{ name: "a", zzzzzz: 1, hosts: { node1: ["/dev/sdb"] } }] }, ["lvm[0].zzzzzz: unknown key (known keys: name, default, hosts, wipe, thin, alerts)"]],
        ["RFC 1123 name", { ...base(), lvm: [{ name: "Local_Fast", hosts: { node1: ["/dev/sdb"] } }] }, [`lvm[0].name: "Local_Fast" is not a lowercase RFC 1123 name (a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters), e.g. local-fast`]],
        ["wrong type", { ...base(), lvm: [{ name: "a", hosts: { node1: "/dev/sdb" } }] }, ['lvm[0].hosts.node1: must be a list, not string "/dev/sdb"']],
        ["missing required key", { ...base(), lvm: [{ name: "a" }] }, ["lvm[0].hosts: is required"]],
        ["empty hosts", { ...base(), lvm: [{ name: "a", hosts: {} }] }, ["lvm[0].hosts: must name at least one node with its devices"]],
        ["empty device list", { ...base(), lvm: [{ name: "a", hosts: { node1: [] } }] }, ["lvm[0].hosts.node1: must list at least one device"]],
        ["device outside /dev", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/tmp/../dev/sdb"] } }] }, ['lvm[0].hosts.node1[0]: "/tmp/../dev/sdb" is not an absolute device path under /dev, e.g. /dev/disk/by-id/wwn-0x5000c500a1b2c3d4']],
        ["unique names across types", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }], nfs: [{ name: "a", server: "s", path: "/x" }] }, ['nfs[0].name: "a" is already used by lvm[0]; StorageClass names must be unique across all storage types']],
        ["one default", { ...base(), lvm: [{ name: "a", default: true, hosts: { node1: ["/dev/sdb"] } }], nfs: [{ name: "b", default: true, server: "s", path: "/x" }] }, ["nfs[0].default: only one StorageClass can be the default and lvm[0] (a) already is; set default: false on one of them"]],
        ["unknown node", { ...base(), lvm: [{ name: "a", hosts: { node9: ["/dev/sdb"] } }] }, ['lvm[0].hosts.node9: node9 is not in zcloud-storage:nodes; did you mean "node1"?; add it there with its SSH address']],
        ["wipe neither a boolean nor a map", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] }, wipe: "yes" }] }, ['lvm[0].wipe: "yes" is not true, false or a map of node to the declared devices that may be wiped, e.g. { node2: [/dev/sdc] }']],
        ["wipe map with an empty list", { ...base(), cephfs: [{ name: "a", hosts: { node1: ["/dev/sdb"] }, wipe: { node1: [] } }] }, ["cephfs[0].wipe.node1: must list at least one device (or leave the node out)"]],
        [
            "wipe map naming a node or device the storage does not declare",
            { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb"] }, wipe: { node1: ["/dev/sdb", "/dev/sdc"], node3: ["/dev/sdb"] } }] },
            [
                "lvm[0].wipe.node1[1]: /dev/sdc is not declared under lvm[0].hosts.node1; wipe names only devices the storage declares",
                "lvm[0].wipe.node3: node3 is not under lvm[0].hosts; wipe names only devices the storage declares",
            ],
        ],
        ["bad node name", { nodes: { Node_1: { address: "10.0.0.1" } } }, ["nodes.Node_1: must be the Kubernetes node name (lowercase RFC 1123: a-z, 0-9, '-' and '.'), as `kubectl get nodes` shows it"]],
        ["bad address", { nodes: { n1: { address: "10.0.0.256" } } }, ['nodes.n1.address: "10.0.0.256" is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.11']],
        ["bad port", { nodes: { n1: { address: "h", port: 70000 } } }, ['nodes.n1.port: 70000 is not a TCP port, a whole number from 1 to 65535']],
        ["ssh needed", { nodes: base().nodes, lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }] }, ["ssh: is required because lvm storages prepare nodes over SSH; set ssh.privateKey with: pulumi config set --secret --path ssh.privateKey < key (or ssh.agent: true when the key is in ssh-agent)"]],
        ["host key format", { ...base(), ssh: { privateKey: "k", hostKeys: { node1: "AAAA" } } }, ['ssh.hostKeys.node1: "AAAA" is not an OpenSSH public key line, e.g. "ssh-ed25519 AAAA..." (ssh-keyscan -t ed25519 <node> prints it)']],
        ["host key of unknown node", { ...base(), ssh: { privateKey: "k", hostKeys: { node7: key } } }, ['ssh.hostKeys.node7: node7 is not in zcloud-storage:nodes; did you mean "node1"?; add it there with its SSH address']],
        ["device claimed twice across storages", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }], cephfs: [{ name: "c", hosts: { node1: ["/dev/sdb"] } }] }, [
            "cephfs[0].hosts.node1[0]: /dev/sdb on node1 is already claimed by lvm[0] (a); a device belongs to one storage",
            "cephfs[0].hosts.node1: node1 already serves lvm storage a; a node serves at most one of lvm and cephfs (an LVM volume group and Ceph OSDs would compete for its disks)",
        ]],
        ["device listed twice", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb", "/dev/sdb"] } }] }, ["lvm[0].hosts.node1[1]: /dev/sdb is listed twice for node1"]],
        ["a disk and its own partition", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb", "/dev/sdc", "/dev/sdb2"] } }] }, [
            "lvm[0].hosts.node1[2]: /dev/sdb2 is a partition of /dev/sdb, which lvm[0].hosts.node1[0] claims on node1 too; preparing the disk would wipe its partition table and this partition with it, so list either the disk or its partitions",
        ]],
        ["a by-id disk and its -part link, partition first", { ...base(), cephfs: [{ name: "c", hosts: { node1: ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"] } }] }, [
            "cephfs[0].hosts.node1[0]: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1 is a partition of /dev/disk/by-id/wwn-0x5000c500a1b2c3d4, which cephfs[0].hosts.node1[1] claims on node1 too; preparing the disk would wipe its partition table and this partition with it, so list either the disk or its partitions",
        ]],
        ["node in two lvm storages", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] } }, { name: "b", hosts: { node1: ["/dev/sdc"] } }] }, ["lvm[1].hosts.node1: node1 already serves lvm storage a; a node is in at most one lvm storage"]],
        ["replicas over hosts", { ...base(), cephfs: [{ name: "c", replicas: 3, hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb"] } }] }, ["cephfs[0].replicas: 3 replicas need 3 hosts but 2 are listed; Ceph places replicas on different hosts, so add hosts or lower replicas"]],
        ["cephfs name too long for its mon Services", { ...base(), cephfs: [{ name: "a".repeat(53), hosts: { node1: ["/dev/sdb"] } }] }, ["cephfs[0].name: is 53 characters; a cephfs name has at most 52, because its mon Services are named ceph-<name>-mon-<id> (at most 63)"]],
        ["IQN", { ...base(), iscsi: [{ name: "s", portals: ["10.0.0.5:3260"], iqn: "iqn.2003-13.x", initiators: ["node1"] }] }, [`iscsi[0].iqn: "iqn.2003-13.x" is not an iSCSI name (RFC 3720): iqn.YYYY-MM.reverse.domain[:identifier] of lowercase letters, digits, '-', '.' and ':' without '..' (e.g. iqn.2003-01.org.linux-iscsi.san:sn.1234), eui.<16 hex digits> or naa.<16 or 32 hex digits>`]],
        ["portal without port", { ...base(), iscsi: [{ name: "s", portals: ["10.0.0.5"], iqn: "eui.0123456789abcdef", initiators: ["node1"] }] }, ['iscsi[0].portals[0]: "10.0.0.5" is not host:port or [ipv6]:port, e.g. 10.0.0.50:3260']],
        ["CHAP pair", { ...base(), iscsi: [{ name: "s", portals: ["h:3260"], iqn: "naa.0123456789abcdef", chap: { username: "u" }, initiators: ["node1"] }] }, ["iscsi[0].chap.password: is missing; CHAP needs both username and password (or leave chap out for a target without authentication)"]],
        ["initiator in two iscsi storages", { ...base(), iscsi: [
            { name: "s", portals: ["h:3260"], iqn: "naa.0123456789abcdef", initiators: ["node1"] },
            { name: "t", portals: ["h:3260"], iqn: "naa.0123456789abcdee", initiators: ["node1"] },
        ] }, ["iscsi[1].initiators[0]: node1 already serves iscsi storage s; a node is in at most one iscsi storage"]],
        ["NFS relative path", { nfs: [{ name: "n", server: "s", path: "exports" }] }, ['nfs[0].path: "exports" is not an absolute path on the server, e.g. /exports/k8s']],
        ["NFS onDelete", { nfs: [{ name: "n", server: "s", path: "/e", onDelete: "archived" }] }, ['nfs[0].onDelete: "archived" is not one of delete, retain, archive (archive keeps the data in an archived- directory)']],
        ["NFS mount option typo", { nfs: [{ name: "n", server: "s", path: "/e", mountOptions: ["nfsver=4.1"] }] }, ['nfs[0].mountOptions[0]: unknown NFS mount option "nfsver"; did you mean "nfsvers"?']],
        ["NFS version", { nfs: [{ name: "n", server: "s", path: "/e", mountOptions: ["nfsvers=5"] }] }, ["nfs[0].mountOptions[0]: nfsvers must be one of 3, 4, 4.0, 4.1, 4.2"]],
        ["image registry with scheme", { imageRegistry: "https://registry.local" }, ['imageRegistry: "https://registry.local" is not a registry host with optional port and path, without scheme, e.g. registry.local:5000 or registry.local/mirror']],
        ["thin percent", { ...base(), lvm: [{ name: "a", hosts: { node1: ["/dev/sdb"] }, thin: { poolPercent: 120 } }] }, ['lvm[0].thin.poolPercent: 120 is not from 1 to 100 (percent of the volume group)']],
    ];
    for (const [name, values, expected] of cases) {
        test(name, () => assert.deepEqual(errorsOf(values), expected));
    }

    test("secret leaves in clear text are refused when secrecy is known", () => {
        const values = { ...base(), iscsi: [{ name: "s", portals: ["h:3260"], iqn: "naa.0123456789abcdef", chap: { username: "u", password: "p" }, initiators: ["node1"] }] };
        assert.deepEqual(errorsOf(values, ["ssh"]), [
            "iscsi[0].chap.password: is stored in clear text; set it as a secret: pulumi config set --secret --path iscsi[0].chap.password (read the value from a file or stdin, not the command line)",
        ]);
        assert.deepEqual(errorsOf(values, ["ssh", "iscsi"]), []);
    });

    test("all errors of a config come together, with item indexes kept", () => {
        const errors = errorsOf({
            ...base(),
            lvm: [{ name: "BAD", hosts: { node1: ["/dev/sdb"] } }, { name: "ok", hosts: { node9: ["/dev/sdc"] } }],
            nfs: [{ name: "ok", server: "s", path: "/e" }],
        });
        assert.deepEqual(errors, [
            `lvm[0].name: "BAD" is not a lowercase RFC 1123 name (a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters), e.g. local-fast`,
            'nfs[0].name: "ok" is already used by lvm[1]; StorageClass names must be unique across all storage types',
            'lvm[1].hosts.node9: node9 is not in zcloud-storage:nodes; did you mean "node1"?; add it there with its SSH address',
        ]);
    });
});

describe("formats", () => {
    test("addresses", () => {
        for (const ok of ["10.0.0.1", "fd00::1", "node1", "node-1.example.com"]) assert.ok(f.isAddress(ok), ok);
        for (const bad of ["10.0.0.256", "1.2.3", "-node", "a_b", "", "[fd00::1]"]) assert.ok(!f.isAddress(bad), bad);
    });
    test("device paths", () => {
        for (const ok of ["/dev/sdb", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1", "/dev/nvme0n1"]) assert.ok(f.isDevicePath(ok), ok);
        for (const bad of ["sdb", "/dev/", "/dev/../etc/passwd", "/dev//sdb", "/sys/block/sdb", "/dev/sd b"]) assert.ok(!f.isDevicePath(bad), bad);
    });
    test("iSCSI names", () => {
        for (const ok of ["iqn.2003-01.org.linux-iscsi.san:sn.1234", "iqn.2024-12.local.lab", "eui.02004567A425678D", "naa.52004567BA64678D"]) assert.ok(f.isIscsiName(ok), ok);
        for (const bad of ["iqn.2003-1.org.x", "iqn.03-01.org.x", "eui.123", "san"]) assert.ok(!f.isIscsiName(bad), bad);
    });
    test("portals", () => {
        assert.deepEqual(f.parsePortal("10.0.0.50:3260"), { host: "10.0.0.50", port: 3260 });
        assert.deepEqual(f.parsePortal("[fd00::50]:3260"), { host: "fd00::50", port: 3260 });
        assert.equal(f.parsePortal("fd00::50:3260"), undefined);
        assert.equal(f.parsePortal("san:0"), undefined);
    });
});
