// Claims grouped by machine: node names whose remote commands reach one SSH endpoint are one
// machine for storage-node-exclusive and storage-device-single-claim. Pure functions, no runtime.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { sshEndpoint } from "../../policy/endpoint";
import { claimsByMachine, commandEndpoint } from "../../policy/model";
import { checkDeviceSingleClaim, checkNodeExclusive } from "../../policy/policies";
import { nodeCommand, nodeLabel, UNKNOWN_STRING } from "./fixtures";

const conn = (host: unknown, port?: unknown, proxy?: unknown) => ({
    host,
    ...(port === undefined ? {} : { port }),
    user: "root",
    privateKey: "[secret]",
    ...(proxy === undefined ? {} : { proxy }),
});

describe("sshEndpoint", () => {
    it("spells one machine one way: case, final dot, IPv6 forms, IPv4-mapped IPv6, brackets, default port", () => {
        assert.equal(sshEndpoint("10.0.0.11"), "10.0.0.11:22");
        assert.equal(sshEndpoint("Node1.Example.COM."), "node1.example.com:22");
        assert.equal(sshEndpoint("::ffff:10.0.0.11", 22), "10.0.0.11:22");
        assert.equal(sshEndpoint("0:0:0:0:0:FFFF:0a00:000b"), "10.0.0.11:22");
        assert.equal(sshEndpoint("2001:DB8:0:0:0:0:0:1", 2222), "[2001:db8::1]:2222");
        assert.equal(sshEndpoint("[2001:db8::1]", 2222), "[2001:db8::1]:2222");
        assert.equal(sshEndpoint("FE80:0::1%eth0"), "[fe80::1%eth0]:22");
    });
});

describe("commandEndpoint", () => {
    it("reads host and port of a connection, the default port where none is given, and the bastion", () => {
        assert.equal(commandEndpoint(nodeCommand("a", "node1", conn("10.0.0.11", 2222))), "10.0.0.11:2222");
        assert.equal(commandEndpoint(nodeCommand("a", "node1", conn("NODE1.example"))), "node1.example:22");
        assert.equal(
            commandEndpoint(nodeCommand("a", "node1", conn("10.0.0.11", 22, { host: "Jump.Example", port: 22, user: "ops", privateKey: "[secret]" }))),
            "10.0.0.11:22 via jump.example:22",
        );
    });

    it("is undefined where the connection cannot be seen: an opaque secret, an unknown host or port", () => {
        assert.equal(commandEndpoint(nodeCommand("a", "node1", "[secret]")), undefined);
        assert.equal(commandEndpoint(nodeCommand("a", "node1", conn(UNKNOWN_STRING, 22))), undefined);
        assert.equal(commandEndpoint(nodeCommand("a", "node1", conn("10.0.0.11", UNKNOWN_STRING))), undefined);
        assert.equal(commandEndpoint(nodeCommand("a", "node1", conn("10.0.0.11", 22, { host: UNKNOWN_STRING, port: 22 }))), undefined);
    });
});

describe("claimsByMachine", () => {
    it("joins node names that reach one endpoint, keeps names at other ports or behind opaque connections apart", () => {
        const resources = [
            nodeLabel("lvm", "a", "node1", ["/dev/sdb"]),
            nodeCommand("a", "node1", conn("10.0.0.11", 22)),
            nodeLabel("cephfs", "b", "node9", ["/dev/sdc"]),
            nodeCommand("b", "node9", conn("::ffff:10.0.0.11"), "cephfs"),
            nodeLabel("cephfs", "b", "node2", ["/dev/sdb"]),
            nodeCommand("b", "node2", conn("10.0.0.11", 2222), "cephfs"),
            nodeLabel("cephfs", "b", "node3", ["/dev/sdb"]),
            nodeCommand("b", "node3", "[secret]", "cephfs"),
        ];
        assert.deepEqual(
            claimsByMachine(resources).map((m) => ({ nodes: m.nodes, endpoints: m.endpoints, storages: m.claims.map((c) => c.storage) })),
            [
                { nodes: ["node1", "node9"], endpoints: ["10.0.0.11:22"], storages: ["a", "b"] },
                { nodes: ["node2"], endpoints: ["10.0.0.11:2222"], storages: ["b"] },
                { nodes: ["node3"], endpoints: [], storages: ["b"] },
            ],
        );
    });

    it("takes the command of the same storage type only (a same-named command of another type is not the node's)", () => {
        // lvm 'x-node1' on node 'y' and cephfs 'x' on node 'node1-y' would both name a command "x-node1-y-disks".
        const resources = [nodeLabel("lvm", "a", "node1", ["/dev/sdb"]), nodeCommand("a", "node1", conn("10.0.0.11"), "cephfs")];
        assert.deepEqual(claimsByMachine(resources).map((m) => m.endpoints), [[]]);
    });
});

