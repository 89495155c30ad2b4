/**
 * What the drivers tier's "through the sidecars" tests share to run a rendered pod's programs
 * against the engine tier's API server: polling with an explanation, a unix-socket bridge to the
 * API server's port, and the in-cluster configuration a pod with an automounted ServiceAccount
 * token gets (token, CA, namespace at the fixed path; the Service address in the env).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { PodNetwork } from "./podNetwork";

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
