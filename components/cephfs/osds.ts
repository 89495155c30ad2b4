import * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { DrainKubeTarget, drainKubeArgs } from "../k8s/kubeTarget";
import { hostPathVolume, mount, privileged } from "../k8s/workloads";
import { devicesAnnotationKey, nodeResourceName, storageLabelKey } from "../naming";
import { NodeAddress, SshSettings, needsSudo, nodeConnection, nodeDiskCommand, parseDeviceReport } from "../node/nodeCommand";
import { nodeStorageLabel } from "../node/nodeLabel";
import { renderNodeCommand } from "../node/shipped";
import { nodeWipeArgs } from "../node/wipe";
import { DeviceWipe } from "../config/model";
import { deviceSlug } from "./cluster";
import { CephAdminPods } from "./admin";
import { CephPods, cephPaths } from "./pods";
import { cephScriptCommand, localScriptCommand } from "./scripts";

export interface CephNodeOsdsArgs {
    pods: CephPods;
    node: string;
    /** The node's declared devices, one OSD each. */
    devices: string[];
    address: NodeAddress;
    ssh: SshSettings;
    fsid: pulumi.Output<string>;
    /** The Secret with only the bootstrap-osd key. */
    osdKeys: k8s.core.v1.Secret;
    admin: CephAdminPods;
    /** What the node's OSDs start after: the roll's step before them (the host's ok-to-stop gate). */
    after: pulumi.Resource[];
    /** The storage's wipe setting; this node's share of it goes to the disk command. */
    wipe?: DeviceWipe;
    /** Which cluster the delete-time drain's kubectl talks to: the Kubernetes provider's. */
    kube: DrainKubeTarget;
    /** Bound of each wait of a drain, seconds. */
    drainTimeoutSeconds: number;
}

/** The scripts of a CephFS node's disk command, shared library first. */
export const cephDiskScriptFiles = ["lib.sh", "cephfs-disks.sh"];

export interface CephNodeOsds {
    disks: command.remote.Command;
    /** `declared -> stable` device names the disk command reported. */
    report: pulumi.Output<Array<{ declared: string; stable: string }>>;
    /** Declared device -> its OSD workload and its drain. */
    osds: Record<string, k8s.apps.v1.Deployment>;
    drains: Record<string, command.local.Command>;
}

/**
 * One node's part of the storage: the disk command (guards, never prepares), then the node label,
 * then one OSD workload per device, each with a drain resource whose delete drains, purges and
 * zaps the device before the OSD workload, the label and the disk command go. The disk command
 * and the label depend on nothing of another node (a failing node's disk command blocks no other
 * node's); the OSD workloads start after the host's ok-to-stop gate (the roll, gates.ts).
 */
export function cephNodeOsds(a: CephNodeOsdsArgs): CephNodeOsds {
    const { pods, node, devices } = a;
    const sudo = needsSudo(a.ssh, a.address);
    const diskCommand = (action: "apply" | "release") =>
        a.fsid.apply((f) =>
            renderNodeCommand({
                files: cephDiskScriptFiles,
                name: "cephfs-disks",
                args: [action, ...(action === "apply" ? ["--node", node, ...nodeWipeArgs(a.wipe, node)] : []), "--fsid", f, ...devices],
                sudo,
            }),
        );
    const disks = nodeDiskCommand(
        pods.storage,
        node,
        { connection: nodeConnection(a.ssh, node, a.address), scripts: cephDiskScriptFiles, apply: diskCommand("apply"), release: diskCommand("release") },
        pods.child,
    );
    const label = nodeStorageLabel({ node, type: "cephfs", storage: pods.storage, devices, kube: a.kube }, { ...pods.child, dependsOn: [disks] });
    const osds: Record<string, k8s.apps.v1.Deployment> = {};
    const drains: Record<string, command.local.Command> = {};
    for (const device of devices) {
        const workload = pods.names.osd(node, device);
        osds[device] = osdWorkload(a, device, workload, [disks, label, ...a.after]);
        drains[device] = osdDrain(a, device, workload, [osds[device], label, disks, a.admin.daemonSet]);
    }
    return { disks, report: disks.stdout.apply((out) => parseDeviceReport(out ?? "")), osds, drains };
}

/**
 * The OSD daemon of one declared device: prepares or activates it, then runs (ceph-osd.sh run).
 * A disk that already carries this cluster's label is activated as the OSD the label names, so
 * the workload of a renamed path takes over the same OSD. A replacement deletes the old
 * Deployment first.
 */
function osdWorkload(a: CephNodeOsdsArgs, device: string, workload: string, deps: pulumi.Resource[]): k8s.apps.v1.Deployment {
    const { pods, node } = a;
    return pods.single(
        workload,
        "ceph-osd",
        { ...pods.labels("ceph-osd"), "storage.zcloud.io/ceph-osd": workload },
        pods.pod(
            [pods.keysVolume(a.osdKeys, ["bootstrap-osd"]), hostPathVolume("dev", "/dev", "Directory"), hostPathVolume("run-udev", "/run/udev", "DirectoryOrCreate"), { name: "osd-data", emptyDir: {} }],
            {
                nodeSelector: { "kubernetes.io/hostname": node, [storageLabelKey("cephfs")]: pods.storage },
                priorityClassName: "system-node-critical",
                containers: [
                    pods.container({
                        name: "osd",
                        command: cephScriptCommand("ceph-osd.sh", ["run", "--device", device, "--host", node]),
                        securityContext: privileged,
                        volumeMounts: [...pods.keyedMounts, pods.scriptsMount, mount("dev", "/dev"), mount("run-udev", "/run/udev"), mount("osd-data", `${cephPaths.data}/osd`)],
                        resources: { requests: { cpu: "250m", memory: "2Gi" } },
                    }),
                ],
            },
            ["ceph-osd.sh"],
        ),
        deps,
        { deleteBeforeReplace: true },
    );
}

/**
 * The drain of one device's OSD: nothing on create; its delete (before the OSD workload, the
 * label and the disk command, which it depends on) drains, stops the daemon, purges and zaps,
 * unless the disk is still declared on the node under another path (a rename: the node's
 * devices annotation, already updated when deletes run, says so), which keeps the OSD.
 */
function osdDrain(a: CephNodeOsdsArgs, device: string, workload: string, deps: pulumi.Resource[]): command.local.Command {
    const { pods, node } = a;
    // The drain reads its script sets from these ConfigMaps at delete time (its stub the local
    // one, cephfs-osd-remove.sh the Ceph one); depending on them keeps them until the drain
    // itself is gone or updated (their names are in the delete string state holds).
    const script = pods.scriptSet("ceph-osd-drain.sh");
    const local = pods.scriptSet("cephfs-osd-remove.sh");
    const removeArgs = (fsid: string, ns: string, scriptSet: string) => [
        "--namespace",
        ns,
        "--fsid",
        fsid,
        "--node",
        node,
        "--device",
        device,
        "--devices-annotation",
        devicesAnnotationKey("cephfs"),
        "--admin-selector",
        Object.entries(a.admin.labels).map(([k, v]) => `${k}=${v}`).join(","),
        "--osd-deployment",
        workload,
        "--osd-selector",
        `storage.zcloud.io/ceph-osd=${workload}`,
        "--timeout",
        String(a.drainTimeoutSeconds),
        "--script-configmap",
        scriptSet,
        ...drainKubeArgs(a.kube),
    ];
    return new command.local.Command(
        nodeResourceName(pods.storage, node, `osd-${deviceSlug(device)}-drain`),
        {
            // The fsid comes from state with the command: the drain acts on this cluster only.
            delete: pulumi
                .all([a.fsid, pods.namespace, script.metadata.name, local.metadata.name])
                .apply(([fsid, ns, scriptSet, localSet]) => localScriptCommand("cephfs-osd-remove.sh", localSet, removeArgs(fsid, ns, scriptSet))),
            ...(a.kube.kubeconfigContent ? { environment: { ZCLOUD_DRAIN_KUBECONFIG: pulumi.secret(a.kube.kubeconfigContent) } } : {}),
        },
        {
            ...pods.child,
            dependsOn: [...deps, script, local],
            customTimeouts: { delete: `${Math.ceil((3 * a.drainTimeoutSeconds) / 60) + 5}m` },
        },
    );
}
