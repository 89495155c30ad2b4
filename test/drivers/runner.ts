/**
 * Starts one rendered container as a local process: the program its image runs, its command and
 * args exactly as rendered ($(VAR) expanded as the kubelet does), its env with fieldRefs resolved,
 * its ConfigMaps as files. Paths:
 * - each container gets its own root directory; a mount path P is the directory <root>P, and
 *   every rendered arg and ConfigMap value that names a path under P is rewritten to <root>P
 *   (the runner lists each rewrite in `remaps`);
 * - host paths of the kernel (/dev, /sys, /proc, /lib/modules) mounted at the same path are
 *   themselves; any other host path is <hostRoot><path>, shared by every container of one test,
 *   and <root><mount path> is a link to it, so two containers meet where two pods would;
 * - paths a program opens without a flag or config key (TopoLVM's /dev/<vg>/<lv>, lvmd's
 *   nsenter into PID 1, the service account token) are not rewritten: the first two are this
 *   machine's own, the last is replaced by KUBECONFIG when the caller gives one.
 * A pod with hostPID runs in a PID namespace of its own whose PID 1 is the program itself: lvmd
 * reaches "the host's" lvm through `nsenter -t 1`, and PID 1 of this machine is out of reach.
 * A pod without hostNetwork gets a network namespace of its own, as on a node: its ports (the
 * metrics servers' :8080) collide with nothing on this machine, and it reaches no address here.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PlanRun, PlannedResource } from "../helpers/plan";
import { imageRef, images } from "../../components/images";
import { shellQuote } from "../../components/node/script";
import { lookupProgram } from "./programs";

export interface PodIdentity {
    nodeName: string;
    podName: string;
    namespace: string;
    podIP: string;
    /** The node's address as the kubelet reports it (status.hostIP); only pods that ask for it need it. */
    hostIP?: string;
}

export interface RunnerOptions {
    /** This container's root; mount paths live below it. Keep it short: socket paths are limited to 107 bytes. */
    root: string;
    /** The node's host paths (other than the kernel's) live below it. */
    hostRoot: string;
    pod: PodIdentity;
    /** The image registry the plan rendered with, to find the pinned image again. */
    imageRegistry?: string;
    /** Extra args after the rendered ones (negative controls only). */
    appendArgs?: string[];
}

export interface PreparedContainer {
    container: string;
    /** The container's root directory (RunnerOptions.root). */
    root: string;
    /** The program this machine runs for the container, or why it cannot. */
    program?: string;
    unavailable?: string;
    /** The container's command and args as rendered, variables expanded, paths rewritten. */
    argv: string[];
    env: Record<string, string>;
    remaps: string[];
    /** The pod shares the host's PID namespace. */
    hostPID: boolean;
    /** The pod shares the host's network namespace. */
    hostNetwork: boolean;
    /** A rendered path as this container sees it here. */
    pathOf(renderedPath: string): string;
}

const kernelPaths = new Set(["/dev", "/sys", "/proc", "/lib/modules"]);

type Container = { name: string; image: string; command?: string[]; args?: string[]; env?: any[]; volumeMounts?: any[] };

function podSpecOf(workload: PlannedResource): any {
    const spec = (workload.inputs.spec as any)?.template?.spec;
    if (!spec) {
        throw new Error(`${workload.name} has no pod template`);
    }
    return spec;
}

function resolveEnv(container: Container, pod: PodIdentity): Record<string, string> {
    const fields: Record<string, string> = {
        "spec.nodeName": pod.nodeName,
        "metadata.name": pod.podName,
        "metadata.namespace": pod.namespace,
        "status.podIP": pod.podIP,
        ...(pod.hostIP ? { "status.hostIP": pod.hostIP } : {}),
    };
    const env: Record<string, string> = {};
    for (const e of container.env ?? []) {
        if (typeof e.value === "string") {
            env[e.name] = e.value;
        } else if (e.valueFrom?.fieldRef) {
            const value = fields[e.valueFrom.fieldRef.fieldPath];
            if (value === undefined) {
                throw new Error(`${container.name}: env ${e.name} refers to field ${e.valueFrom.fieldRef.fieldPath}, which the runner does not know`);
            }
            env[e.name] = value;
        } else {
            throw new Error(`${container.name}: env ${e.name} has a source the runner does not know: ${JSON.stringify(e.valueFrom)}`);
        }
    }
    return env;
}

