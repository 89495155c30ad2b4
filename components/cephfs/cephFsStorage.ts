import * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import { serviceAccountWithRoles } from "../k8s/rbac";
import { storageClass } from "../k8s/storageClass";
import { hostPathVolume, mount, privileged } from "../k8s/workloads";
import { commonLabels, nodeResourceName, storageLabelKey } from "../naming";
import { NodeAddress, SshSettings, needsSudo, nodeConnection, nodeDiskCommand, nodeStorageLabel, parseDeviceReport } from "../node/nodeCommand";
import { readNodeScript, renderNodeCommand, shellQuote } from "../node/script";
import { CephCsiDriver } from "./cephCsiDriver";
import { cephNames, csiCephUser, deviceSlug, initialMonIds, mdsIds, mgrIds, monInitArgs, poolReplicas, renderCephConf } from "./cluster";
import { CephFsIdentity, monLabels } from "./identity";
import { cephScriptCommand, cephScriptText } from "./scripts";

type Container = k8s.types.input.core.v1.Container;
type Volume = k8s.types.input.core.v1.Volume;

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
    /** Bound of each wait of a drain (safe-to-destroy, daemon stop), seconds; default 600. */
    drainTimeoutSeconds?: number;
}

/** Where the Ceph containers find things (ceph-lib.sh settings). */
const paths = { conf: "/etc/ceph", keys: "/etc/zcloud/ceph-keys", data: "/var/lib/ceph" };
const cephEnv = [
    { name: "CEPH_CONF", value: `${paths.conf}/ceph.conf` },
    { name: "ZCLOUD_CEPH_KEYS", value: paths.keys },
    { name: "ZCLOUD_CEPH_DATA", value: paths.data },
];

