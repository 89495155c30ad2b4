import * as pulumi from "@pulumi/pulumi";
import { CephCsiDriver } from "./cephfs/cephCsiDriver";
import { CephFsIdentity } from "./cephfs/identity";
import { CephFsStorage } from "./cephfs/cephFsStorage";
import { ConfigValidationError } from "./config/errors";
import { StackModel } from "./config/model";
import { storageNamespace } from "./k8s/namespace";
import { LvmStorage } from "./lvm/lvmStorage";
import { TopolvmDriver } from "./lvm/topolvm";
import { CsiDriverNfs } from "./nfs/csiDriverNfs";
import { NfsStorage } from "./nfs/nfsStorage";
import { SshSettings } from "./node/nodeCommand";

export interface DeployedStorages {
    namespace: pulumi.Output<string>;
    /** Storage name -> StorageClass name. */
    storageClasses: Record<string, pulumi.Output<string>>;
    lvm: LvmStorage[];
    nfs: NfsStorage[];
    cephfs: CephFsStorage[];
}

function sshSettings(model: StackModel): SshSettings | undefined {
    const ssh = model.ssh;
    if (!ssh) {
        return undefined;
    }
    return {
        ...ssh,
        privateKey: pulumi.secret(ssh.privateKey),
        bastion: ssh.bastion && {
            ...ssh.bastion,
            privateKey: ssh.bastion.privateKey === undefined ? undefined : pulumi.secret(ssh.bastion.privateKey),
        },
    };
}

function requireSsh(ssh: SshSettings | undefined): SshSettings {
    if (!ssh) {
        // Validation reports this with its fix; reaching here means the model was built by hand.
        throw new Error("ssh settings are required for storages that prepare nodes");
    }
    return ssh;
}

/** Storage types whose components this version does not have yet: refused, never ignored. */
const unbuiltTypes = ["iscsi"] as const;

function refuseUnbuiltTypes(model: StackModel): void {
    const issues = unbuiltTypes
        .filter((type) => model[type].length > 0)
        .map((type) => ({ path: type, message: `${type} storages are not supported by this version of zcloud-storage yet; remove the key to plan the other storages` }));
    if (issues.length > 0) {
        throw new ConfigValidationError(issues);
    }
}

/** Turns a validated model into resources: namespace, shared drivers, one component per storage. */
export function deployStorages(model: StackModel, opts: pulumi.ComponentResourceOptions = {}): DeployedStorages {
    refuseUnbuiltTypes(model);
    const namespace = storageNamespace(model.namespace, opts);
    const ssh = sshSettings(model);
    const storageClasses: Record<string, pulumi.Output<string>> = {};

    let lvm: LvmStorage[] = [];
    if (model.lvm.length > 0) {
        const driver = new TopolvmDriver(
            "topolvm",
            {
                namespace: namespace.metadata.name,
                imageRegistry: model.imageRegistry,
                snapshots: model.lvm.some((s) => s.thin?.snapshots),
            },
            opts,
        );
        lvm = model.lvm.map(
            (s) =>
                new LvmStorage(
                    s.name,
                    { hosts: s.hosts, nodes: model.nodes, ssh: requireSsh(ssh), driver, isDefault: s.default, wipe: s.wipe, thin: s.thin },
                    opts,
                ),
        );
        lvm.forEach((s, i) => (storageClasses[model.lvm[i].name] = s.storageClassName));
    }

    // One shared csi-driver-nfs for all NFS storages; no per-storage daemons, no node changes.
    let nfs: NfsStorage[] = [];
    if (model.nfs.length > 0) {
        const driver = new CsiDriverNfs("csi-driver-nfs", { namespace: namespace.metadata.name, imageRegistry: model.imageRegistry }, opts);
        nfs = model.nfs.map(
            (s) =>
                new NfsStorage(
                    s.name,
                    { server: s.server, path: s.path, onDelete: s.onDelete, mountOptions: s.mountOptions, isDefault: s.default, driver },
                    opts,
                ),
        );
        nfs.forEach((s, i) => (storageClasses[model.nfs[i].name] = s.storageClassName));
    }

    // CephFS: each storage's identity (fsid, keys, mon Services) first, then the one shared
    // ceph-csi driver whose config lists every cluster, then the storages themselves.
    let cephfs: CephFsStorage[] = [];
    if (model.cephfs.length > 0) {
        const identities = model.cephfs.map((s) => new CephFsIdentity(s.name, { namespace: namespace.metadata.name, hosts: Object.keys(s.hosts) }, opts));
        const driver = new CephCsiDriver(
            "ceph-csi-cephfs",
            { namespace: namespace.metadata.name, imageRegistry: model.imageRegistry, clusters: identities.map((i) => i.csiCluster) },
            opts,
        );
        const kubeConfig = new pulumi.Config("kubernetes");
        const kubeContext = kubeConfig.get("context");
        const kubeconfig = kubeConfig.get("kubeconfig");
        cephfs = model.cephfs.map(
            (s, i) =>
                new CephFsStorage(
                    s.name,
                    {
                        hosts: s.hosts,
                        nodes: model.nodes,
                        ssh: requireSsh(ssh),
                        identity: identities[i],
                        driver,
                        replicas: s.replicas,
                        wipe: s.wipe,
                        isDefault: s.default,
                        imageRegistry: model.imageRegistry,
                        kubeContext,
                        kubeconfig,
                    },
                    opts,
                ),
        );
        cephfs.forEach((s, i) => (storageClasses[model.cephfs[i].name] = s.storageClassName));
    }

    return { namespace: namespace.metadata.name, storageClasses, lvm, nfs, cephfs };
}
