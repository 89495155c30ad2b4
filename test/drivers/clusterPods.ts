/**
 * What the drivers tier's "through the sidecars" tests share to run a rendered pod's programs
 * against the engine tier's API server: polling with an explanation, a unix-socket bridge to the
 * API server's port, the in-cluster configuration a pod with an automounted ServiceAccount
 * token gets (token, CA, namespace at the fixed path; the Service address in the env), the
 * controller pod's sidecars started in such a pod network until they hold their leases, and a
 * user's claim and pod.
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { PodNetwork, podNetwork } from "./podNetwork";
import { PreparedContainer, StartedContainer, startContainer } from "./runner";

/** kubectl against the test's control plane: its stdout. */
export type Kubectl = (args: string[], input?: string) => string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every second until it returns a value; fails with `explain()` after `ms`. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms: number, explain: () => string | Promise<string>): Promise<T> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        const v = await check();
        if (v !== undefined && v !== false) {
            return v;
        }
        await sleep(1000);
    }
    return assert.fail(`${what}: not within ${ms} ms\n${await explain()}`);
}

/** A unix socket that joins each connection to 127.0.0.1:<port> (the API server), for podNetwork's forwarder. */
export function bridgeToApi(socket: string, port: number): Promise<net.Server> {
    const server = net.createServer((c) => {
        const t = net.connect(port, "127.0.0.1");
        c.pipe(t).pipe(c);
        c.on("error", () => t.destroy());
        t.on("error", () => c.destroy());
    });
    return new Promise((resolve) => server.listen(socket, () => resolve(server)));
}

export interface InClusterOptions {
    /** A directory of the test's own for the ServiceAccount's files. */
    dir: string;
    network: PodNetwork;
    serviceAccount: string;
    namespace: string;
    /** The cluster's CA, base64 (the kubeconfig's certificate-authority-data). */
    caData: string;
    /** A token of the ServiceAccount (kubectl create token). */
    token: string;
    /** Where the API server is inside the pod network (podNetwork's port). */
    apiPort: number;
}

/**
 * What the kubelet gives every container of a pod with an automounted ServiceAccount token: the
 * token, the cluster's CA and the namespace at the fixed path, and the API Service's address in
 * the env. The files go into a mount namespace of the program's own (a tmpfs on /run, which
 * /var/run links to), so nothing of this machine's /run is touched.
 */
export function inClusterEnter(o: InClusterOptions): { enter: string[]; env: Record<string, string> } {
    const sa = path.join(o.dir, `sa-${o.serviceAccount}`);
    fs.mkdirSync(sa, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(sa, "token"), o.token, { mode: 0o600 });
    fs.writeFileSync(path.join(sa, "ca.crt"), Buffer.from(o.caData, "base64"));
    fs.writeFileSync(path.join(sa, "namespace"), o.namespace);
    const target = "/var/run/secrets/kubernetes.io/serviceaccount";
    const script = `mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p ${target} && cp "$0"/token "$0"/ca.crt "$0"/namespace ${target}/ && exec "$@"`;
    return {
        enter: [...o.network.enter, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, sa],
        env: { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(o.apiPort) },
    };
}

/** A 3-hour token of `serviceAccount` (kubectl create token). */
export function serviceAccountToken(kubectl: Kubectl, namespace: string, serviceAccount: string): string {
    return kubectl(["-n", namespace, "create", "token", serviceAccount, "--duration", "3h"]).trim();
}

export interface InClusterPodOptions {
    /** The test's directory: the API bridge's socket and the ServiceAccount's files go there. */
    dir: string;
    kubectl: Kubectl;
    namespace: string;
    serviceAccount: string;
    /** The cluster's CA, base64. */
    caData: string;
    /** The API server's port on this machine. */
    apiPort: number;
    /** Where the pod finds the API server inside its network: 127.0.0.1:<podApiPort>. */
    podApiPort: number;
}

/** A pod network on this machine and the in-cluster config of its ServiceAccount: startContainer's `network.enter` and `hostEnv`. */
export interface InClusterPod {
    enter: string[];
    env: Record<string, string>;
    /** Closes the pod network, then the API bridge. */
    close(): void;
}

/**
 * A pod network of its own whose 127.0.0.1:<podApiPort> is the API server (through a unix socket
 * in `dir` bridged to its port here), with the in-cluster config of `serviceAccount` (a new token).
 */
export async function inClusterPod(o: InClusterPodOptions): Promise<InClusterPod> {
    const socket = path.join(o.dir, "api.sock");
    const bridge = await bridgeToApi(socket, o.apiPort);
    let network: PodNetwork;
    try {
        network = await podNetwork({ port: o.podApiPort, socket });
    } catch (e) {
        bridge.close();
        throw e;
    }
    const close = () => {
        network.close();
        bridge.close();
    };
    try {
        const token = serviceAccountToken(o.kubectl, o.namespace, o.serviceAccount);
        const { enter, env } = inClusterEnter({ dir: o.dir, network, serviceAccount: o.serviceAccount, namespace: o.namespace, caData: o.caData, token, apiPort: o.podApiPort });
        return { enter, env, close };
    } catch (e) {
        close();
        throw e;
    }
}

/** The names of the Leases in a `kubectl get leases -o json` list that have a holder, sorted. */
export function heldLeases(list: { items: { metadata: { name: string }; spec: { holderIdentity?: string } }[] }): string[] {
    return list.items.filter((l) => l.spec.holderIdentity).map((l) => l.metadata.name).sort();
}

