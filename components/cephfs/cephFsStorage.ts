import * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import { DeviceWipe } from "../config/model";
import { serviceAccountWithRoles } from "../k8s/rbac";
import { commonLabels } from "../naming";
import { NodeAddress, SshSettings } from "../node/nodeCommand";
import { cephAdminPods } from "./admin";
import { CephCsiDriver } from "./cephCsiDriver";
import { cephNames, initialMonIds, poolReplicas } from "./cluster";
import { cephConfiguration } from "./configuration";
import { cephCsiWiring, cephFilesystem } from "./csi";
import { cephDaemons } from "./daemons";
import { cephMetricsJob } from "./metrics";
import { CephFsIdentity } from "./identity";
import { cephRollOrder } from "./gates";
import { cephMonLeaves } from "./monLeave";
import { cephMons } from "./mons";
import { cephNodeOsds } from "./osds";
import { drainKubeTarget } from "../k8s/kubeTarget";
import { CephPods } from "./pods";
import { CephGates } from "./roll";

export interface CephFsStorageArgs {
    /** Node name -> block devices that become OSDs (one OSD workload per device). */
    hosts: Record<string, string[]>;
    nodes: Record<string, NodeAddress>;
    ssh: SshSettings;
    /** The cluster's fsid, keys and mon Services, made before the shared driver. */
    identity: CephFsIdentity;
    /** The shared ceph-csi CephFS driver. */
    driver: CephCsiDriver;
    /**
     * Pool size; default min(3, hosts). Only a size set here may lower an existing pool's copies
     * (the default falling with the host count is refused on the cluster, ceph-fs.sh).
     */
    replicas?: number;
    /** Whether `replicas` is the stack config's own value (default: whether it is given here). */
    replicasConfigured?: boolean;
    /** Allow wiping devices that carry old signatures. */
    /** Which devices may be wiped when they carry old signatures (see DeviceWipe). */
    wipe?: DeviceWipe;
    isDefault?: boolean;
    imageRegistry?: string;
    /** kubectl context the delete-time OSD drain uses (the stack's kubernetes:context). */
    kubeContext?: string;
    /** The stack's kubernetes:kubeconfig (a path or the content), for the drain's kubectl. */
    kubeconfig?: string;
    /** kubernetes:kubeconfig is a secret: it only travels in the drain's environment. */
    kubeconfigIsSecret?: boolean;
    /** Bound of each wait of a drain (safe-to-destroy, daemon stop) and of a mon's leave, seconds; default 600. */
    drainTimeoutSeconds?: number;
    /** Bound of each health gate's wait of the roll, seconds; default 600. */
    gateTimeoutSeconds?: number;
    /** Monitoring is on: the managers' prometheus module is turned on (a Job; no pod restarts). */
    metrics?: boolean;
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
    /** Per `node:device`, the prepare Job of its OSD (outside the roll). */
    public readonly prepares: Record<string, k8s.batch.v1.Job> = {};
    public readonly osds: Record<string, k8s.apps.v1.Deployment> = {};
    public readonly drains: Record<string, command.local.Command> = {};
    /** Per mon that can go (not the initial one), the resource whose delete takes it out of the monmap. */
    public readonly monLeaves: Record<string, command.local.Command> = {};
    /** The roll's health gates by resource name (gates.ts: cephRollOrder). */
    public readonly gates: Record<string, command.local.Command> = {};

    constructor(name: string, args: CephFsStorageArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:CephFsStorage", name, {}, opts);
        const child = { parent: this };
        const identity = args.identity;
        const namespace = args.driver.namespace;
        const hostNames = Object.keys(args.hosts);
        const replicas = poolReplicas(hostNames.length, args.replicas);

        const { conf, confText, keys, osdKeys } = cephConfiguration({ storage: name, namespace, identity, replicas }, child);
        const account = serviceAccountWithRoles(cephNames(name).admin, { namespace, labels: commonLabels("ceph", name) }, child);
        const pods = new CephPods({ storage: name, namespace, image: imageRef(images.ceph, args.imageRegistry), conf, account, parent: this, confText, keys: identity.keys });
        const kube = drainKubeTarget(args.kubeContext, args.kubeconfig, args.kubeconfigIsSecret);

        const startMon = cephMons({ pods, identity, keys });
        const startMgr = cephDaemons({ pods, type: "mgr", keys });
        const startMds = cephDaemons({ pods, type: "mds", keys });
        const admin = cephAdminPods({ pods, keys });
        const gates = new CephGates({ pods, admin, fsid: identity.fsid, kube, timeoutSeconds: args.gateTimeoutSeconds ?? 600 });
        const leave = cephMonLeaves({ pods, admin, fsid: identity.fsid, kube, timeoutSeconds: args.drainTimeoutSeconds ?? 600 });
        const initialMons = initialMonIds(identity.mons);
        // The mons' leaves, in placement order: each OSD drain depends on all of them, so a change
        // that removes hosts drains their OSDs first, then the mons leave (c, then b).
        const leaves: pulumi.Resource[] = [];

        const reports: Record<string, pulumi.Output<Array<{ declared: string; stable: string }>>> = {};
        // The mons' quorum: the gate after the last mon (set by the roll below before any OSD
        // step); the prepare Jobs start after it, outside the roll.
        let quorum: pulumi.Resource[] = [];
        const nodeOsds = (node: string, after: pulumi.Resource[]): k8s.apps.v1.Deployment[] => {
            const devices = args.hosts[node];
            const address = args.nodes[node];
            if (!address) {
                throw new Error(`CephFsStorage ${name}: node ${node} has no SSH address in nodes`);
            }
            const part = cephNodeOsds({ pods, node, devices, address, ssh: args.ssh, fsid: identity.fsid, osdKeys, admin, after, prepareAfter: quorum, drainAfter: [...leaves], wipe: args.wipe, kube, drainTimeoutSeconds: args.drainTimeoutSeconds ?? 600 });
            this.diskCommands[node] = part.disks;
            reports[node] = part.report;
            for (const device of devices) {
                this.prepares[`${node}:${device}`] = part.prepares[device];
                this.osds[`${node}:${device}`] = part.osds[device];
                this.drains[`${node}:${device}`] = part.drains[device];
            }
            return devices.map((d) => part.osds[d]);
        };

        // The roll (gates.ts): every daemon Deployment and gate after the step before it, so an
        // update of what the pods carry restarts one daemon (one host's OSDs) at a time.
        const workloads: Record<string, pulumi.Resource> = {};
        const mdss: k8s.apps.v1.Deployment[] = [];
        let afterMon = false;
        let previous: pulumi.Resource[] = [];
        for (const step of cephRollOrder(name, args.hosts)) {
            if (step.kind === "gate") {
                const guarded = step.guards.flatMap((w) => (workloads[w] && !previous.includes(workloads[w]) ? [workloads[w]] : []));
                previous = [(this.gates[step.name] = gates.gate(step, [...previous, ...guarded]))];
                if (afterMon) quorum = previous;
                afterMon = false;
                continue;
            }
            const started =
                step.daemon === "mon" ? [startMon(step.id, previous)] : step.daemon === "mgr" ? [startMgr(step.id, previous)] : step.daemon === "osd" ? nodeOsds(step.id, previous) : [startMds(step.id, previous)];
            step.workloads.forEach((w, i) => (workloads[w] = started[i]));
            if (step.daemon === "mon" && !initialMons.includes(step.id)) {
                leaves.push((this.monLeaves[step.id] = leave(step.id, [started[0], identity.monServices[step.id], ...leaves.slice(-1)])));
            }
            afterMon = step.daemon === "mon";
            if (step.daemon === "mds") mdss.push(...started);
            previous = started;
        }
        // A host without devices has no OSD step: its disk command and label only.
        for (const node of Object.keys(args.hosts).filter((n) => this.diskCommands[n] === undefined)) {
            nodeOsds(node, []);
        }
        gates.seal();

        // The file system after the last mds and its gate, then the CSI user, then the StorageClass.
        const filesystem = cephFilesystem({ pods, keys, hosts: hostNames.length, replicas, replicasConfigured: args.replicasConfigured ?? args.replicas !== undefined, mdss: [...mdss, ...previous] });
        const klass = cephCsiWiring({ pods, identity, driver: args.driver, filesystem, isDefault: args.isDefault ?? false });
        if (args.metrics) {
            cephMetricsJob({ pods, keys, after: [filesystem] });
        }

        this.storageClassName = klass.metadata.name;
        this.nodes = pulumi.output(hostNames);
        this.namespace = pulumi.output(namespace);
        this.fsid = identity.fsid;
        this.devices = pulumi.all(reports) as pulumi.Output<Record<string, Array<{ declared: string; stable: string }>>>;
        this.registerOutputs({ storageClassName: this.storageClassName, nodes: this.nodes, devices: this.devices, namespace: this.namespace, fsid: this.fsid });
    }
}
