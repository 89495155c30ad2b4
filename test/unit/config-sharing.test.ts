// zcloud-storage:sharedResources and zcloud-storage:drivers (docs/splitting-stacks.md): the
// refusals and warnings word for word, and the model they give.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { parseStackConfig } from "../../components/config/parse";
import { sharableDriverTypes } from "../../components/config/sharing";
import { storageTypes } from "../../components/stack";

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const base = { ssh: { privateKey: "k", hostKeys: { node1: key } }, nodes: { node1: { address: "10.0.0.11" } } };
const errorsOf = (values: Record<string, unknown>) => parseStackConfig(values).errors.map(formatIssue);
const warningsOf = (values: Record<string, unknown>) => parseStackConfig(values).warnings.map(formatIssue);
const lvm = (extra: object = {}) => [{ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] }, ...extra }];

describe("config: sharedResources and drivers", () => {
    test("absent keys leave the model as it was; given ones are kept", () => {
        const plain = parseStackConfig({ ...base, lvm: lvm() }).model!;
        assert.equal(Object.hasOwn(plain, "sharedResources"), false);
        assert.equal(Object.hasOwn(plain, "drivers"), false);
        const owner = parseStackConfig({ drivers: ["lvm", "iscsi"] }).model!;
        assert.deepEqual([owner.sharedResources, owner.drivers], [undefined, ["lvm", "iscsi"]]);
        const external = parseStackConfig({ ...base, sharedResources: "external", lvm: lvm() }).model!;
        assert.equal(external.sharedResources, "external");
    });

    test("refusals, all reported together", () => {
        assert.deepEqual(errorsOf({ sharedResources: "shared", drivers: ["nfs", "cephfs", "lvn", 3] }), [
            'sharedResources: "shared" is not owned (this stack deploys the storage Namespace and the CSI drivers; the default) or external (another stack deploys them; this one deploys only its storages)',
            "drivers[1]: ceph-csi cannot be deployed for other stacks: its config lists each CephFS cluster it serves, so it comes with the CephFS storages of this stack",
            'drivers[2]: "lvn" is not a storage type with a driver to share; did you mean "lvm"? (one of lvm, nfs, iscsi)',
            "drivers[3]: must be a string, not number 3",
        ]);
        assert.deepEqual(errorsOf({ drivers: ["nfs", "lvm", "nfs"] }), ["drivers[2]: nfs is listed twice"]);
        assert.deepEqual(errorsOf({ drivers: "lvm" }), ['drivers: must be a list, not string "lvm"']);
        assert.deepEqual(
            errorsOf({ ...base, sharedResources: "external", drivers: ["nfs"], cephfs: [{ name: "fs", hosts: { node1: ["/dev/disk/by-id/a"] } }] }),
            [
                "drivers: a stack with sharedResources: external deploys no driver; list the drivers in the stack that owns the shared resources (sharedResources: owned), or remove this key",
                "cephfs[0]: a CephFS storage needs its cluster in the config of ceph-csi, which a stack with sharedResources: external does not deploy; keep CephFS storages in the stack that owns the shared resources",
            ],
        );
    });

    test("an empty drivers list is fine in a storage stack; CephFS is fine in the owner", () => {
        assert.deepEqual(errorsOf({ ...base, sharedResources: "external", drivers: [], lvm: lvm() }), []);
        assert.deepEqual(errorsOf({ ...base, sharedResources: "owned", drivers: ["lvm"], cephfs: [{ name: "fs", hosts: { node1: ["/dev/disk/by-id/a"] } }] }), []);
    });

    test("thin snapshots in a storage stack warn: the owner's TopoLVM decides whether its snapshot sidecar runs", () => {
        const snapshots = { thin: { snapshots: true } };
        assert.deepEqual(warningsOf({ ...base, sharedResources: "external", lvm: lvm(snapshots) }), [
            "lvm[0].thin.snapshots: the VolumeSnapshotClass works only if the TopoLVM driver of the owning stack runs its snapshot sidecar, which it does when one of that stack's own lvm storages sets thin.snapshots: true",
        ]);
        assert.deepEqual(warningsOf({ ...base, lvm: lvm(snapshots) }), []);
    });

    test("the types a stack may share are exactly those whose definition can refer to another stack's driver", () => {
        const withExternal = Object.values(storageTypes)
            .filter((d) => "external" in d && d.external !== undefined)
            .map((d) => d.type)
            .sort();
        assert.deepEqual(withExternal, [...sharableDriverTypes].sort());
    });
});
