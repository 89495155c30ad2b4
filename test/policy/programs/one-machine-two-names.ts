// A Pulumi program that builds the components directly, past the config validation that would
// refuse this: node2 and node9 are one machine (10.0.0.12 on port 22, node9 written as the
// IPv4-mapped IPv6 form with the default port spelled out), and its /dev/sdb is claimed for lvm
// under one name and for cephfs under the other. The policy pack must see one machine.
import * as pulumi from "@pulumi/pulumi";
import { CephCsiDriver, CephFsIdentity, CephFsStorage } from "../../../components/cephfs";
import { LvmStorage, TopolvmDriver } from "../../../components/lvm";

const ssh = {
    user: "root",
    port: 22,
    privateKey: pulumi.secret("test-key"),
    hostKeys: {
        node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1",
        node2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest2",
        node9: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest2",
    },
};
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node9: { address: "::FFFF:10.0.0.12", port: 22 } };
const namespace = "zcloud-storage";

const topolvm = new TopolvmDriver("topolvm", { namespace });
new LvmStorage("local-fast", { hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb"] }, nodes, ssh, driver: topolvm, isDefault: true });

const hosts = { node9: ["/dev/sdb"] };
const identity = new CephFsIdentity("shared-fs", { namespace, hosts: Object.keys(hosts) });
const cephCsi = new CephCsiDriver("ceph-csi-cephfs", { namespace, clusters: [identity.csiCluster] });
new CephFsStorage("shared-fs", { hosts, nodes, ssh, identity, driver: cephCsi });
