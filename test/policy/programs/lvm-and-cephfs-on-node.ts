// A Pulumi program that builds the components directly, past the config validation that would
// refuse this: node2 serves the lvm storage 'local-fast' and the cephfs storage 'shared-fs'.
// The policy pack is the second line of defence and must catch it in the plan.
import * as pulumi from "@pulumi/pulumi";
import { CephCsiDriver, CephFsIdentity, CephFsStorage } from "../../../components/cephfs";
import { LvmStorage, TopolvmDriver } from "../../../components/lvm";

const ssh = {
    user: "root",
    port: 22,
    privateKey: pulumi.secret("test-key"),
    hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1", node2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest2" },
};
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" } };
const namespace = "zcloud-storage";

const topolvm = new TopolvmDriver("topolvm", { namespace });
new LvmStorage("local-fast", { hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb"] }, nodes, ssh, driver: topolvm, isDefault: true });

const hosts = { node2: ["/dev/sdc"] };
const identity = new CephFsIdentity("shared-fs", { namespace, hosts: Object.keys(hosts) });
const cephCsi = new CephCsiDriver("ceph-csi-cephfs", { namespace, clusters: [identity.csiCluster] });
new CephFsStorage("shared-fs", { hosts, nodes, ssh, identity, driver: cephCsi });
