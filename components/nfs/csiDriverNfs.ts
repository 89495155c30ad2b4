import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { imageRef, images } from "../images";
import type { LeaderElectionConfig } from "../config/leaderElection";
import { leaderElectionFlags } from "../k8s/leaderElection";
import { serviceAccountWithRoles } from "../k8s/rbac";
import { controllerDeployment, csiSidecar, downwardEnv, hostPathVolume, kubeletDir, mount, nodeDaemonSet, nodeDriverRegistrar, registrationDirVolume } from "../k8s/workloads";
import { nfsDriverName } from "./parameters";
import { nfsControllerClusterRules, nfsControllerNamespaceRules } from "./rbac";
import { CsiDriverRef } from "../k8s/driverRef";

export interface CsiDriverNfsArgs {
    /** The storage namespace (privileged Pod Security level). */
    namespace: pulumi.Input<string>;
    /** Mirror registry for air-gapped sites. */
    imageRegistry?: string;
    /** The controller's sidecars' lease timings; absent, their own defaults. */
    leaderElection?: LeaderElectionConfig;
}

const labels = (component: string) => ({
    "app.kubernetes.io/name": "csi-driver-nfs",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": "zcloud-storage",
});

/** Health ports on the host network: liveness sidecars listen on localhost only. */
export const nfsHealthPorts = { controller: 29652, node: 29653, registrar: 19809 } as const;

const socketDir = "/csi";
const csiSocket = `${socketDir}/csi.sock`;

/** The NFS plugin and its mount privileges; the controller mounts the share to make directories. */
const pluginSecurity = {
    privileged: true,
    allowPrivilegeEscalation: true,
    capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] },
};
const sidecarSecurity = { capabilities: { drop: ["ALL"] } };

function pluginContainer(image: string, healthPort: number, extraArgs: string[], volumeMounts: k8s.types.input.core.v1.VolumeMount[]) {
    return {
        name: "nfs",
        image,
        args: ["--v=5", "--nodeid=$(NODE_ID)", `--endpoint=unix://${csiSocket}`, `--drivername=${nfsDriverName}`, "--mount-permissions=0", ...extraArgs],
        env: [{ ...downwardEnv.nodeName, name: "NODE_ID" }],
        securityContext: pluginSecurity,
        // Served by the liveness-probe sidecar, which asks the plugin over its socket.
        livenessProbe: {
            httpGet: { host: "localhost", path: "/healthz", port: healthPort },
            initialDelaySeconds: 30,
            periodSeconds: 30,
            timeoutSeconds: 10,
            failureThreshold: 5,
        },
        volumeMounts,
        resources: { requests: { cpu: "10m", memory: "20Mi" }, limits: { memory: "300Mi" } },
    };
}

/**
 * The one csi-driver-nfs installation every NFS storage shares (driver `nfs.csi.k8s.io`):
 * CSIDriver, the controller (provisioner, resizer, liveness, plugin) that makes, removes and
 * archives one directory per volume by mounting the share itself, and the node plugin on every
 * node. Nothing runs on the NFS server and nothing is done to nodes besides the DaemonSet.
 *
 * Both pods use the host network, as upstream does: the server then sees the nodes' addresses
 * from reserved ports, which is what an export's client list and its default `secure` option
 * accept (a pod address behind masquerading may not be either).
 */
export class CsiDriverNfs extends pulumi.ComponentResource implements CsiDriverRef {
    /** StorageClasses wait for this: the controller is the provisioner. */
    public readonly controller: k8s.apps.v1.Deployment;
    /** Its StorageClasses wait for the controller, the provisioner. */
    public get ready(): pulumi.Resource[] {
        return [this.controller];
    }
    public readonly nodePlugin: k8s.apps.v1.DaemonSet;
    public readonly driverName = nfsDriverName;
    public readonly namespace: pulumi.Output<string>;

