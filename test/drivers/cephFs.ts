/**
 * What the ceph-csi tests of the drivers tier share: the Ceph tier's cluster brought up by the
 * planned containers for one CephFS storage, and the rendered ceph-csi pods and ConfigMaps.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { CephTestCluster, RunResult, waitFor } from "../ceph/cluster";
import { CephPlan } from "../ceph/planned";

export interface RenderedContainer {
    name: string;
    command?: string[];
    args: string[];
    env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
    volumeMounts: { name: string; mountPath: string; readOnly?: boolean; mountPropagation?: string }[];
}
export interface RenderedPod {
    containers: RenderedContainer[];
    volumes: { name: string; configMap?: { name: string }; emptyDir?: object; hostPath?: { path: string; type?: string } }[];
}

export function show(r: RunResult): string {
    return `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
}
export function ok(r: RunResult): RunResult {
    assert.equal(r.code, 0, show(r));
    return r;
}

/** The pod spec of a planned workload. */
export function renderedPod(plan: CephPlan, name: string, type: string): RenderedPod {
    return (plan.resource(name, type).inputs as { spec: { template: { spec: RenderedPod } } }).spec.template.spec;
}
/** A planned ConfigMap's name and data. */
export function configMapData(plan: CephPlan, name: string): { name: string; data: Record<string, string> } {
    const inputs = plan.resource(name, "kubernetes:core/v1:ConfigMap").inputs as { metadata: { name: string }; data: Record<string, string> };
    return { name: inputs.metadata.name, data: inputs.data };
}

/**
 * The Ceph tier's bring-up of storage `fs` by the planned containers: mon (quorum), keyrings,
 * mgr, mds, every OSD of the plan (each up in turn), the filesystem Job (pools, file system,
 * subvolume group) and its CSI user.
 */
export async function bringUpCephFs(c: CephTestCluster, plan: CephPlan, fs: string): Promise<void> {
    ok(await c.container(plan.container(`ceph-${fs}-mon-a`, "mon-init")));
    c.cephDaemon("mon", c.monId);
    await waitFor("mon quorum", 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes("a") ? true : undefined));
    ok(await c.container(plan.container(`${fs}-filesystem`, "csi-user")));
    ok(await c.container(plan.container(`ceph-${fs}-mgr-a`, "keyring")));
    ok(await c.container(plan.container(`ceph-${fs}-mds-a`, "keyring")));
    c.cephDaemon("mgr", "a");
    c.cephDaemon("mds", "a");
    const osds = c.osdWorkloads();
    for (let i = 0; i < osds.length; i++) {
        c.osdDaemon(`osd.${i}`, osds[i]);
        await waitFor(`${i + 1} OSD(s) up`, 180_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === i + 1 ? true : undefined));
    }
    ok(await c.container(plan.container(`${fs}-filesystem`, "filesystem"), { timeoutMs: 300_000 }));
    ok(await c.container(plan.container(`${fs}-filesystem`, "csi-user")));
}

/** The csi-cephfsplugin container of a rendered ceph-csi pod: no command (the image's entrypoint, cephcsi, runs with the rendered args). */
export function cephFsPluginContainer(pod: RenderedPod, podName: string): RenderedContainer {
    const ctr = pod.containers.find((x) => x.name === "csi-cephfsplugin");
    assert.ok(ctr, `${podName}: no csi-cephfsplugin container`);
    assert.equal(ctr.command, undefined, `${podName}: csi-cephfsplugin has a command`);
    return ctr;
}

/** A container's env as the kubelet gives it (spec.nodeName = `nodeName`, metadata.namespace = zcloud-storage). */
export function downwardEnv(ctr: RenderedContainer, podName: string, nodeName: string): Record<string, string> {
    const env: Record<string, string> = {};
    for (const e of ctr.env) {
        const field = e.valueFrom?.fieldRef?.fieldPath;
        if (e.value !== undefined) env[e.name] = e.value;
        else if (field === "spec.nodeName") env[e.name] = nodeName;
        else if (field === "metadata.namespace") env[e.name] = "zcloud-storage";
        else throw new Error(`${podName}: env ${e.name} has no value the test can give`);
    }
    return env;
}

