import * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import { serviceAccountWithRoles } from "../k8s/rbac";
import { commonLabels } from "../naming";
import { NodeAddress, SshSettings } from "../node/nodeCommand";
import { cephAdminPods } from "./admin";
import { CephCsiDriver } from "./cephCsiDriver";
import { cephNames, mdsIds, mgrIds, poolReplicas } from "./cluster";
import { cephConfiguration } from "./configuration";
import { cephCsiWiring, cephFilesystem } from "./csi";
import { cephDaemons } from "./daemons";
import { CephFsIdentity } from "./identity";
import { cephMons } from "./mons";
import { cephNodeOsds, drainKubeTarget } from "./osds";
import { CephPods } from "./pods";

export interface CephFsStorageArgs {
    /** Node name -> block devices that become OSDs (one OSD workload per device). */
    hosts: Record<string, string[]>;
    nodes: Record<string, NodeAddress>;
    ssh: SshSettings;
    /** The cluster's fsid, keys and mon Services, made before the shared driver. */
    identity: CephFsIdentity;
    /** The shared ceph-csi CephFS driver. */
    driver: CephCsiDriver;
    /** Pool size; default min(3, hosts). */
    replicas?: number;
    /** Allow wiping devices that carry old signatures. */
    wipe?: boolean;
    isDefault?: boolean;
    imageRegistry?: string;
    /** kubectl context the delete-time OSD drain uses (the stack's kubernetes:context). */
    kubeContext?: string;
    /** The stack's kubernetes:kubeconfig (a path or the content), for the drain's kubectl. */
    kubeconfig?: string;
    /** kubernetes:kubeconfig is a secret: it only travels in the drain's environment. */
    kubeconfigIsSecret?: boolean;
    /** Bound of each wait of a drain (safe-to-destroy, daemon stop), seconds; default 600. */
    drainTimeoutSeconds?: number;
}

/**
 * A replicated CephFS from the named devices, run as Kubernetes workloads, composed from one
 * function per concern: configuration and keys (configuration.ts), mons (mons.ts), mgr and mds
 * (daemons.ts), admin pods (admin.ts), per node the disk command, label, OSD workloads and their
 * drains (osds.ts), then the file system and the CSI wiring (csi.ts). Shared pod wiring lives in
 * pods.ts. See docs/cephfs.md.
 */
export class CephFsStorage extends pulumi.ComponentResource {
    public readonly storageClassName: pulumi.Output<string>;
    public readonly nodes: pulumi.Output<string[]>;
    public readonly devices: pulumi.Output<Record<string, Array<{ declared: string; stable: string }>>>;
    public readonly namespace: pulumi.Output<string>;
    public readonly fsid: pulumi.Output<string>;
    public readonly diskCommands: Record<string, command.remote.Command> = {};
    public readonly osds: Record<string, k8s.apps.v1.Deployment> = {};
    public readonly drains: Record<string, command.local.Command> = {};

    constructor(name: string, args: CephFsStorageArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:CephFsStorage", name, {}, opts);
        const child = { parent: this };
        const identity = args.identity;
        const namespace = args.driver.namespace;
        const hostNames = Object.keys(args.hosts);
        const replicas = poolReplicas(hostNames.length, args.replicas);

        const { conf, keys, osdKeys } = cephConfiguration({ storage: name, namespace, identity, replicas }, child);
        const account = serviceAccountWithRoles(cephNames(name).admin, { namespace, labels: commonLabels("ceph", name) }, child);
        const pods = new CephPods({ storage: name, namespace, image: imageRef(images.ceph, args.imageRegistry), conf, account, parent: this });

        const mons = cephMons({ pods, identity, keys });
        const mgrs = cephDaemons({ pods, type: "mgr", ids: mgrIds(hostNames.length), keys, dependsOn: mons });
        const admin = cephAdminPods({ pods, keys, mons });

        const reports: Record<string, pulumi.Output<Array<{ declared: string; stable: string }>>> = {};
        const osdList: k8s.apps.v1.Deployment[] = [];
        for (const [node, devices] of Object.entries(args.hosts)) {
            const address = args.nodes[node];
            if (!address) {
                throw new Error(`CephFsStorage ${name}: node ${node} has no SSH address in nodes`);
            }
            const part = cephNodeOsds({
                pods,
                node,
                devices,
                address,
                ssh: args.ssh,
                fsid: identity.fsid,
                osdKeys,
                admin,
                mgrs,
                wipe: args.wipe,
                kube: drainKubeTarget(args.kubeContext, args.kubeconfig, args.kubeconfigIsSecret),
                drainTimeoutSeconds: args.drainTimeoutSeconds ?? 600,
            });
            this.diskCommands[node] = part.disks;
            reports[node] = part.report;
            for (const device of devices) {
                this.osds[`${node}:${device}`] = part.osds[device];
                this.drains[`${node}:${device}`] = part.drains[device];
                osdList.push(part.osds[device]);
            }
        }

        // mds after the OSDs, then the file system and the CSI user, then the StorageClass.
        const mdss = cephDaemons({ pods, type: "mds", ids: mdsIds, keys, dependsOn: [...mgrs, ...osdList] });
        const filesystem = cephFilesystem({ pods, keys, hosts: hostNames.length, replicas, mdss });
        const klass = cephCsiWiring({ pods, identity, driver: args.driver, filesystem, isDefault: args.isDefault ?? false });

        this.storageClassName = klass.metadata.name;
        this.nodes = pulumi.output(hostNames);
        this.namespace = pulumi.output(namespace);
        this.fsid = identity.fsid;
        this.devices = pulumi.all(reports) as pulumi.Output<Record<string, Array<{ declared: string; stable: string }>>>;
        this.registerOutputs({ storageClassName: this.storageClassName, nodes: this.nodes, devices: this.devices, namespace: this.namespace, fsid: this.fsid });
    }
}
