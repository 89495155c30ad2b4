import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

type Container = k8s.types.input.core.v1.Container;
type Volume = k8s.types.input.core.v1.Volume;
type VolumeMount = k8s.types.input.core.v1.VolumeMount;
type PodSpec = k8s.types.input.core.v1.PodSpec;

export const kubeletDir = "/var/lib/kubelet";

/** A host directory; `type` "" checks nothing (the path may be absent, as /etc/selinux on hosts without SELinux). */
export function hostPathVolume(name: string, path: string, type: "DirectoryOrCreate" | "Directory" | "" = "DirectoryOrCreate"): Volume {
    return { name, hostPath: { path, type } };
}

/** The host's /dev at /dev: node plugins open the block devices of volumes by their /dev paths. */
export const hostDevVolume = hostPathVolume("host-dev", "/dev", "Directory");
export const hostDevMount: VolumeMount = { name: "host-dev", mountPath: "/dev" };

export function mount(name: string, mountPath: string, propagation?: "Bidirectional" | "HostToContainer"): VolumeMount {
    return propagation ? { name, mountPath, mountPropagation: propagation } : { name, mountPath };
}

export const downwardEnv = {
    nodeName: { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
    podName: { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    namespace: { name: "NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
};

export interface CsiSidecarArgs {
    name: string;
    image: string;
    /** The sidecar binary (images that bundle several sidecars pick one by command). */
    command?: string;
    /** The CSI socket path inside the container. */
    csiAddress: string;
    args?: pulumi.Input<string>[];
    volumeMounts: VolumeMount[];
    env?: k8s.types.input.core.v1.EnvVar[];
    ports?: k8s.types.input.core.v1.ContainerPort[];
}

/** A CSI sidecar container talking to the driver over its socket. */
export function csiSidecar(a: CsiSidecarArgs): Container {
    const flags: pulumi.Input<string>[] = [`--csi-address=${a.csiAddress}`, ...(a.args ?? [])];
    return {
        name: a.name,
        image: a.image,
        ...(a.command ? { command: [a.command, ...flags] } : { args: flags }),
        ...(a.env ? { env: a.env } : {}),
        ...(a.ports ? { ports: a.ports } : {}),
        volumeMounts: a.volumeMounts,
        resources: { requests: { cpu: "10m", memory: "32Mi" } },
    };
}

/** The kubelet's plugin registration directory, where node-driver-registrar announces a driver. */
export const registrationDirVolume = hostPathVolume("registration-dir", `${kubeletDir}/plugins_registry`, "Directory");

export interface NodeDriverRegistrarArgs {
    name: string;
    image: string;
    /** For images that bundle several sidecars. */
    command?: string;
    /** The driver socket as the container sees it. */
    csiAddress: string;
    /** The same socket on the host: what kubelet dials. */
    kubeletSocket: string;
    /** Mounts that expose the driver socket to the container. */
    socketMounts: VolumeMount[];
    /** Serve /healthz on this port (host:port, host may be empty) and probe it. */
    health?: { host: string; port: number };
    args?: string[];
    /** Extra container fields (lifecycle hooks, securityContext). */
    extra?: Partial<Container>;
}

/** node-driver-registrar: registers a node plugin's socket with kubelet. */
export function nodeDriverRegistrar(a: NodeDriverRegistrarArgs): Container {
    const container = csiSidecar({
        name: a.name,
        image: a.image,
        command: a.command,
        csiAddress: a.csiAddress,
        args: [...(a.args ?? []), `--kubelet-registration-path=${a.kubeletSocket}`, ...(a.health ? [`--http-endpoint=${a.health.host}:${a.health.port}`] : [])],
        volumeMounts: [...a.socketMounts, mount("registration-dir", "/registration")],
        ports: a.health ? [{ name: "registrar", containerPort: a.health.port }] : undefined,
        // The registrar's own node, as upstream manifests give it.
        env: [{ ...downwardEnv.nodeName, name: "KUBE_NODE_NAME" }],
    });
    if (!a.health) {
        return { ...container, ...a.extra };
    }
    const probeHost = a.health.host ? { host: a.health.host } : {};
    const livenessProbe = { httpGet: { ...probeHost, path: "/healthz", port: a.health.port }, initialDelaySeconds: 20, periodSeconds: 10, timeoutSeconds: 10 };
    return { ...container, livenessProbe, ...a.extra };
}

export interface WorkloadArgs {
    namespace: pulumi.Input<string>;
    /** Labels of the pods; also the selector. */
    labels: Record<string, string>;
    serviceAccountName: pulumi.Input<string>;
    containers: Container[];
    initContainers?: Container[];
    volumes?: Volume[];
    /** Extra pod spec fields (nodeSelector, affinity, hostPID, hostNetwork...). */
    pod?: Partial<PodSpec>;
    /** Pod template annotations, e.g. a config checksum so pods restart on config changes. */
    podAnnotations?: Record<string, pulumi.Input<string>>;
}

function podTemplate(a: WorkloadArgs, extra: Partial<PodSpec>) {
    return {
        metadata: { labels: a.labels, ...(a.podAnnotations ? { annotations: a.podAnnotations } : {}) },
        spec: {
            serviceAccountName: a.serviceAccountName,
            containers: a.containers,
            ...(a.initContainers ? { initContainers: a.initContainers } : {}),
            ...(a.volumes ? { volumes: a.volumes } : {}),
            ...extra,
            ...a.pod,
        },
    };
}

/**
 * A node agent: runs on every selected node including control planes and tainted nodes, with
 * node-critical priority, so storage keeps serving while the node is under pressure.
 */
export function nodeDaemonSet(name: string, a: WorkloadArgs, opts: pulumi.CustomResourceOptions): k8s.apps.v1.DaemonSet {
    return new k8s.apps.v1.DaemonSet(
        name,
        {
            metadata: { name, namespace: a.namespace, labels: a.labels },
            spec: {
                selector: { matchLabels: a.labels },
                updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
                template: podTemplate(a, {
                    priorityClassName: "system-node-critical",
                    tolerations: [{ operator: "Exists" }],
                }),
            },
        },
        { customTimeouts: { create: "10m", update: "10m" }, ...opts },
    );
}

/** A controller with leader election: two replicas on different nodes where possible. */
export function controllerDeployment(
    name: string,
    a: WorkloadArgs & { replicas?: number; strategy?: k8s.types.input.apps.v1.DeploymentStrategy },
    opts: pulumi.CustomResourceOptions,
): k8s.apps.v1.Deployment {
    return new k8s.apps.v1.Deployment(
        name,
        {
            metadata: { name, namespace: a.namespace, labels: a.labels },
            spec: {
                replicas: a.replicas ?? 2,
                ...(a.strategy ? { strategy: a.strategy } : {}),
                selector: { matchLabels: a.labels },
                template: podTemplate(a, {
                    priorityClassName: "system-cluster-critical",
                    affinity: {
                        podAntiAffinity: {
                            preferredDuringSchedulingIgnoredDuringExecution: [
                                {
                                    weight: 100,
                                    podAffinityTerm: { labelSelector: { matchLabels: a.labels }, topologyKey: "kubernetes.io/hostname" },
                                },
                            ],
                        },
                    },
                }),
            },
        },
        { customTimeouts: { create: "10m", update: "10m" }, ...opts },
    );
}

export const privileged = { privileged: true } as const;

/** A container that needs no privilege at all (controllers and their CSI sidecars). */
export const unprivileged = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };
