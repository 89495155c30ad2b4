import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import type { LeaderElectionConfig } from "../config/leaderElection";
import { leaderElectionFlags } from "../k8s/leaderElection";
import { csiProvisionerRules, leaderElectionRules, serviceAccountWithRoles } from "../k8s/rbac";
import { controllerDeployment, csiSidecar, downwardEnv, hostPathVolume, kubeletDir, mount, nodeDaemonSet, nodeDriverRegistrar, privileged, registrationDirVolume } from "../k8s/workloads";
import { storageLabelKey } from "../naming";
import { sanlockIoTimeout } from "./commands";
import { CsiDriverRef } from "../k8s/driverRef";

export const sanlockDriverName = "csi-sanlock-lvm.csi.vleo.net";

export interface CsiSanlockLvmArgs {
    namespace: pulumi.Input<string>;
    imageRegistry?: string;
    /** The controller's sidecars' lease timings; absent, their own defaults. */
    leaderElection?: LeaderElectionConfig;
}

const labels = (component: string) => ({
    "app.kubernetes.io/name": "csi-sanlock-lvm",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": "zcloud-storage",
});

/** The node plugin's socket directory on the host; the controller sidecars share it. */
export const sanlockPluginDir = `${kubeletDir}/plugins/csi-sanlock-lvm`;
const socketDir = "/csi";
const csiSocket = `${socketDir}/csi.sock`;
const lvmctrldSocket = `unix://${socketDir}/lvmctrld.sock`;
export const sanlockHealthPort = 9898;

/** Nodes labelled as initiators of any iSCSI storage: the only nodes that see a LUN. */
const onInitiators = {
    nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: storageLabelKey("iscsi"), operator: "Exists" }] }],
        },
    },
};

/**
 * The csi-sanlock-lvm installation every iSCSI storage shares: CSIDriver, the node plugin
 * (driverd plus lvmctrld, which runs wdmd, sanlock and lvmlockd in the pod) on initiator nodes
 * only, and the provisioner/resizer sidecars, which talk to the driver through a node plugin's
 * socket on the same host (the driver forwards controller work over its on-disk RPC volumes).
 * Written from the upstream v0.4.6 manifests' facts with current sidecars and least privilege.
 */
export class CsiSanlockLvm extends pulumi.ComponentResource implements CsiDriverRef {
    public readonly controller: k8s.apps.v1.Deployment;
    /** Its StorageClasses wait for the controller, the provisioner. */
    public get ready(): pulumi.Resource[] {
        return [this.controller];
    }
    public readonly nodePlugin: k8s.apps.v1.DaemonSet;
    public readonly driverName = sanlockDriverName;
    public readonly namespace: pulumi.Output<string>;

    constructor(name: string, args: CsiSanlockLvmArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:CsiSanlockLvm", name, {}, opts);
        const child = { parent: this };
        const image = (ref: string) => imageRef(ref, args.imageRegistry);
        this.namespace = pulumi.output(args.namespace);

        const csiDriver = new k8s.storage.v1.CSIDriver(
            `${name}-csidriver`,
            {
                metadata: { name: sanlockDriverName, labels: labels("csidriver") },
                // No ControllerPublish capability: nothing to attach. Persistent volumes only.
                spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ["Persistent"] },
            },
            child,
        );

        const socketMount = [mount("socket-dir", socketDir)];
        const socketVolume = hostPathVolume("socket-dir", sanlockPluginDir);

