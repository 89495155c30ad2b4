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
import { CephPods, Container, cephPaths, PodSpec, PodTemplate } from "./pods";
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
    /**
     * What the node's prepare Jobs start after: the mons' quorum (the last mon's gate), never a
     * step of the OSD roll, so every device of every node prepares at once on a creation.
     */
    prepareAfter: pulumi.Resource[];
    /**
     * What the drains depend on besides their OSD: the mons' leave resources, so that on a shrink
     * the drains (deleted first) run while every mon is still in the quorum.
     */
    drainAfter: pulumi.Resource[];
    /** The storage's wipe setting; this node's share of it goes to the disk command. */
    wipe?: DeviceWipe;
    /** Which cluster the delete-time drain's kubectl talks to: the Kubernetes provider's. */
    kube: DrainKubeTarget;
    /** Bound of each wait of a drain, seconds. */
    drainTimeoutSeconds: number;
}

/** The scripts of a CephFS node's disk command, shared library first. */
export const cephDiskScriptFiles = ["lib.sh", "partition-guard.sh", "cephfs-disks.sh"];

export interface CephNodeOsds {
    disks: command.remote.Command;
    /** `declared -> stable` device names the disk command reported. */
    report: pulumi.Output<Array<{ declared: string; stable: string }>>;
    /** Declared device -> its prepare Job, its OSD workload and its drain. */
    prepares: Record<string, k8s.batch.v1.Job>;
    osds: Record<string, k8s.apps.v1.Deployment>;
    drains: Record<string, command.local.Command>;
}

/**
 * One node's part of the storage: the disk command (guards, never prepares), then the node label,
 * then one OSD workload per device, each with a drain resource whose delete drains, purges and
 * zaps the device before the OSD workload, the label and the disk command go. The disk command
 * and the label depend on nothing of another node (a failing node's disk command blocks no other
 * node's); the OSD workloads start after the host's ok-to-stop gate (the roll, gates.ts) and
 * after their device's prepare Job, which depends only on its node's disk command and label and
 * on the mons' quorum: outside the roll, so a creation prepares every device at once.
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
    const prepares: Record<string, k8s.batch.v1.Job> = {};
    const osds: Record<string, k8s.apps.v1.Deployment> = {};
    const drains: Record<string, command.local.Command> = {};
    for (const device of devices) {
        const workload = pods.names.osd(node, device);
        prepares[device] = osdPrepareJob(a, device, [disks, label, ...a.prepareAfter]);
        osds[device] = osdWorkload(a, device, workload, [disks, label, prepares[device], ...a.after]);
        drains[device] = osdDrain(a, device, workload, [osds[device], label, disks, a.admin.daemonSet, ...a.drainAfter]);
    }
    return { disks, report: disks.stdout.apply((out) => parseDeviceReport(out ?? "")), prepares, osds, drains };
}

/** The host directory of the OSD devices' prepare locks (ceph-osd.sh od_lock's default), at the same path in the pods. */
export const osdLockDir = "/run/zcloud/ceph-osd-locks";

/**
 * The pod of one device's OSD step: ceph-osd.sh `<action>` on the node, privileged, with the
 * node's /dev and udev database, the bootstrap-osd key and the host's prepare locks. The OSD
 * workload runs `run`, the prepare Job `prepare-only`: one prepare function, one lock.
 */
function osdPod(a: CephNodeOsdsArgs, device: string, action: "run" | "prepare-only", extra: Partial<PodSpec>, resources: Container["resources"]): PodTemplate {
    const { pods, node } = a;
    return pods.pod(
        [
            pods.keysVolume(a.osdKeys, ["bootstrap-osd"]),
            hostPathVolume("dev", "/dev", "Directory"),
            hostPathVolume("run-udev", "/run/udev", "DirectoryOrCreate"),
            { name: "osd-data", emptyDir: {} },
            hostPathVolume("osd-locks", osdLockDir, "DirectoryOrCreate"),
        ],
        {
            nodeSelector: { "kubernetes.io/hostname": node, [storageLabelKey("cephfs")]: pods.storage },
            priorityClassName: "system-node-critical",
            ...extra,
            containers: [
                pods.container({
                    name: action === "run" ? "osd" : "prepare",
                    command: cephScriptCommand("ceph-osd.sh", [action, "--device", device, "--host", node]),
                    securityContext: privileged,
                    volumeMounts: [
                        ...pods.keyedMounts,
                        pods.scriptsMount,
                        mount("dev", "/dev"),
                        mount("run-udev", "/run/udev"),
                        mount("osd-data", `${cephPaths.data}/osd`),
                        mount("osd-locks", osdLockDir),
                    ],
                    resources,
                }),
            ],
        },
        ["ceph-osd.sh"],
    );
}

