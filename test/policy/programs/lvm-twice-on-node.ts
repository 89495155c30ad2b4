// A Pulumi program that builds the components directly, past the config validation that would
// refuse this: node2 in two lvm storages sharing /dev/sdb, both storages default. The policy pack is
// the second line of defence and must catch it in the plan.
import * as pulumi from "@pulumi/pulumi";
import { LvmStorage, TopolvmDriver } from "../../../components/lvm";

const ssh = {
    user: "root",
    port: 22,
    privateKey: pulumi.secret("test-key"),
    hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1", node2: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest2" },
};
const nodes = { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" } };
const driver = new TopolvmDriver("topolvm", { namespace: "zcloud-storage" });

new LvmStorage("local-fast", { hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb"] }, nodes, ssh, driver, isDefault: true });
new LvmStorage("bulk", { hosts: { node2: ["/dev/sdb", "/dev/sdc"] }, nodes, ssh, driver, isDefault: true });