/** A container's args with `$(VAR)` expanded from its env, as Kubernetes does. */
export function expandedArgs(ctr: RenderedContainer, env: Record<string, string>, podName: string): string[] {
    return ctr.args.map((a) =>
        a.replace(/\$\((\w+)\)/g, (_, v: string) => {
            assert.ok(env[v] !== undefined, `${podName}: $(${v}) is not in the container's env`);
            return env[v];
        }),
    );
}

/**
 * ceph-csi's files in the cluster's namespace: an /etc of the namespace's own (the chroot is
 * shared and never changed) and the rendered ConfigMaps of `driver` under <tmp>/configmaps.
 */
export async function cephCsiFiles(c: CephTestCluster, plan: CephPlan, driver: string): Promise<void> {
    ok(await c.exec(["sh", "-c", 'd=$1; mkdir -p "$d" && mount -t tmpfs zc-csi-etc "$d" && mkdir "$d/up" "$d/work" && mount -t overlay zc-csi-etc -o "lowerdir=/etc,upperdir=$d/up,workdir=$d/work" /etc', "etc", path.join(c.tmp, "csi-etc")]));
    for (const cm of [`${driver}-config`, `${driver}-ceph-conf`]) {
        const { name, data } = configMapData(plan, cm);
        const dir = path.join(c.tmp, "configmaps", name);
        fs.mkdirSync(dir, { recursive: true });
        for (const [k, v] of Object.entries(data)) fs.writeFileSync(path.join(dir, k), v);
    }
}

/**
 * Runs a rendered csi-cephfsplugin container (`bin` with the rendered args and env, PATH
 * `pathEnv`) as the daemon `cephcsi-<podName>` in the cluster's namespace; resolves with its
 * socket. Only the socket directory moves, to <tmp>/pods/<podName> (pods share the namespace);
 * the ConfigMaps (cephCsiFiles) are bound read-only at their rendered mount paths.
 */
export async function startCephCsiPlugin(c: CephTestCluster, bin: string, pod: RenderedPod, podName: string, nodeName: string, pathEnv: string): Promise<string> {
    const ctr = cephFsPluginContainer(pod, podName);
    const env = downwardEnv(ctr, podName, nodeName);
    const socketMount = ctr.volumeMounts.find((m) => m.name === "socket-dir");
    assert.ok(socketMount, `${podName}: no socket-dir mount`);
    const podDir = path.join(c.tmp, "pods", podName);
    fs.mkdirSync(podDir + socketMount.mountPath, { recursive: true });
    const rewrites: string[] = [];
    const args = expandedArgs(ctr, env, podName).map((a) => {
        const m = /^(--endpoint=unix:\/\/)(.*)$/.exec(a);
        if (m && m[2].startsWith(socketMount.mountPath + "/")) {
            rewrites.push(a);
            return m[1] + podDir + m[2];
        }
        return a;
    });
    assert.deepEqual(rewrites, ["--endpoint=unix:///csi/csi.sock"], `${podName}: only the socket path is rewritten`);
    for (const m of ctr.volumeMounts) {
        const vol = pod.volumes.find((v) => v.name === m.name);
        assert.ok(vol, `${podName}: mount ${m.name} has no volume`);
        if (vol.configMap) {
            const dir = path.join(c.tmp, "configmaps", vol.configMap.name);
            assert.ok(fs.existsSync(dir), `${podName}: ConfigMap ${vol.configMap.name} is not one the plan renders for ceph-csi`);
            ok(await c.exec(["sh", "-c", 'mountpoint -q "$2" || { mkdir -p "$2" && mount --bind "$1" "$2" && mount -o remount,bind,ro "$2"; }', "cm", dir, m.mountPath]));
        } else if (vol.emptyDir && m.mountPath !== socketMount.mountPath) {
            ok(await c.exec(["mkdir", "-p", m.mountPath]));
        }
    }
    const socket = podDir + socketMount.mountPath + "/csi.sock";
    const name = `cephcsi-${podName}`;
    c.daemon(name, [bin, ...args], { PATH: pathEnv, ...env });
    await waitFor(`${name}'s socket`, 60_000, async () => {
        if (c.daemonPid(name) === undefined) throw new Error(`${name} exited:\n${c.daemonLog(name).slice(-3000)}`);
        return fs.existsSync(socket) ? true : undefined;
    }, 500);
    return socket;
}