/**
 * A replicated CephFS from the named devices, run as Kubernetes workloads: mons pinned to their
 * nodes behind fixed ClusterIPs, mgr and mds, one OSD workload per (node, device), the file system
 * and the CSI user, then a StorageClass on the shared ceph-csi driver. Per node: a disk command
 * (guards, never prepares) then the node label. Per OSD: a drain resource whose delete drains,
 * purges and zaps the device before the OSD workload and the node's disk command go.
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
        const id = args.identity;
        const names = cephNames(name);
        const namespace = args.driver.namespace;
        const hostNames = Object.keys(args.hosts);
        const replicas = poolReplicas(hostNames.length, args.replicas);
        const image = imageRef(images.ceph, args.imageRegistry);
        const labels = (component: string) => commonLabels(component, name);
        const fsid = id.fsid;

        // ---- configuration: ceph.conf without keys; keys in Secrets -------------------------
        const conf = new k8s.core.v1.ConfigMap(
            `${name}-ceph-conf`,
            {
                metadata: { name: names.conf, namespace, labels: labels("ceph-conf") },
                data: { "ceph.conf": pulumi.all([fsid, id.monAddresses]).apply(([f, mons]) => renderCephConf({ fsid: f, mons, replicas })) },
            },
            child,
        );
        // Daemons, the admin pods and the filesystem Job: mon., client.admin, bootstrap-osd, csi.
        const keys = new k8s.core.v1.Secret(
            `${name}-ceph-keys`,
            {
                metadata: { name: names.keys, namespace, labels: labels("ceph-keys") },
                type: "Opaque",
                stringData: { mon: id.keys.mon, admin: id.keys.admin, "bootstrap-osd": id.keys["bootstrap-osd"], csi: id.keys.csi },
            },
            child,
        );
        // OSD workloads get only the bootstrap-osd key.
        const osdKeys = new k8s.core.v1.Secret(
            `${name}-ceph-osd-keys`,
            {
                metadata: { name: names.osdKeys, namespace, labels: labels("ceph-keys") },
                type: "Opaque",
                stringData: { "bootstrap-osd": id.keys["bootstrap-osd"] },
            },
            child,
        );
        const confVolume: Volume = { name: "ceph-conf", configMap: { name: conf.metadata.name } };
        const keysVolume = (secret: k8s.core.v1.Secret): Volume => ({ name: "ceph-keys", secret: { secretName: secret.metadata.name, defaultMode: 0o400 } });
        const confMounts = [mount("ceph-conf", paths.conf), { name: "ceph-keys", mountPath: paths.keys, readOnly: true }];
        const cephContainer = (c: Partial<Container> & { name: string }): Container => ({
            image,
            env: cephEnv,
            volumeMounts: confMounts,
            resources: { requests: { cpu: "50m", memory: "128Mi" } },
            ...c,
        });
        const account = serviceAccountWithRoles(names.admin, { namespace, labels: labels("ceph") }, child);
        const sa = account.serviceAccount.metadata.name;
        const podBase = (volumes: Volume[], extra: k8s.types.input.core.v1.PodSpec): k8s.types.input.core.v1.PodSpec => ({
            serviceAccountName: sa,
            automountServiceAccountToken: false,
            volumes: [confVolume, ...volumes],
            ...extra,
        });
        const single = (workload: string, component: string, podLabels: Record<string, string>, spec: k8s.types.input.core.v1.PodSpec, deps: pulumi.Resource[]) =>
            new k8s.apps.v1.Deployment(
                workload,
                {
                    metadata: { name: workload, namespace, labels: labels(component) },
                    spec: {
                        replicas: 1,
                        // Never two daemons of one id (or on one store) at once.
                        strategy: { type: "Recreate" },
                        selector: { matchLabels: podLabels },
                        template: { metadata: { labels: podLabels }, spec },
                    },
                },
                { ...child, dependsOn: [...deps, ...account.ready], customTimeouts: { create: "10m", update: "10m", delete: "10m" } },
            );

        // ---- mons: pinned to their node, store on a host path, address = Service ClusterIP -------
        // Mons are independent workloads (no dependsOn between them): a mon that is not initial
        // waits for a quorum in its init step (exit 3, the pod retries), so no node's mon waits
        // on another node's rollout. See docs/cephfs.md.
        const initialMons = initialMonIds(id.mons);
        const mons = id.mons.map((m) => {
            const svc = id.monServices[m.id];
            const podLabels = monLabels(name, m.id);
            return single(
                names.mon(m.id),
                "ceph-mon",
                podLabels,
                podBase([keysVolume(keys), hostPathVolume("mon-store", `${names.hostDir}/mon`)], {
                    nodeSelector: { "kubernetes.io/hostname": m.node },
                    priorityClassName: "system-cluster-critical",
                    initContainers: [
                        cephContainer({
                            name: "mon-init",
                            command: id.monAddresses.apply((a) => cephScriptCommand("ceph-mon-init.sh", monInitArgs(m.id, a, initialMons))),
                            volumeMounts: [...confMounts, mount("mon-store", `${paths.data}/mon`)],
                        }),
                    ],
                    containers: [
                        cephContainer({
                            name: "mon",
                            command: [
                                "ceph-mon",
                                "--foreground",
                                "--id",
                                m.id,
                                "--setuser",
                                "ceph",
                                "--setgroup",
                                "ceph",
                                pulumi.interpolate`--public-addr=${svc.spec.clusterIP}`,
                                "--public-bind-addr=$(POD_IP)",
                            ],
                            env: [...cephEnv, { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
                            ports: [
                                { name: "msgr2", containerPort: 3300 },
                                { name: "msgr1", containerPort: 6789 },
                            ],
                            volumeMounts: [...confMounts, mount("mon-store", `${paths.data}/mon`)],
                        }),
                    ],
                }),
                [svc],
            );
        });

        // ---- mgr and mds: keyring made by ceph-keyring.sh, data in an emptyDir ----------------
        const daemon = (type: "mgr" | "mds", daemonId: string, deps: pulumi.Resource[]) => {
            const podLabels = { ...labels(`ceph-${type}`), [`storage.zcloud.io/ceph-${type}`]: daemonId };
            const spread = { ...labels(`ceph-${type}`) };
            return single(
                type === "mgr" ? names.mgr(daemonId) : names.mds(daemonId),
                `ceph-${type}`,
                podLabels,
                podBase([keysVolume(keys), { name: "data", emptyDir: {} }], {
                    affinity: {
                        podAntiAffinity: {
                            preferredDuringSchedulingIgnoredDuringExecution: [
                                { weight: 100, podAffinityTerm: { labelSelector: { matchLabels: spread }, topologyKey: "kubernetes.io/hostname" } },
                            ],
                        },
                    },
                    initContainers: [
                        cephContainer({
                            name: "keyring",
                            command: cephScriptCommand("ceph-keyring.sh", ["daemon", type, daemonId]),
                            volumeMounts: [...confMounts, mount("data", `${paths.data}/${type}`)],
                        }),
                    ],
                    containers: [
                        cephContainer({
                            name: type,
                            command: [`ceph-${type}`, "--foreground", "--id", daemonId, "--setuser", "ceph", "--setgroup", "ceph"],
                            volumeMounts: [...confMounts, mount("data", `${paths.data}/${type}`)],
                        }),
                    ],
                }),
                deps,
            );
        };
        const mgrs = mgrIds(hostNames.length).map((d) => daemon("mgr", d, mons));

        // ---- admin pods: one per storage node (privileged, /dev): drains, purges and zaps -------
        const adminLabels = labels("ceph-admin");
        const admin = new k8s.apps.v1.DaemonSet(
            names.admin,
            {
                metadata: { name: names.admin, namespace, labels: adminLabels },
                spec: {
                    selector: { matchLabels: adminLabels },
                    template: {
                        metadata: { labels: adminLabels },
                        spec: podBase([keysVolume(keys), hostPathVolume("dev", "/dev", "Directory")], {
                            nodeSelector: { [storageLabelKey("cephfs")]: name },
                            tolerations: [{ operator: "Exists" }],
                            containers: [
                                cephContainer({
                                    name: "admin",
                                    command: ["sleep", "infinity"],
                                    securityContext: privileged,
                                    volumeMounts: [...confMounts, mount("dev", "/dev")],
                                }),
                            ],
                        }),
                    },
                },
            },
            { ...child, dependsOn: [...mons, ...account.ready] },
        );

        // ---- per node: disk command -> label -> OSD workloads -> drain resources --------------
        const reports: Record<string, pulumi.Output<Array<{ declared: string; stable: string }>>> = {};
        const drainScript = cephScriptText("ceph-osd-drain.sh");
        const osdList: k8s.apps.v1.Deployment[] = [];
        for (const [node, devices] of Object.entries(args.hosts)) {
            const address = args.nodes[node];
            if (!address) {
                throw new Error(`CephFsStorage ${name}: node ${node} has no SSH address in nodes`);
            }
            const sudo = needsSudo(args.ssh, address);
            const diskArgs = (action: "apply" | "release", f: string) => [action, ...(action === "apply" && args.wipe ? ["--wipe"] : []), "--fsid", f, ...devices];
            const disks = nodeDiskCommand(
                name,
                node,
                {
                    connection: nodeConnection(args.ssh, node, address),
                    apply: fsid.apply((f) => renderNodeCommand({ files: ["lib.sh", "cephfs-disks.sh"], name: "cephfs-disks", args: diskArgs("apply", f), sudo })),
                    release: fsid.apply((f) => renderNodeCommand({ files: ["lib.sh", "cephfs-disks.sh"], name: "cephfs-disks", args: diskArgs("release", f), sudo })),
                },
                child,
            );
            this.diskCommands[node] = disks;
            reports[node] = disks.stdout.apply((out) => parseDeviceReport(out ?? ""));
            const label = nodeStorageLabel({ node, type: "cephfs", storage: name, devices }, { ...child, dependsOn: [disks] });

            for (const device of devices) {
                const workload = names.osd(node, device);
                const podLabels = { ...labels("ceph-osd"), "storage.zcloud.io/ceph-osd": workload };
                // Only this node's disk command and label (and the cluster's mgr): a failing node
                // blocks none of the other nodes' OSDs.
                const osd = single(
                    workload,
                    "ceph-osd",
                    podLabels,
                    podBase(
                        [
                            keysVolume(osdKeys),
                            hostPathVolume("dev", "/dev", "Directory"),
                            hostPathVolume("run-udev", "/run/udev", "DirectoryOrCreate"),
                            { name: "osd-data", emptyDir: {} },
                        ],
                        {
                            nodeSelector: { "kubernetes.io/hostname": node, [storageLabelKey("cephfs")]: name },
                            priorityClassName: "system-node-critical",
                            containers: [
                                cephContainer({
                                    name: "osd",
                                    command: cephScriptCommand("ceph-osd.sh", ["run", "--device", device, "--host", node]),
                                    securityContext: privileged,
                                    volumeMounts: [...confMounts, mount("dev", "/dev"), mount("run-udev", "/run/udev"), mount("osd-data", `${paths.data}/osd`)],
                                    resources: { requests: { cpu: "250m", memory: "2Gi" } },
                                }),
                            ],
                        },
                    ),
                    [disks, label, ...mgrs],
                );
                this.osds[`${node}:${device}`] = osd;
                osdList.push(osd);

                // Deleted before the OSD workload, the label and the disk command (it depends on
                // them): its delete drains, stops the daemon, purges and zaps.
                const removeArgs = [
                    "--namespace",
                    "NAMESPACE",
                    "--node",
                    node,
                    "--device",
                    device,
                    "--admin-selector",
                    Object.entries(adminLabels).map(([k, v]) => `${k}=${v}`).join(","),
                    "--osd-deployment",
                    workload,
                    "--osd-selector",
                    `storage.zcloud.io/ceph-osd=${workload}`,
                    "--timeout",
                    String(args.drainTimeoutSeconds ?? 600),
                    ...(args.kubeContext ? ["--context", args.kubeContext] : []),
                ];
                const drain = new command.local.Command(
                    nodeResourceName(name, node, `osd-${deviceSlug(device)}-drain`),
                    {
                        delete: pulumi
                            .output(namespace)
                            .apply((ns) =>
                                ["sh", "-c", shellQuote(readNodeScript("cephfs-osd-remove.sh")), "cephfs-osd-remove", ...removeArgs.map((a) => shellQuote(a === "NAMESPACE" ? ns : a))].join(" "),
                            ),
                        environment: { ZCLOUD_CEPH_DRAIN_SCRIPT: drainScript },
                    },
                    {
                        ...child,
                        dependsOn: [osd, label, disks, admin],
                        customTimeouts: { delete: `${Math.ceil((3 * (args.drainTimeoutSeconds ?? 600)) / 60) + 5}m` },
                    },
                );
                this.drains[`${node}:${device}`] = drain;
            }
        }

        // ---- mds after the OSDs, then the file system and the CSI user -------------------------
        const mdss = mdsIds.map((d) => daemon("mds", d, [...mgrs, ...osdList]));
        const fsJob = new k8s.batch.v1.Job(
            `${name}-filesystem`,
            {
                metadata: { name: names.filesystem, namespace, labels: labels("ceph-fs") },
                spec: {
                    backoffLimit: 6,
                    template: {
                        metadata: { labels: labels("ceph-fs") },
                        spec: podBase([keysVolume(keys)], {
                            restartPolicy: "OnFailure",
                            initContainers: [
                                cephContainer({
                                    name: "filesystem",
                                    command: cephScriptCommand("ceph-fs.sh", ["apply", "--fs", name, "--hosts", String(hostNames.length), "--replicas", String(replicas)]),
                                }),
                            ],
                            containers: [
                                cephContainer({
                                    name: "csi-user",
                                    command: cephScriptCommand("ceph-keyring.sh", ["import", `client.${csiCephUser}`, "csi", "--key-file", `${paths.keys}/csi`, "--fs", name]),
                                }),
                            ],
                        }),
                    },
                },
            },
            // A Job's template is immutable: a change replaces it (delete first, same name).
            { ...child, dependsOn: [...mdss], deleteBeforeReplace: true, customTimeouts: { create: "15m", update: "15m" } },
        );

        // ---- CSI: the least-privilege CSI user provisions and mounts ---------------------------
        const csiSecret = new k8s.core.v1.Secret(
            `${name}-csi-secret`,
            {
                metadata: { name: names.csiSecret, namespace, labels: labels("ceph-csi") },
                type: "Opaque",
                stringData: { userID: csiCephUser, userKey: id.keys.csi, adminID: csiCephUser, adminKey: id.keys.csi },
            },
            { ...child, dependsOn: [fsJob] },
        );
        const secretParams = (prefix: string) => ({
            [`csi.storage.k8s.io/${prefix}-secret-name`]: names.csiSecret,
            [`csi.storage.k8s.io/${prefix}-secret-namespace`]: "NAMESPACE",
        });
        const sc = pulumi.all([fsid, namespace]).apply(([f, ns]) => ({ f, ns }));
        const params = sc.apply(({ f, ns }) =>
            Object.fromEntries(
                Object.entries({
                    clusterID: f,
                    fsName: name,
                    pool: `${name}-data`,
                    ...secretParams("provisioner"),
                    ...secretParams("controller-expand"),
                    ...secretParams("node-stage"),
                }).map(([k, v]) => [k, v === "NAMESPACE" ? ns : v]),
            ),
        );
        const klass = storageClass(
            name,
            {
                provisioner: args.driver.driverName,
                isDefault: args.isDefault ?? false,
                parameters: params as unknown as Record<string, string>,
                volumeBindingMode: "Immediate",
            },
            { ...child, dependsOn: [csiSecret, fsJob, args.driver.provisioner, args.driver.nodePlugin] },
        );

        this.storageClassName = klass.metadata.name;
        this.nodes = pulumi.output(hostNames);
        this.namespace = pulumi.output(namespace);
        this.fsid = fsid;
        this.devices = pulumi.all(reports) as pulumi.Output<Record<string, Array<{ declared: string; stable: string }>>>;
        this.registerOutputs({ storageClassName: this.storageClassName, nodes: this.nodes, devices: this.devices, namespace: this.namespace, fsid: this.fsid });
    }
}
