import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { storageClass } from "../k8s/storageClass";
import { CephCsiDriver } from "./cephCsiDriver";
import { csiCephUser } from "./cluster";
import { CephFsIdentity } from "./identity";
import { CephPods, cephPaths } from "./pods";
import { cephScriptCommand } from "./scripts";

export interface CephFilesystemArgs {
    pods: CephPods;
    /** The Secret with client.admin and the CSI user's key. */
    keys: k8s.core.v1.Secret;
    hosts: number;
    replicas: number;
    /** The stack config sets replicas itself: only then may ceph-fs.sh lower a pool's copies. */
    replicasConfigured: boolean;
    /** The metadata servers (the file system needs one). */
    mdss: pulumi.Resource[];
}

/**
 * The Job that makes the pools, the file system and the CSI subvolume group (ceph-fs.sh), then
 * imports the least-privilege CSI user with the key from state.
 */
export function cephFilesystem(a: CephFilesystemArgs): k8s.batch.v1.Job {
    const { pods } = a;
    const fs = pods.storage;
    return new k8s.batch.v1.Job(
        `${fs}-filesystem`,
        {
            metadata: { name: pods.names.filesystem, namespace: pods.namespace, labels: pods.labels("ceph-fs") },
            spec: {
                backoffLimit: 6,
                template: pods.template(
                    pods.labels("ceph-fs"),
                    pods.pod(
                        [pods.keysVolume(a.keys, ["admin", "csi"])],
                        {
                            restartPolicy: "OnFailure",
                            initContainers: [
                                pods.container({
                                    name: "filesystem",
                                    command: cephScriptCommand("ceph-fs.sh", ["apply", "--fs", fs, "--hosts", String(a.hosts), "--replicas", String(a.replicas), ...(a.replicasConfigured ? ["--replicas-configured"] : [])]),
                                    volumeMounts: [...pods.keyedMounts, pods.scriptsMount],
                                }),
                            ],
                            containers: [
                                pods.container({
                                    name: "csi-user",
                                    command: cephScriptCommand("ceph-keyring.sh", ["import", `client.${csiCephUser}`, "csi", "--key-file", `${cephPaths.keys}/csi`, "--fs", fs]),
                                    volumeMounts: [...pods.keyedMounts, pods.scriptsMount],
                                }),
                            ],
                        },
                        ["ceph-fs.sh", "ceph-keyring.sh"],
                    ),
                ),
            },
        },
        // A Job's template is immutable: a change replaces it (delete first, same name).
        { ...pods.child, dependsOn: [...a.mdss], deleteBeforeReplace: true, customTimeouts: { create: "15m", update: "15m" } },
    );
}

export interface CephCsiWiringArgs {
    pods: CephPods;
    identity: CephFsIdentity;
    driver: CephCsiDriver;
    filesystem: k8s.batch.v1.Job;
    isDefault: boolean;
}

/**
 * The keys of a CephFS storage's CSI Secret, the StorageClass's provisioner, controller-expand
 * and node-stage Secret: ceph-csi reads `adminID`/`adminKey` to provision and expand, and
 * `userID`/`userKey` to mount; the least-privilege CSI user does all three.
 */
export function csiSecretData<K>(user: string, key: K): { userID: string; userKey: K; adminID: string; adminKey: K } {
    return { userID: user, userKey: key, adminID: user, adminKey: key };
}

/** The CSI user's Secret and the StorageClass on the shared ceph-csi driver. */
export function cephCsiWiring(a: CephCsiWiringArgs): k8s.storage.v1.StorageClass {
    const { pods, identity: id } = a;
    const fs = pods.storage;
    const csiSecret = new k8s.core.v1.Secret(
        `${fs}-csi-secret`,
        {
            metadata: { name: pods.names.csiSecret, namespace: pods.namespace, labels: pods.labels("ceph-csi") },
            type: "Opaque",
            stringData: csiSecretData(csiCephUser, id.keys.csi),
        },
        { ...pods.child, dependsOn: [a.filesystem] },
    );
    const parameters = pulumi.all([id.fsid, pods.namespace]).apply(([fsid, ns]) => {
        const secretRef = (prefix: string) => ({
            [`csi.storage.k8s.io/${prefix}-secret-name`]: pods.names.csiSecret,
            [`csi.storage.k8s.io/${prefix}-secret-namespace`]: ns,
        });
        return { clusterID: fsid, fsName: fs, pool: `${fs}-data`, ...secretRef("provisioner"), ...secretRef("controller-expand"), ...secretRef("node-stage") };
    });
    return storageClass(
        fs,
        {
            provisioner: a.driver.driverName,
            isDefault: a.isDefault,
            parameters: parameters as unknown as Record<string, string>,
            volumeBindingMode: "Immediate",
        },
        { ...pods.child, dependsOn: [csiSecret, a.filesystem, a.driver.provisioner, a.driver.nodePlugin] },
    );
}
