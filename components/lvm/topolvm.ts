import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import { labelDomain, storageLabelKey } from "../naming";
import { controllerDeployment, csiSidecar, downwardEnv, hostDevMount, hostDevVolume, hostPathVolume, kubeletDir, mount, nodeDaemonSet, nodeDriverRegistrar, privileged, registrationDirVolume, unprivileged } from "../k8s/workloads";
import { PolicyRule, csiCapacityRules, csiProvisionerRules, csiSnapshotterRules, leaderElectionRules, serviceAccountWithRoles } from "../k8s/rbac";
import { lvmdSocket, lvmdSocketDir } from "./lvmd";
import { CsiDriverRef } from "../k8s/driverRef";
import { leaderElectionFlags } from "../k8s/leaderElection";
import type { LeaderElectionConfig } from "../config/leaderElection";

export const topolvmDriverName = "topolvm.io";

export interface TopolvmDriverArgs {
    /** The storage namespace (privileged Pod Security level). */
    namespace: pulumi.Input<string>;
    /** Mirror registry for air-gapped sites. */
    imageRegistry?: string;
    /** Run the snapshot sidecar (needs the snapshot CRDs and controller in the cluster). */
    snapshots?: boolean;
    /** The controller's and its sidecars' lease timings; absent, their own defaults. */
    leaderElection?: LeaderElectionConfig;
}

const labels = (component: string) => ({
    "app.kubernetes.io/name": "topolvm",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": "zcloud-storage",
});

/** The topolvm-node pods' labels: the node metrics Service selects them. */
export const topolvmNodeLabels = labels("node");

/** Where topolvm-node serves its volume group and thin pool metrics (its --metrics-bind-address default). */
export const topolvmNodeMetricsPort = 8080;

/** The topolvm-controller pods' labels: the controller metrics Service selects them. */
export const topolvmControllerLabels = labels("controller");

/** Where topolvm-controller serves its own (controller-runtime) metrics: its --metrics-bind-address default. */
export const topolvmControllerMetricsPort = 8080;

const rw = ["get", "list", "watch", "create", "update", "patch", "delete"];
const logicalVolumes = { apiGroups: [topolvmDriverName], resources: ["logicalvolumes", "logicalvolumes/status"], verbs: rw };

/** TopoLVM 0.41.0's controller role (its config/rbac/role.yaml): it updates pods, never deletes them. */
export const topolvmControllerRules: PolicyRule[] = [
    { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch", "patch", "update"] },
    { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "update"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list", "watch", "update", "delete"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses", "csidrivers"], verbs: ["get", "list", "watch"] },
    { apiGroups: [topolvmDriverName], resources: ["logicalvolumes"], verbs: rw },
    { apiGroups: [topolvmDriverName], resources: ["logicalvolumes/status"], verbs: ["get", "patch", "update"] },
];

/** Where the controller's sidecars serve /healthz and metrics (the ports upstream's chart uses). */
export const topolvmSidecarHttpPorts = { provisioner: 9809, resizer: 9810, snapshotter: 9811 } as const;

/**
 * The TopoLVM CSI driver shared by every LVM storage: LogicalVolume CRD, CSIDriver, controller
 * (webhooks off, so no cert-manager) and the node plugin on every node labelled for any LVM
 * storage. Each storage brings its own lvmd (see LvmStorage).
 */
export class TopolvmDriver extends pulumi.ComponentResource implements CsiDriverRef {
    /** StorageClasses and lvmd wait for this: the controller is the provisioner. */
    public readonly controller: k8s.apps.v1.Deployment;
    /** Its StorageClasses wait for the controller, the provisioner. */
    public get ready(): pulumi.Resource[] {
        return [this.controller];
    }
    public readonly nodePlugin: k8s.apps.v1.DaemonSet;
    public readonly driverName = topolvmDriverName;
    public readonly namespace: pulumi.Output<string>;
    public readonly imageRegistry?: string;

