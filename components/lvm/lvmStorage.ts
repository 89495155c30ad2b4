import * as crypto from "crypto";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { DeviceWipe, ThinConfig } from "../config/model";
import { imageRef, images } from "../images";
import { commonLabels, lvmVolumeGroup, storageLabelKey } from "../naming";
import { NodeAddress, SshSettings, needsSudo, nodeConnection, nodeDiskCommand, parseDeviceReport } from "../node/nodeCommand";
import { nodeStorageLabel } from "../node/nodeLabel";
import { DrainKubeTarget } from "../k8s/kubeTarget";
import { hostDevMount, hostDevVolume, mount, hostPathVolume, nodeDaemonSet, privileged } from "../k8s/workloads";
import { serviceAccountWithRoles } from "../k8s/rbac";
import { storageClass } from "../k8s/storageClass";
import { CsiDriverRef } from "../k8s/driverRef";
import { lvmApplyCommand, lvmReleaseCommand, lvmScriptFiles } from "./commands";
import { lvmdCommand, lvmdConfig, lvmdConfigDir, lvmdSocketDir, thinPoolName } from "./lvmd";

const sha256 = (text: string) => crypto.createHash("sha256").update(text).digest("hex");

export interface LvmStorageArgs {
    /** Node name -> block devices that form the node's volume group. */
    hosts: Record<string, string[]>;
    /** Node name -> SSH endpoint, for every node in `hosts`. */
    nodes: Record<string, NodeAddress>;
    ssh: SshSettings;
    /** The cluster the node label commands' kubectl talks to: the Kubernetes provider's. */
    kube?: DrainKubeTarget;
    /** The shared TopoLVM driver (one per cluster, shared by all LVM storages; deployed by this stack or another). */
    driver: CsiDriverRef;
    /** Make this the cluster's default StorageClass. */
    isDefault?: boolean;
    /** Which devices may be wiped when they carry old signatures (see DeviceWipe). */
    wipe?: DeviceWipe;
    /** Serve volumes from a thin pool with overprovisioning (and snapshots when asked). */
    thin?: ThinConfig;
}

export interface LvmDevice {
    declared: string;
    /** The /dev/disk/by-id name the node reported, or the canonical path when it has none. */
    stable: string;
}

/**
 * Node-local LVM volumes from the named devices: per node one disk command (PV/VG) then the node
 * label; one lvmd DaemonSet selecting the labelled nodes; a StorageClass on the TopoLVM driver.
 */
export class LvmStorage extends pulumi.ComponentResource {
    public readonly storageClassName: pulumi.Output<string>;
    public readonly nodes: pulumi.Output<string[]>;
    public readonly volumeGroup: pulumi.Output<string>;
    /** Node name -> devices with the stable names the node reported. */
    public readonly devices: pulumi.Output<Record<string, LvmDevice[]>>;
    public readonly diskCommands: Record<string, pulumi.Resource> = {};

    constructor(name: string, args: LvmStorageArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:LvmStorage", name, {}, opts);
        const child = { parent: this };
        const vg = lvmVolumeGroup(name);
        const labels = commonLabels("lvmd", name);
        const namespace = args.driver.namespace;

        const reports: Record<string, pulumi.Output<LvmDevice[]>> = {};
        for (const [node, devices] of Object.entries(args.hosts)) {
            const address = args.nodes[node];
            if (!address) {
                throw new Error(`LvmStorage ${name}: node ${node} has no SSH address in nodes`);
            }
            const sudo = needsSudo(args.ssh, address);
            const thin = args.thin && { pool: thinPoolName, percent: args.thin.poolPercent };
            const disks = nodeDiskCommand(
                name,
                node,
                {
                    connection: nodeConnection(args.ssh, node, address),
                    scripts: lvmScriptFiles,
                    apply: lvmApplyCommand({ vg, node, devices, wipe: args.wipe ?? false, thin }, sudo),
                    release: lvmReleaseCommand({ vg }, sudo),
                },
                child,
            );
            this.diskCommands[node] = disks;
            reports[node] = disks.stdout.apply((out) => parseDeviceReport(out ?? ""));
            nodeStorageLabel({ node, type: "lvm", storage: name, devices, kube: args.kube ?? {} }, { ...child, dependsOn: [disks] });
        }

        const lvmdYaml = lvmdConfig({ deviceClass: name, volumeGroup: vg, thin: args.thin });
        const config = new k8s.core.v1.ConfigMap(
            `${name}-lvmd-config`,
            {
                metadata: { name: `lvmd-${name}`, namespace, labels },
                data: { "lvmd.yaml": lvmdYaml },
            },
            child,
        );
        const account = serviceAccountWithRoles(`lvmd-${name}`, { namespace, labels }, child);
        // lvmd drives the host's LVM through nsenter into PID 1, hence hostPID and privileged.
        const lvmd = nodeDaemonSet(
            `lvmd-${name}`,
            {
                namespace,
                labels,
                serviceAccountName: account.serviceAccount.metadata.name,
                // lvmd reads its config at start: a changed config must roll the pods.
                podAnnotations: { "storage.zcloud.io/config-sha256": sha256(lvmdYaml) },
                containers: [
                    {
                        name: "lvmd",
                        image: imageRef(images.topolvm, args.driver.imageRegistry),
                        command: lvmdCommand,
                        securityContext: privileged,
                        livenessProbe: { exec: { command: ["/lvmd", "health"] }, initialDelaySeconds: 10, periodSeconds: 60, timeoutSeconds: 3 },
                        // lvm runs on the host (nsenter into PID 1) but lvmd reads device nodes here.
                        volumeMounts: [hostDevMount, mount("config", lvmdConfigDir), mount("lvmd-socket-dir", lvmdSocketDir)],
                    },
                ],
                volumes: [hostDevVolume, { name: "config", configMap: { name: config.metadata.name } }, hostPathVolume("lvmd-socket-dir", lvmdSocketDir)],
                pod: { hostPID: true, nodeSelector: { [storageLabelKey("lvm")]: name } },
            },
            { ...child, dependsOn: [...account.ready] },
        );

        const sc = storageClass(
            name,
            {
                provisioner: args.driver.driverName,
                isDefault: args.isDefault ?? false,
                parameters: { "topolvm.io/device-class": name, "csi.storage.k8s.io/fstype": "xfs" },
                volumeBindingMode: "WaitForFirstConsumer",
            },
            // Created after (and deleted before) the provisioner and this storage's lvmd.
            { ...child, dependsOn: [...args.driver.ready, lvmd] },
        );

        if (args.thin?.snapshots) {
            new k8s.apiextensions.CustomResource(
                `${name}-snapshotclass`,
                {
                    apiVersion: "snapshot.storage.k8s.io/v1",
                    kind: "VolumeSnapshotClass",
                    metadata: { name, labels: commonLabels("snapshotclass", name) },
                    driver: args.driver.driverName,
                    deletionPolicy: "Delete",
                },
                { ...child, dependsOn: [...args.driver.ready] },
            );
        }

        this.storageClassName = sc.metadata.name;
        this.nodes = pulumi.output(Object.keys(args.hosts));
        this.volumeGroup = pulumi.output(vg);
        this.devices = pulumi.all(reports) as pulumi.Output<Record<string, LvmDevice[]>>;
        this.registerOutputs({
            storageClassName: this.storageClassName,
            nodes: this.nodes,
            volumeGroup: this.volumeGroup,
            devices: this.devices,
        });
    }
}