/** Kubernetes' $(VAR) expansion in command and args; $$ escapes, unknown names stay as written. */
export function expandVars(arg: string, env: Record<string, string>): string {
    return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string | undefined) => (name === undefined ? "$" : (env[name] ?? whole)));
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Rewrites a path (or a path below it) that starts an arg, follows `=` or `unix://`, or is a config value. */
export function rewritePath(text: string, from: string, to: string): string {
    return rewritePaths(text, [[from, to]]);
}

/**
 * rewritePath for several mounts in one pass: each path is rewritten once, by the longest mount
 * path it is under, so a rewritten path is never rewritten again (a container root below /tmp and
 * a mount at /tmp: /csi/csi.sock becomes <root>/csi/csi.sock, not <root>/tmp<root>/csi/csi.sock).
 */
export function rewritePaths(text: string, remaps: ReadonlyArray<readonly [string, string]>): string {
    if (remaps.length === 0) {
        return text;
    }
    const to = new Map(remaps.map(([from, target]) => [from, target]));
    const froms = [...to.keys()].sort((a, b) => b.length - a.length).map(escapeRe);
    const re = new RegExp(`(^|=|unix://|[\\s"':])(${froms.join("|")})(?=/|$|[\\s"'])`, "gm");
    return text.replace(re, (_m, lead: string, from: string) => `${lead}${to.get(from)}`);
}

function configMapData(run: PlanRun, name: string): Record<string, string> {
    const found = run.resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && (r.inputs.metadata as any)?.name === name);
    if (found.length !== 1) {
        throw new Error(`ConfigMap ${name}: the plan has ${found.length} of that name`);
    }
    return ((found[0].inputs.data as Record<string, string>) ?? {}) as Record<string, string>;
}

/** Lays out one rendered container's files and resolves its program, command, args and env. */
export function prepareContainer(run: PlanRun, workload: PlannedResource, containerName: string, o: RunnerOptions): PreparedContainer {
    const spec = podSpecOf(workload);
    const container: Container | undefined = spec.containers.find((c: Container) => c.name === containerName);
    if (!container) {
        throw new Error(`${workload.name} has no container ${containerName}`);
    }
    const env = resolveEnv(container, o.pod);
    const remaps: Array<[string, string]> = [];
    const files: Array<[string, string]> = [];

    for (const m of container.volumeMounts ?? []) {
        const volume = (spec.volumes ?? []).find((v: any) => v.name === m.name);
        if (!volume) {
            throw new Error(`${containerName}: mount ${m.mountPath} names volume ${m.name}, which the pod does not have`);
        }
        const local = path.join(o.root, m.mountPath);
        if (volume.hostPath && kernelPaths.has(volume.hostPath.path) && volume.hostPath.path === m.mountPath) {
            continue;
        }
        remaps.push([m.mountPath, local]);
        fs.mkdirSync(path.dirname(local), { recursive: true });
        if (volume.hostPath) {
            const hostDir = path.join(o.hostRoot, volume.hostPath.path);
            fs.mkdirSync(hostDir, { recursive: true });
            fs.symlinkSync(hostDir, local);
        } else if (volume.emptyDir) {
            fs.mkdirSync(local, { recursive: true });
        } else if (volume.configMap) {
            fs.mkdirSync(local, { recursive: true });
            for (const [key, text] of Object.entries(configMapData(run, volume.configMap.name))) {
                files.push([path.join(local, key), text]);
            }
        } else {
            throw new Error(`${containerName}: volume ${m.name} is of a kind the runner does not lay out: ${Object.keys(volume).join(", ")}`);
        }
    }

    // One pass, the longest mount path first: /var/lib/kubelet/pods wins over /var/lib/kubelet.
    const rewrite = (text: string) => rewritePaths(text, remaps);
    const notes: string[] = [];
    for (const [file, text] of files) {
        const rewritten = rewrite(text);
        if (rewritten !== text) {
            notes.push(`${path.relative(o.root, file)}: paths under the mounts rewritten`);
        }
        fs.writeFileSync(file, rewritten);
    }

    // Without a command the image's entrypoint runs: argv[0] stands for it (the program replaces it).
    const command = container.command ?? ["(image entrypoint)"];
    const rendered = [...command, ...(container.args ?? []), ...(o.appendArgs ?? [])].map((a) => expandVars(String(a), env));
    const argv = rendered.map((a) => {
        const r = rewrite(a);
        if (r !== a) {
            notes.push(`${a} -> ${r}`);
        }
        return r;
    });
    const pinned = pinnedImage(container.image, o.imageRegistry);
    const lookup = lookupProgram(pinned, container.command?.[0]);
    return {
        container: containerName,
        root: o.root,
        ...("program" in lookup ? { program: lookup.program } : { unavailable: lookup.unavailable }),
        argv,
        env,
        remaps: notes,
        hostPID: spec.hostPID === true,
        hostNetwork: spec.hostNetwork === true,
        pathOf: (p: string) => rewrite(p),
    };
}

