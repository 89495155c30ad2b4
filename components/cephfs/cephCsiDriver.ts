import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import type { LeaderElectionConfig } from "../config/leaderElection";
import { leaderElectionFlags } from "../k8s/leaderElection";
import { PolicyRule, csiProvisionerRules, leaderElectionRules, serviceAccountWithRoles } from "../k8s/rbac";
import { controllerDeployment, csiSidecar, downwardEnv, hostDevMount, hostDevVolume, hostPathVolume, kubeletDir, mount, nodeDaemonSet, nodeDriverRegistrar, registrationDirVolume } from "../k8s/workloads";
import { CsiCluster, csiCephConf, renderCsiConfig } from "./cluster";

export const cephFsDriverName = "cephfs.csi.ceph.com";

export interface CephCsiDriverArgs {
    namespace: pulumi.Input<string>;
    imageRegistry?: string;
    /** Every CephFS cluster's fsid and mon addresses (CephFsIdentity.csiCluster). */
    clusters: pulumi.Input<CsiCluster>[];
    /** The provisioner's sidecars' lease timings; absent, their own defaults. */
    leaderElection?: LeaderElectionConfig;
}

const labels = (component: string) => ({
    "app.kubernetes.io/name": "ceph-csi-cephfs",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": "zcloud-storage",
});

/**
 * What ceph-csi's CephFS controller needs besides external-provisioner and external-resizer:
 * the StorageClass's provisioner/expand Secrets. Written from upstream's v3.17 provisioner rules,
 * without the KMS/Vault parts (configmaps, serviceaccount tokens) and snapshots, which we do not use.
 */
export const cephCsiProvisionerRules: PolicyRule[] = [
    ...csiProvisionerRules,
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["update"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims/status"], verbs: ["update"] },
];

/** The node plugin reads its node (domain labels); node-stage Secrets come from kubelet. */
export const cephCsiNodeRules: PolicyRule[] = [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }];

const socketDir = "/csi";
const csiSocket = `${socketDir}/csi.sock`;

/**
 * The one ceph-csi CephFS installation all CephFS storages share (driver `cephfs.csi.ceph.com`):
 * CSIDriver, its config (one entry per cluster: clusterID = fsid, mons = the mon Services'
 * ClusterIPs), the provisioner (plugin, csi-provisioner, csi-resizer) and the node plugin on
 * every node, since any node may mount a RWX volume.
 */
export class CephCsiDriver extends pulumi.ComponentResource {
    public readonly driverName = cephFsDriverName;
    public readonly namespace: pulumi.Output<string>;
    public readonly provisioner: k8s.apps.v1.Deployment;
    public readonly nodePlugin: k8s.apps.v1.DaemonSet;
    public readonly csiConfig: k8s.core.v1.ConfigMap;