    constructor(name: string, args: CsiDriverNfsArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:CsiDriverNfs", name, {}, opts);
        const child = { parent: this };
        const image = (ref: string) => imageRef(ref, args.imageRegistry);
        this.namespace = pulumi.output(args.namespace);

        const csiDriver = new k8s.storage.v1.CSIDriver(
            `${name}-csidriver`,
            {
                metadata: { name: nfsDriverName, labels: labels("csidriver") },
                // No attach step; kubelet applies the pod's fsGroup to the volume's files.
                spec: { attachRequired: false, volumeLifecycleModes: ["Persistent"], fsGroupPolicy: "File" },
            },
            child,
        );

        const controllerAccount = serviceAccountWithRoles(
            `${name}-controller`,
            {
                namespace: args.namespace,
                labels: labels("controller"),
                clusterRules: nfsControllerClusterRules,
                namespaceRules: nfsControllerNamespaceRules,
            },
            child,
        );

        const socketMount = [mount("socket-dir", socketDir)];
        const leader = leaderElectionFlags("--leader-election", args.namespace, args.leaderElection);
        const sidecar = (sidecarName: string, ref: string, extra: pulumi.Input<string>[]) => ({
            ...csiSidecar({ name: sidecarName, image: image(ref), csiAddress: csiSocket, args: ["--v=2", ...extra], volumeMounts: socketMount }),
            securityContext: sidecarSecurity,
        });
        const hostNetwork = {
            hostNetwork: true,
            dnsPolicy: "ClusterFirstWithHostNet",
            nodeSelector: { "kubernetes.io/os": "linux" },
            securityContext: { seccompProfile: { type: "RuntimeDefault" } },
        };

        this.controller = controllerDeployment(
            `${name}-controller`,
            {
                namespace: args.namespace,
                labels: labels("controller"),
                serviceAccountName: controllerAccount.serviceAccount.metadata.name,
                // One replica on the host network (its health port is a host port); Recreate so
                // an update never waits for a second free node. Leader election covers overlaps.
                replicas: 1,
                strategy: { type: "Recreate" },
                containers: [
                    sidecar("csi-provisioner", images.nfsProvisioner, [
                        ...leader,
                        // Namespace, claim and PV names for the subDir pattern.
                        "--extra-create-metadata=true",
                        "--feature-gates=VolumeAttributesClass=false",
                        "--timeout=1200s",
                        "--retry-interval-max=30m",
                    ]),
                    sidecar("csi-resizer", images.nfsResizer, [...leader, "--handle-volume-inuse-error=false", "--feature-gates=VolumeAttributesClass=false"]),
                    {
                        ...sidecar("liveness-probe", images.nfsLivenessProbe, ["--probe-timeout=3s", `--http-endpoint=localhost:${nfsHealthPorts.controller}`]),
                        ports: [{ name: "healthz", containerPort: nfsHealthPorts.controller }],
                    },
                    // Mounts the share under its working directory in its own mount namespace to
                    // create, delete or archive a volume's directory; no host path needed.
                    pluginContainer(image(images.nfsPlugin), nfsHealthPorts.controller, ["--working-mount-dir=/tmp", "--default-ondelete-policy=delete"], [
                        ...socketMount,
                        mount("work-dir", "/tmp"),
                    ]),
                ],
                volumes: [
                    { name: "socket-dir", emptyDir: {} },
                    { name: "work-dir", emptyDir: {} },
                ],
                pod: hostNetwork,
            },
            { ...child, dependsOn: [csiDriver, ...controllerAccount.ready] },
        );

        // The node plugin talks only to kubelet over its socket: no API permissions.
        const nodeAccount = serviceAccountWithRoles(`${name}-node`, { namespace: args.namespace, labels: labels("node") }, child);
        const pluginDir = `${kubeletDir}/plugins/${nfsDriverName}`;
        const podsDir = `${kubeletDir}/pods`;
        this.nodePlugin = nodeDaemonSet(
            `${name}-node`,
            {
                namespace: args.namespace,
                labels: labels("node"),
                serviceAccountName: nodeAccount.serviceAccount.metadata.name,
                containers: [
                    {
                        ...nodeDriverRegistrar({
                            name: "node-driver-registrar",
                            image: image(images.nfsNodeDriverRegistrar),
                            csiAddress: csiSocket,
                            kubeletSocket: `${pluginDir}/csi.sock`,
                            socketMounts: socketMount,
                            health: { host: "localhost", port: nfsHealthPorts.registrar },
                            args: ["--v=2"],
                        }),
                        securityContext: sidecarSecurity,
                    },
                    {
                        ...sidecar("liveness-probe", images.nfsLivenessProbe, ["--probe-timeout=3s", `--http-endpoint=localhost:${nfsHealthPorts.node}`]),
                        ports: [{ name: "liveness", containerPort: nfsHealthPorts.node }],
                    },
                    // Mounts each volume's directory into the pod's volume path on the host.
                    pluginContainer(image(images.nfsPlugin), nfsHealthPorts.node, [], [...socketMount, mount("pods-mount-dir", podsDir, "Bidirectional")]),
                ],
                volumes: [
                    hostPathVolume("socket-dir", pluginDir),
                    hostPathVolume("pods-mount-dir", podsDir, "Directory"),
                    registrationDirVolume,
                ],
                pod: hostNetwork,
            },
            { ...child, dependsOn: [csiDriver, ...nodeAccount.ready] },
        );

        this.registerOutputs({ driverName: this.driverName, namespace: this.namespace });
    }
}