/** The pinned image a rendered (possibly mirrored) image reference stands for. */
function pinnedImage(image: string, registry?: string): string {
    if (!registry) {
        return image;
    }
    const found = Object.values(images).find((i) => imageRef(i, registry) === image);
    if (!found) {
        throw new Error(`${image} is no pinned image behind ${registry}`);
    }
    return found;
}

export interface StartedContainer {
    prepared: PreparedContainer;
    process: ChildProcess;
    /** stdout and stderr so far. */
    output(): string;
    /** Resolves with the exit code (or signal name) once the process has ended. */
    exited: Promise<string>;
    stop(): Promise<string>;
}

export interface StartOptions {
    /** The host's environment for the program (e.g. KUBECONFIG in place of in-cluster config, LVM_SYSTEM_DIR). */
    hostEnv?: Record<string, string>;
    /** The pod's network (podNetwork.ts); without it a pod without hostNetwork gets an empty one. */
    network?: { enter: string[] };
}

/** A container's env is what the pod spec gives plus the image's PATH; nothing of the test's. */
function containerEnv(p: PreparedContainer, hostEnv: Record<string, string> = {}): Record<string, string> {
    return { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ...p.env, ...hostEnv };
}

/** The program (kept under its rendered name: hypertopolvm picks its program by it) and its args. */
function programArgv(p: PreparedContainer, program = p.program): string[] {
    if (!program) {
        throw new Error(`${p.container}: ${p.unavailable}`);
    }
    return [program, ...p.argv.slice(1)];
}

export interface GuestLaunchOptions {
    /** Where the container's program is on the guest (same base name as the built one). */
    program: string;
    /** The node's environment for the program (e.g. KUBECONFIG in place of in-cluster config). */
    hostEnv?: Record<string, string>;
}

/**
 * A prepared container as one shell command for a node of its own (a QEMU guest) that holds the
 * container's files at the same paths: the rendered argv with only the env the container gets.
 * The guest is the pod's host, so hostPID is the guest's own PID namespace (lvmd's `nsenter -t 1`
 * reaches the guest's init) and a pod without hostNetwork gets an empty network namespace; a
 * program that needs the network (the API server) is given `hostNetwork` by the caller.
 */
export function guestCommand(p: PreparedContainer, o: GuestLaunchOptions & { network: "none" | "node" }): string {
    const env = Object.entries(containerEnv(p, o.hostEnv)).map(([k, v]) => `${k}=${v}`);
    const netns = p.hostNetwork || o.network === "node" ? [] : ["unshare", "--net", "--"];
    return ["exec", ...netns, "env", "-i", ...env, ...programArgv(p, o.program)].map(shellQuote).join(" ");
}

/** Starts a prepared container's program with its rendered argv (argv[0] = the rendered command). */
export function startContainer(p: PreparedContainer, o: StartOptions = {}): StartedContainer {
    const [program, ...args] = programArgv(p);
    if (p.hostNetwork && o.network) {
        throw new Error(`${p.container}: its pod uses the host network; it gets no pod network`);
    }
    const enter = o.network ? o.network.enter : ["unshare", ...(p.hostNetwork ? [] : ["--net"]), "--"];
    const pid = p.hostPID ? ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM", "--"] : [];
    const [file, ...argv] = [...enter, ...pid, program, ...args];
    const child = spawn(file, argv, {
        env: containerEnv(p, o.hostEnv),
        stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(code !== null ? String(code) : String(signal))));
    return {
        prepared: p,
        process: child,
        output: () => out,
        exited,
        stop: () => {
            if (child.exitCode === null && child.signalCode === null) {
                child.kill("SIGTERM");
                setTimeout(() => child.kill("SIGKILL"), 5000).unref();
            }
            return exited;
        },
    };
}

/** Waits until `check` holds or the process ends or `ms` pass; says which. */
export async function waitFor(started: StartedContainer, check: () => boolean, ms: number): Promise<"ready" | "exited" | "timeout"> {
    const deadline = Date.now() + ms;
    let ended = false;
    void started.exited.then(() => (ended = true));
    while (Date.now() < deadline) {
        if (check()) {
            return "ready";
        }
        if (ended) {
            return "exited";
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    return check() ? "ready" : "timeout";
}