    constructor(name: string, args: CephCsiDriverArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:CephCsiDriver", name, {}, opts);
        const child = { parent: this };
        const image = (ref: string) => imageRef(ref, args.imageRegistry);
        this.namespace = pulumi.output(args.namespace);

        const csiDriver = new k8s.storage.v1.CSIDriver(
            `${name}-csidriver`,
            {
                metadata: { name: cephFsDriverName, labels: labels("csidriver") },
                // seLinuxMount: the plugin mounts with the pod's SELinux context (-o context=), so
                // kubelet need not relabel every file of a volume on SELinux hosts.
                spec: { attachRequired: false, podInfoOnMount: false, fsGroupPolicy: "File", seLinuxMount: true, volumeLifecycleModes: ["Persistent"] },
            },
            child,
        );

        this.csiConfig = new k8s.core.v1.ConfigMap(
            `${name}-config`,
            {
                metadata: { name: `${name}-config`, namespace: args.namespace, labels: labels("config") },
                data: { "config.json": pulumi.all(args.clusters).apply((clusters) => renderCsiConfig(clusters)) },
            },
            child,
        );
        const cephConf = new k8s.core.v1.ConfigMap(
            `${name}-ceph-conf`,
            {
                metadata: { name: `${name}-ceph-conf`, namespace: args.namespace, labels: labels("config") },
                data: { "ceph.conf": csiCephConf, keyring: "" },
            },
            child,
        );
        const configVolumes = [
            { name: "ceph-config", configMap: { name: cephConf.metadata.name } },
            { name: "ceph-csi-config", configMap: { name: this.csiConfig.metadata.name } },
            { name: "keys-tmp-dir", emptyDir: { medium: "Memory" } },
        ];
        const configMounts = [mount("ceph-config", "/etc/ceph"), mount("ceph-csi-config", "/etc/ceph-csi-config"), mount("keys-tmp-dir", "/tmp/csi/keys")];
        const pluginArgs = (role: string) => [
            "--nodeid=$(NODE_ID)",
            "--type=cephfs",
            role,
            `--endpoint=unix://${csiSocket}`,
            "--v=2",
            `--drivername=${cephFsDriverName}`,
            "--pidlimit=-1",
            "--enableprofiling=false",
        ];
        const pluginEnv = [{ ...downwardEnv.nodeName, name: "NODE_ID" }, { ...downwardEnv.namespace, name: "POD_NAMESPACE" }];

        const provisionerAccount = serviceAccountWithRoles(
            `${name}-provisioner`,
            { namespace: args.namespace, labels: labels("provisioner"), clusterRules: cephCsiProvisionerRules, namespaceRules: leaderElectionRules },
            child,
        );
        const socketMount = [mount("socket-dir", socketDir)];
        const leader = leaderElectionFlags("--leader-election=true", args.namespace, args.leaderElection);
        // The controller talks to the mgr and mons over the pod network; it mounts nothing.
        this.provisioner = controllerDeployment(
            `${name}-provisioner`,
            {
                namespace: args.namespace,
                labels: labels("provisioner"),
                serviceAccountName: provisionerAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        name: "csi-cephfsplugin",
                        image: image(images.cephCsi),
                        // --setmetadata: the names csi-provisioner sends (--extra-create-metadata:
                        // PVC, its namespace, PV) are kept on the subvolume; without it ceph-csi
                        // drops them and `ceph fs subvolume metadata ls` cannot tell whose it is.
                        args: [...pluginArgs("--controllerserver=true"), "--setmetadata=true"],
                        env: pluginEnv,
                        volumeMounts: [...socketMount, ...configMounts],
                        resources: { requests: { cpu: "10m", memory: "64Mi" } },
                    },
                    csiSidecar({
                        name: "csi-provisioner",
                        image: image(images.cephCsiProvisioner),
                        csiAddress: csiSocket,
                        args: ["--v=1", "--timeout=150s", "--retry-interval-start=500ms", "--extra-create-metadata=true", "--prevent-volume-mode-conversion=true", ...leader],
                        volumeMounts: socketMount,
                    }),
                    csiSidecar({
                        name: "csi-resizer",
                        image: image(images.cephCsiResizer),
                        csiAddress: csiSocket,
                        args: ["--v=1", "--timeout=150s", "--handle-volume-inuse-error=false", ...leader],
                        volumeMounts: socketMount,
                    }),
                ],
                volumes: [{ name: "socket-dir", emptyDir: { medium: "Memory" } }, ...configVolumes],
            },
            { ...child, dependsOn: [csiDriver, ...provisionerAccount.ready] },
        );

        const nodeAccount = serviceAccountWithRoles(
            `${name}-nodeplugin`,
            { namespace: args.namespace, labels: labels("nodeplugin"), clusterRules: cephCsiNodeRules },
            child,
        );
        const pluginDir = `${kubeletDir}/plugins/${cephFsDriverName}`;
        // The kernel CephFS client mounts in the host's network namespace (mon ClusterIPs are
        // reachable there through kube-proxy) and propagates mounts to the pods' volume paths.
        this.nodePlugin = nodeDaemonSet(
            `${name}-nodeplugin`,
            {
                namespace: args.namespace,
                labels: labels("nodeplugin"),
                serviceAccountName: nodeAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        name: "csi-cephfsplugin",
                        image: image(images.cephCsi),
                        args: pluginArgs("--nodeserver=true"),
                        env: pluginEnv,
                        securityContext: { privileged: true, allowPrivilegeEscalation: true, capabilities: { add: ["SYS_ADMIN"] } },
                        volumeMounts: [
                            ...socketMount,
                            mount("mountpoint-dir", `${kubeletDir}/pods`, "Bidirectional"),
                            mount("plugin-dir", `${kubeletDir}/plugins`, "Bidirectional"),
                            mount("host-sys", "/sys"),
                            { name: "etc-selinux", mountPath: "/etc/selinux", readOnly: true },
                            { name: "lib-modules", mountPath: "/lib/modules", readOnly: true },
                            hostDevMount,
                            mount("host-mount", "/run/mount"),
                            mount("mountinfo", "/csi/mountinfo"),
                            ...configMounts,
                        ],
                        resources: { requests: { cpu: "10m", memory: "64Mi" } },
                    },
                    {
                        ...nodeDriverRegistrar({
                            name: "driver-registrar",
                            image: image(images.cephCsiNodeDriverRegistrar),
                            csiAddress: csiSocket,
                            kubeletSocket: `${pluginDir}/csi.sock`,
                            socketMounts: socketMount,
                            args: ["--v=1"],
                        }),
                        // Needed on SELinux hosts to reach the privileged plugin's socket.
                        securityContext: { privileged: true, allowPrivilegeEscalation: true },
                    },
                ],
                volumes: [
                    hostPathVolume("socket-dir", pluginDir),
                    registrationDirVolume,
                    hostPathVolume("mountpoint-dir", `${kubeletDir}/pods`),
                    hostPathVolume("plugin-dir", `${kubeletDir}/plugins`, "Directory"),
                    hostPathVolume("host-sys", "/sys", "Directory"),
                    // Absent on hosts without SELinux: no type check, nothing created.
                    hostPathVolume("etc-selinux", "/etc/selinux", ""),
                    hostPathVolume("lib-modules", "/lib/modules", "Directory"),
                    hostDevVolume,
                    hostPathVolume("host-mount", "/run/mount"),
                    hostPathVolume("mountinfo", `${pluginDir}/mountinfo`),
                    ...configVolumes,
                ],
                pod: { hostNetwork: true, hostPID: true, dnsPolicy: "ClusterFirstWithHostNet", nodeSelector: { "kubernetes.io/os": "linux" } },
            },
            { ...child, dependsOn: [csiDriver, ...nodeAccount.ready] },
        );

        this.registerOutputs({ driverName: this.driverName, namespace: this.namespace });
    }
}