        // The node plugin talks only to kubelet and its own lock daemons: no API permissions.
        const nodeAccount = serviceAccountWithRoles(`${name}-node`, { namespace: args.namespace, labels: labels("node") }, child);
        this.nodePlugin = nodeDaemonSet(
            `${name}-node`,
            {
                namespace: args.namespace,
                labels: labels("node"),
                serviceAccountName: nodeAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        name: "driverd",
                        image: image(images.sanlockDriverd),
                        args: [
                            `--driver-name=${sanlockDriverName}`,
                            `--listen=unix://${csiSocket}`,
                            "--node-name=$(NODE_NAME)",
                            `--lvmctrld=${lvmctrldSocket}`,
                            "--v=2",
                        ],
                        env: [downwardEnv.nodeName],
                        securityContext: privileged,
                        ports: [{ name: "healthz", containerPort: sanlockHealthPort }],
                        // Joining the sanlock lockspace takes minutes: the startup probe allows 10.
                        startupProbe: { httpGet: { path: "/healthz", port: "healthz" }, failureThreshold: 60, periodSeconds: 10 },
                        livenessProbe: { httpGet: { path: "/healthz", port: "healthz" }, failureThreshold: 5, periodSeconds: 10, timeoutSeconds: 3 },
                        volumeMounts: [
                            ...socketMount,
                            mount("pods-mount-dir", `${kubeletDir}/pods`, "Bidirectional"),
                            mount("plugins-dir", `${kubeletDir}/plugins`, "Bidirectional"),
                            mount("dev-dir", "/dev"),
                            { ...mount("modules-dir", "/lib/modules"), readOnly: true },
                        ],
                        resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "256Mi" } },
                    },
                    {
                        name: "lvmctrld",
                        image: image(images.sanlockLvmctrld),
                        args: [
                            `--listen=${lvmctrldSocket}`,
                            // sanlock host id from the node's address (see hostId.ts, checked at plan time).
                            "--lock-host-addr=$(NODE_IP)",
                            `--sanlock-args=-o ${sanlockIoTimeout}`,
                            "--v=2",
                        ],
                        env: [{ name: "NODE_IP", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } }],
                        securityContext: privileged,
                        volumeMounts: [...socketMount, mount("dev-dir", "/dev")],
                        resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } },
                    },
                    nodeDriverRegistrar({
                        name: "node-driver-registrar",
                        image: image(images.sanlockNodeDriverRegistrar),
                        csiAddress: csiSocket,
                        kubeletSocket: `${sanlockPluginDir}/csi.sock`,
                        socketMounts: socketMount,
                        args: ["--v=2"],
                    }),
                    csiSidecar({
                        name: "liveness-probe",
                        image: image(images.sanlockLivenessProbe),
                        csiAddress: csiSocket,
                        args: ["--probe-timeout=3s", `--http-endpoint=:${sanlockHealthPort}`],
                        volumeMounts: socketMount,
                    }),
                ],
                volumes: [
                    socketVolume,
                    hostPathVolume("pods-mount-dir", `${kubeletDir}/pods`, "Directory"),
                    hostPathVolume("plugins-dir", `${kubeletDir}/plugins`, "Directory"),
                    hostPathVolume("dev-dir", "/dev", "Directory"),
                    hostPathVolume("modules-dir", "/lib/modules", "Directory"),
                    registrationDirVolume,
                ],
                pod: { affinity: onInitiators },
            },
            { ...child, dependsOn: [csiDriver, ...nodeAccount.ready] },
        );

        const controllerAccount = serviceAccountWithRoles(
            `${name}-controller`,
            { namespace: args.namespace, labels: labels("controller"), clusterRules: csiProvisionerRules, namespaceRules: leaderElectionRules },
            child,
        );
        const leader = leaderElectionFlags("--leader-election", args.namespace, args.leaderElection);
        const sidecar = (sidecarName: string, ref: string, extra: pulumi.Input<string>[]) => ({
            ...csiSidecar({ name: sidecarName, image: image(ref), csiAddress: csiSocket, args: ["--v=2", ...leader, ...extra], volumeMounts: socketMount }),
            securityContext: { capabilities: { drop: ["ALL"] } },
        });
        this.controller = controllerDeployment(
            `${name}-controller`,
            {
                namespace: args.namespace,
                labels: labels("controller"),
                serviceAccountName: controllerAccount.serviceAccount.metadata.name,
                // The sidecars reach the driver through a node plugin's socket on their host.
                replicas: 1,
                strategy: { type: "Recreate" },
                containers: [
                    sidecar("csi-provisioner", images.sanlockProvisioner, ["--timeout=300s", "--feature-gates=VolumeAttributesClass=false"]),
                    sidecar("csi-resizer", images.sanlockResizer, ["--timeout=300s", "--feature-gates=VolumeAttributesClass=false"]),
                ],
                volumes: [socketVolume],
                pod: {
                    affinity: {
                        ...onInitiators,
                        podAffinity: {
                            requiredDuringSchedulingIgnoredDuringExecution: [
                                { labelSelector: { matchLabels: labels("node") }, topologyKey: "kubernetes.io/hostname" },
                            ],
                        },
                    },
                },
            },
            { ...child, dependsOn: [csiDriver, this.nodePlugin, ...controllerAccount.ready] },
        );

        this.registerOutputs({ driverName: this.driverName, namespace: this.namespace });
    }
}