    constructor(name: string, args: TopolvmDriverArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:TopolvmDriver", name, {}, opts);
        const child = { parent: this };
        const image = imageRef(images.topolvm, args.imageRegistry);
        this.imageRegistry = args.imageRegistry;
        this.namespace = pulumi.output(args.namespace);

        const crd = this.logicalVolumeCrd(name, child);
        const csiDriver = new k8s.storage.v1.CSIDriver(
            `${name}-csidriver`,
            {
                metadata: { name: topolvmDriverName, labels: labels("csidriver") },
                spec: { attachRequired: false, podInfoOnMount: true, storageCapacity: true, volumeLifecycleModes: ["Persistent"] },
            },
            child,
        );

        const controllerAccount = serviceAccountWithRoles(
            `${name}-controller`,
            {
                namespace: args.namespace,
                labels: labels("controller"),
                clusterRules: [
                    ...topolvmControllerRules,
                    ...csiProvisionerRules,
                    ...(args.snapshots ? csiSnapshotterRules : []),
                ],
                namespaceRules: [...leaderElectionRules, ...csiCapacityRules],
            },
            child,
        );

        const socketDir = "/run/topolvm";
        const csiSocket = `${socketDir}/csi-topolvm.sock`;
        const socketMount = [mount("socket-dir", socketDir)];
        const leader = leaderElectionFlags("--leader-election", args.namespace, args.leaderElection);
        const sidecar = (sidecarName: string, command: string, extra: pulumi.Input<string>[], httpPort?: number, env?: k8s.types.input.core.v1.EnvVar[]) => ({
            ...csiSidecar({
                name: sidecarName,
                image,
                command,
                csiAddress: csiSocket,
                args: [...extra, ...(httpPort ? [`--http-endpoint=:${httpPort}`] : [])],
                volumeMounts: socketMount,
                env,
                ports: httpPort ? [{ name: sidecarName, containerPort: httpPort }] : undefined,
            }),
            securityContext: unprivileged,
        });

        this.controller = controllerDeployment(
            `${name}-controller`,
            {
                namespace: args.namespace,
                labels: topolvmControllerLabels,
                serviceAccountName: controllerAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        name: "topolvm-controller",
                        image,
                        // The socket the sidecars dial, written out (it is also the default).
                        // Its election is always on: no flag enables it.
                        command: ["/topolvm-controller", `--csi-socket=${csiSocket}`, ...leaderElectionFlags(undefined, args.namespace, args.leaderElection), "--enable-webhooks=false"],
                        securityContext: unprivileged,
                        ports: [
                            { name: "healthz", containerPort: 9808 },
                            { name: "readyz", containerPort: 8081 },
                        ],
                        readinessProbe: { httpGet: { path: "/readyz", port: "readyz" } },
                        livenessProbe: { httpGet: { path: "/healthz", port: "healthz" }, initialDelaySeconds: 10, periodSeconds: 60, timeoutSeconds: 3 },
                        volumeMounts: socketMount,
                    },
                    // Capacity tracking lets the scheduler place a pod only where its device class
                    // has room, which is how several LVM storages on disjoint nodes coexist.
                    sidecar(
                        "csi-provisioner",
                        "/csi-provisioner",
                        ["--feature-gates=Topology=true", ...leader, "--enable-capacity", "--capacity-ownerref-level=2"],
                        topolvmSidecarHttpPorts.provisioner,
                        [downwardEnv.namespace, downwardEnv.podName],
                    ),
                    sidecar("csi-resizer", "/csi-resizer", leader, topolvmSidecarHttpPorts.resizer),
                    ...(args.snapshots ? [sidecar("csi-snapshotter", "/csi-snapshotter", leader, topolvmSidecarHttpPorts.snapshotter)] : []),
                    // Serves the controller's /healthz (port 9808) by asking it over the socket.
                    sidecar("liveness-probe", "/livenessprobe", ["--http-endpoint=:9808"]),
                ],
                volumes: [{ name: "socket-dir", emptyDir: {} }],
                // Nothing in the controller pod needs root (upstream's chart runs it as 10000).
                pod: { securityContext: { runAsUser: 10000, runAsGroup: 10000 } },
            },
            { ...child, dependsOn: [crd, csiDriver, ...controllerAccount.ready] },
        );

        const nodeAccount = serviceAccountWithRoles(
            `${name}-node`,
            {
                namespace: args.namespace,
                labels: labels("node"),
                clusterRules: [
                    { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch", "update", "patch"] },
                    logicalVolumes,
                    { apiGroups: ["storage.k8s.io"], resources: ["csidrivers"], verbs: ["get", "list", "watch"] },
                ],
            },
            child,
        );

        const pluginDir = `${kubeletDir}/plugins/${topolvmDriverName}/node`;
        const nodeSocket = `${pluginDir}/csi-topolvm.sock`;
        this.nodePlugin = nodeDaemonSet(
            `${name}-node`,
            {
                namespace: args.namespace,
                labels: labels("node"),
                serviceAccountName: nodeAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        name: "topolvm-node",
                        image,
                        command: ["/topolvm-node", `--csi-socket=${nodeSocket}`, `--lvmd-socket=${lvmdSocket}`],
                        securityContext: privileged,
                        env: [downwardEnv.nodeName],
                        ports: [{ name: "healthz", containerPort: 9808 }],
                        livenessProbe: { httpGet: { path: "/healthz", port: "healthz" }, initialDelaySeconds: 10, periodSeconds: 60, timeoutSeconds: 3 },
                        volumeMounts: [
                            mount("node-plugin-dir", pluginDir),
                            mount("lvmd-socket-dir", lvmdSocketDir),
                            mount("pod-volumes-dir", `${kubeletDir}/pods`, "Bidirectional"),
                            mount("csi-plugin-dir", `${kubeletDir}/plugins/kubernetes.io/csi`, "Bidirectional"),
                            // Since 0.33.0 NodePublishVolume opens /dev/<vg>/<lv> inside the container.
                            hostDevMount,
                        ],
                    },
                    nodeDriverRegistrar({
                        name: "csi-registrar",
                        image,
                        command: "/csi-node-driver-registrar",
                        csiAddress: nodeSocket,
                        kubeletSocket: nodeSocket,
                        socketMounts: [mount("node-plugin-dir", pluginDir)],
                        health: { host: "", port: 9809 },
                        // The image has a shell: drop the registration so kubelet forgets a removed plugin.
                        extra: {
                            lifecycle: {
                                preStop: { exec: { command: ["/bin/sh", "-c", `rm -rf /registration/${topolvmDriverName} /registration/${topolvmDriverName}-reg.sock`] } },
                            },
                        },
                    }),
                    csiSidecar({
                        name: "liveness-probe",
                        image,
                        command: "/livenessprobe",
                        csiAddress: nodeSocket,
                        args: ["--http-endpoint=:9808"],
                        volumeMounts: [mount("node-plugin-dir", pluginDir)],
                    }),
                ],
                volumes: [
                    hostDevVolume,
                    registrationDirVolume,
                    hostPathVolume("node-plugin-dir", pluginDir),
                    hostPathVolume("csi-plugin-dir", `${kubeletDir}/plugins/kubernetes.io/csi`),
                    hostPathVolume("pod-volumes-dir", `${kubeletDir}/pods`),
                    hostPathVolume("lvmd-socket-dir", lvmdSocketDir),
                ],
                // Every node that any LVM storage has labelled ready, whichever storage it is.
                pod: {
                    affinity: {
                        nodeAffinity: {
                            requiredDuringSchedulingIgnoredDuringExecution: {
                                nodeSelectorTerms: [{ matchExpressions: [{ key: storageLabelKey("lvm"), operator: "Exists" }] }],
                            },
                        },
                    },
                },
            },
            // The node plugin watches LogicalVolumes: it starts after their CRD exists.
            { ...child, dependsOn: [crd, csiDriver, ...nodeAccount.ready] },
        );

        this.registerOutputs({ driverName: this.driverName, namespace: this.namespace });
    }

    /**
     * TopoLVM's LogicalVolume resource. The schema names the fields we rely on and keeps unknown
     * ones, so a newer TopoLVM's extra fields are not pruned by the API server.
     *
     * Retained when the last LVM storage goes (`retainOnDelete`): deleting a CRD deletes every
     * LogicalVolume, and their finalizers make the node plugins remove the LVs, that is the data
     * of every volume left behind. An operator removes it by hand once no LogicalVolume is left
     * (docs/drivers.md).
     *
     * Because it outlives the stack's resources, a later LVM storage (this stack after its last
     * one went, or another stack) must adopt it: a plain resource fails with "already exists"
     * (the provider creates, it does not upsert). A server-side-apply patch creates the CRD when
     * it is missing and takes over its fields when it is there (patchForce: the definition is
     * ours at the pinned TopoLVM version).
     */
    private logicalVolumeCrd(name: string, opts: pulumi.CustomResourceOptions) {
        const quantity = { anyOf: [{ type: "integer" }, { type: "string" }], x_kubernetes_int_or_string: true };
        return new k8s.apiextensions.v1.CustomResourceDefinitionPatch(
            `${name}-logicalvolume-crd`,
            {
                metadata: {
                    name: `logicalvolumes.${topolvmDriverName}`,
                    labels: { ...labels("crd"), [`${labelDomain}/driver`]: "topolvm" },
                    annotations: { "pulumi.com/patchForce": "true" },
                },
                spec: {
                    group: topolvmDriverName,
                    names: { kind: "LogicalVolume", listKind: "LogicalVolumeList", plural: "logicalvolumes", singular: "logicalvolume" },
                    scope: "Cluster",
                    versions: [
                        {
                            name: "v1",
                            served: true,
                            storage: true,
                            subresources: { status: {} },
                            schema: {
                                openAPIV3Schema: {
                                    type: "object",
                                    properties: {
                                        apiVersion: { type: "string" },
                                        kind: { type: "string" },
                                        metadata: { type: "object" },
                                        spec: {
                                            type: "object",
                                            required: ["name", "nodeName", "size"],
                                            x_kubernetes_preserve_unknown_fields: true,
                                            properties: {
                                                name: { type: "string" },
                                                nodeName: { type: "string" },
                                                size: quantity,
                                                deviceClass: { type: "string" },
                                                source: { type: "string" },
                                                accessType: { type: "string" },
                                            },
                                        },
                                        status: {
                                            type: "object",
                                            x_kubernetes_preserve_unknown_fields: true,
                                            properties: {
                                                volumeID: { type: "string" },
                                                code: { type: "integer", format: "int32" },
                                                message: { type: "string" },
                                                currentSize: quantity,
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    ],
                },
            },
            { ...opts, retainOnDelete: true },
        );
    }
}