/** Polls the namespace's Leases until each of `names` has a holder; resolves with every held Lease's name, sorted. */
export function leasesHeld(kubectl: Kubectl, namespace: string, names: string[], explain: () => string | Promise<string>): Promise<string[]> {
    return until(
        "the sidecars' leases",
        () => {
            const held = heldLeases(JSON.parse(kubectl(["-n", namespace, "get", "leases", "-o", "json"])));
            return names.every((n) => held.includes(n)) ? held : undefined;
        },
        120_000,
        explain,
    );
}

export interface ControllerSidecarsOptions {
    kubectl: Kubectl;
    namespace: string;
    /** The controller pod's network and in-cluster config (inClusterPod). */
    pod: { enter: string[]; env: Record<string, string> };
    /** In start order: each sidecar as prepared, and the handed-in program that runs it. */
    sidecars: [PreparedContainer, string][];
    /** The Leases their leader election must hold. */
    leases: string[];
    /** The pod's started containers by name: each sidecar joins as it starts; their logs explain a failed wait. */
    containers: Record<string, StartedContainer>;
    /** The test's containers to stop in `after`: each sidecar joins as it starts. */
    started: StartedContainer[];
}

/** Starts a controller pod's sidecars in its pod network; resolves with every held Lease of the namespace once theirs are held. */
export function startControllerSidecars(o: ControllerSidecarsOptions): Promise<string[]> {
    for (const [prepared, program] of o.sidecars) {
        const c = startContainer({ ...prepared, program, unavailable: undefined }, { network: { enter: o.pod.enter }, hostEnv: o.pod.env });
        o.started.push(c);
        o.containers[prepared.container] = c;
    }
    return leasesHeld(o.kubectl, o.namespace, o.leases, () => containerLogs(o.containers));
}

export interface PvcAndPodOptions {
    storageClass: string;
    accessMode: "ReadWriteOnce" | "ReadWriteMany";
    /** Pins the pod to this node (nodeSelector kubernetes.io/hostname); without it the scheduler places it. */
    node?: string;
}

/** The claim `data` (1Gi of the class) and the pod `app` that mounts it, as one List. */
export function pvcAndPodList(o: PvcAndPodOptions): object {
    const placement = o.node ? { nodeSelector: { "kubernetes.io/hostname": o.node } } : {};
    return {
        apiVersion: "v1",
        kind: "List",
        items: [
            { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: "data" }, spec: { storageClassName: o.storageClass, accessModes: [o.accessMode], resources: { requests: { storage: "1Gi" } } } },
            { apiVersion: "v1", kind: "Pod", metadata: { name: "app" }, spec: { ...placement, containers: [{ name: "app", image: "registry.local/app:1" }], volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }] } },
        ],
    };
}

/**
 * A user's workload: the namespace `ns` made, and pvcAndPodList applied in it. Returns what
 * explains a failed wait on them: the namespace's claims, pods and events.
 */
export function applyPvcAndPod(kubectl: Kubectl, ns: string, o: PvcAndPodOptions): () => string {
    kubectl(["create", "namespace", ns]);
    kubectl(["-n", ns, "apply", "-f", "-"], yaml.dump(pvcAndPodList(o)));
    return () => `${kubectl(["-n", ns, "get", "pvc,pod", "-o", "wide"])}\n${kubectl(["-n", ns, "get", "events"])}`;
}

/** A `timed(label, f)` that appends "<label> <seconds> s" to `timings` when `f` settles. */
export function timer(timings: string[]): <T>(label: string, f: () => Promise<T>) => Promise<T> {
    return async (label, f) => {
        const t = Date.now();
        try {
            return await f();
        } finally {
            timings.push(`${label} ${((Date.now() - t) / 1000).toFixed(1)} s`);
        }
    };
}

/** The last lines of each started container's output, headed by its name (a failed wait's explanation). */
export function containerLogs(containers: Record<string, { output(): string }>, lines = 30): string {
    return Object.entries(containers)
        .map(([n, c]) => `--- ${n}:\n${c.output().split("\n").slice(-lines).join("\n")}`)
        .join("\n");
}

const controlPlaneScript = path.resolve(__dirname, "../engine/controlplane.sh");

/** Starts the engine tier's control plane in `dir` (etcd, kube-apiserver, controller-manager, scheduler, kwok). */
export function startControlPlane(dir: string, env: NodeJS.ProcessEnv): Promise<void> {
    return new Promise((resolve, reject) =>
        execFile("bash", [controlPlaneScript, "start", dir], { env, maxBuffer: 1 << 26 }, (err, _out, stderr) => (err ? reject(new Error(`control plane start failed: ${err.message}\n${stderr}`)) : resolve())),
    );
}

/**
 * Once the control plane runs: points `env.KUBECONFIG` at it, adds the kwok Node `node`, and gives
 * what pods need to reach the API server (its CA and port).
 */
export function joinControlPlane(dir: string, env: NodeJS.ProcessEnv, node: string): { caData: string; apiPort: number } {
    env.KUBECONFIG = path.join(dir, "kubeconfig");
    const view = JSON.parse(execFileSync("kubectl", ["config", "view", "--raw", "-o", "json"], { encoding: "utf8", env }));
    execFileSync("bash", [controlPlaneScript, "add-node", dir, node], { env, stdio: ["ignore", "ignore", "inherit"] });
    return { caData: view.clusters[0].cluster["certificate-authority-data"], apiPort: Number(new URL(view.clusters[0].cluster.server).port) };
}

/** Stops the control plane started in `dir` (a no-op when it never started). */
export function stopControlPlane(dir: string | undefined, env: NodeJS.ProcessEnv): void {
    if (dir) {
        execFileSync("bash", [controlPlaneScript, "stop", dir], { env, stdio: ["ignore", "ignore", "inherit"] });
    }
}