/**
 * The prepare Job of one declared device: `ceph-osd.sh prepare-only` on its node, after its
 * node's disk command and label and the mons' quorum only (no gate of the OSD roll), so on a
 * creation every device of every node prepares while the mgrs and the earlier hosts' OSDs come
 * up; the device's OSD workload starts after it and finds its OSD prepared. A device already
 * carrying this cluster's OSD is left untouched (an existing stack's Jobs do nothing). A Job
 * runs once: its spec is ignored after creation (a new image or script set would replace it and
 * prepare nothing new: the OSD pod prepares anyway), and its delete releases nothing (the drain
 * does).
 */
function osdPrepareJob(a: CephNodeOsdsArgs, device: string, deps: pulumi.Resource[]): k8s.batch.v1.Job {
    const { pods, node } = a;
    const name = pods.names.osdPrepare(node, device);
    const labels = { ...pods.labels("ceph-osd-prepare"), "storage.zcloud.io/ceph-osd-prepare": name };
    return new k8s.batch.v1.Job(
        nodeResourceName(pods.storage, node, `osd-${deviceSlug(device)}-prepare`),
        {
            metadata: { name, namespace: pods.namespace, labels },
            spec: {
                backoffLimit: 4,
                template: pods.template(labels, osdPod(a, device, "prepare-only", { restartPolicy: "OnFailure" }, { requests: { cpu: "100m", memory: "512Mi" } })),
            },
        },
        { ...pods.child, dependsOn: [...deps, ...pods.account.ready], ignoreChanges: ["spec"], customTimeouts: { create: "15m", update: "15m" } },
    );
}

/**
 * The OSD daemon of one declared device: prepares or activates it, then runs (ceph-osd.sh run).
 * A disk that already carries this cluster's label is activated as the OSD the label names, so
 * the workload of a renamed path takes over the same OSD. A replacement deletes the old
 * Deployment first.
 */
function osdWorkload(a: CephNodeOsdsArgs, device: string, workload: string, deps: pulumi.Resource[]): k8s.apps.v1.Deployment {
    const { pods } = a;
    return pods.single(
        workload,
        "ceph-osd",
        { ...pods.labels("ceph-osd"), "storage.zcloud.io/ceph-osd": workload },
        osdPod(a, device, "run", {}, { requests: { cpu: "250m", memory: "2Gi" } }),
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
    // The drain reads its script sets and the library from these ConfigMaps at delete time (its stub the local
    // one, cephfs-osd-remove.sh the Ceph one); depending on them keeps them until the drain
    // itself is gone or updated (their names are in the delete string state holds).
    const script = pods.scriptSet("ceph-osd-drain.sh");
    const local = pods.scriptSet("cephfs-osd-remove.sh");
    const library = pods.library();
    const removeArgs = (fsid: string, ns: string, scriptSet: string, librarySet: string) => [
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
        "--library-configmap",
        librarySet,
        ...drainKubeArgs(a.kube),
    ];
    return new command.local.Command(
        nodeResourceName(pods.storage, node, `osd-${deviceSlug(device)}-drain`),
        {
            // The fsid comes from state with the command: the drain acts on this cluster only.
            delete: pulumi
                .all([a.fsid, pods.namespace, script.metadata.name, local.metadata.name, library.metadata.name])
                .apply(([fsid, ns, scriptSet, localSet, librarySet]) => localScriptCommand("cephfs-osd-remove.sh", localSet, removeArgs(fsid, ns, scriptSet, librarySet))),
            ...(a.kube.kubeconfigContent ? { environment: { ZCLOUD_DRAIN_KUBECONFIG: pulumi.secret(a.kube.kubeconfigContent) } } : {}),
        },
        {
            ...pods.child,
            dependsOn: [...deps, script, local, library],
            customTimeouts: { delete: `${Math.ceil((3 * a.drainTimeoutSeconds) / 60) + 5}m` },
        },
    );
}