describe("storage-node-exclusive and storage-device-single-claim by machine", () => {
    const machine = [
        nodeLabel("lvm", "local-fast", "node1", ["/dev/sdb"]),
        nodeCommand("local-fast", "node1", conn("Node1.Example", 22)),
        nodeLabel("cephfs", "shared-fs", "node1-alias", ["/dev/sdb", "/dev/sdc"]),
        nodeCommand("shared-fs", "node1-alias", conn("node1.example."), "cephfs"),
    ];

    it("reports lvm and cephfs on one machine under two names, naming both and the endpoint", () => {
        assert.deepEqual(checkNodeExclusive(machine), [
            {
                urn: machine[2].urn,
                message:
                    "node1 and node1-alias are one machine (all reach node1.example:22) and it serves lvm 'local-fast' on node1 and cephfs 'shared-fs' on node1-alias: " +
                    "a machine's disks must belong to one of them (a Ceph OSD and an LVM VG would compete for the machine). " +
                    "Give each of node1 and node1-alias the address of its own machine in zcloud-storage:nodes, or keep the machine in one storage, in the stack config.",
            },
        ]);
    });

    it("reports one disk of one machine claimed under two names, and not a disk claimed once", () => {
        assert.deepEqual(checkDeviceSingleClaim(machine), [
            {
                urn: machine[2].urn,
                message:
                    "/dev/sdb of one machine reached as node1 and node1-alias (all at node1.example:22) is claimed by lvm 'local-fast' on node1 and cephfs 'shared-fs' on node1-alias: " +
                    "a disk holds one LVM physical volume or one Ceph OSD, so the second storage's disk prep would either refuse it or, with wipe, destroy the first one's data. " +
                    "Give each of node1 and node1-alias the address of its own machine in zcloud-storage:nodes, or list /dev/sdb under one storage only, in the stack config.",
            },
        ]);
    });

    it("reports two lvm storages on one machine under two names", () => {
        const resources = [
            nodeLabel("lvm", "a", "node1", ["/dev/sdb"]),
            nodeCommand("a", "node1", conn("10.0.0.11")),
            nodeLabel("lvm", "b", "node2", ["/dev/sdc"]),
            nodeCommand("b", "node2", conn("10.0.0.11", 22)),
        ];
        assert.deepEqual(checkNodeExclusive(resources).map((f) => f.message), [
            "node1 and node2 are one machine (all reach 10.0.0.11:22) and it serves lvm 'a' on node1 and lvm 'b' on node2: a machine serves one lvm storage, as a node does. " +
                "Give each of node1 and node2 the address of its own machine in zcloud-storage:nodes, or keep the machine in one storage, in the stack config.",
        ]);
        assert.deepEqual(checkDeviceSingleClaim(resources), []);
    });

    it("passes the same names at different ports, behind opaque connections, or through different bastions", () => {
        const at = (port: number, proxyHost?: string) => () => conn("10.0.0.11", port, proxyHost ? { host: proxyHost, port: 22, user: "ops" } : undefined);
        for (const [first, second] of [
            [at(22), at(2222)],
            [() => "[secret]", () => "[secret]"],
            [at(22, "jump-a"), at(22, "jump-b")],
        ]) {
            const resources = [
                nodeLabel("lvm", "a", "node1", ["/dev/sdb"]),
                nodeCommand("a", "node1", first()),
                nodeLabel("cephfs", "b", "node2", ["/dev/sdb"]),
                nodeCommand("b", "node2", second(), "cephfs"),
            ];
            assert.deepEqual([...checkNodeExclusive(resources), ...checkDeviceSingleClaim(resources)], []);
        }
    });

    it("counts an iSCSI login's endpoint too", () => {
        const resources = [
            nodeLabel("iscsi", "san", "node1", ["iqn.2003-01.org.example:t/lun0"]),
            nodeCommand("san", "node1", conn("10.0.0.11"), "iscsi"),
            nodeLabel("iscsi", "san2", "node2", ["iqn.2003-01.org.example:u/lun0"]),
            nodeCommand("san2", "node2", conn("10.0.0.11"), "iscsi"),
        ];
        assert.match(checkNodeExclusive(resources)[0].message, /^node1 and node2 are one machine \(all reach 10\.0\.0\.11:22\) and it serves iscsi 'san' on node1 and iscsi 'san2' on node2:/);
    });
});
