/**
 * What the ceph-csi tests of the drivers-prebuilt tier share: the Ceph tier's cluster brought up
 * by the planned containers (mon, keyrings, mgr, mds, two OSDs, the filesystem Job: pools, file
 * system, subvolume group, CSI user), an /etc of the namespace's own with ceph-csi's rendered
 * ConfigMaps, and the rendered csi-cephfsplugin containers started as daemons in the namespace
 * (test/ceph/cluster.ts), so the handed-in cephcsi links the libraries the daemons run.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { CEPH_APT_PACKAGES, CephTestCluster, RunResult, missingPrerequisites, waitFor } from "../../ceph/cluster";
import { CephPlan } from "../../ceph/planned";
import { cephFsPluginContainer, downwardEnv, expandedArgs } from "../cephFs";

export const FS = "shared-fs";
export const NODES = ["zc-node-1", "zc-node-2"];
export const DRIVER = "ceph-csi-cephfs";
export const GiB = 1 << 30;

/**
 * The plugins' PATH: the image's, less the sbin directories. This machine's kernel has no ceph
 * module, so ceph-csi's kernel mounter (picked whenever `mount.ceph` runs) would fail at
 * `modprobe ceph`; without mount.ceph on its PATH the node plugin loads only its FUSE mounter.
 */
const pluginPath = "/usr/local/bin:/usr/bin:/bin";
/**
 * ceph-csi's FUSE mounter always passes `-o nonempty`, a libfuse 2 option; the chroot's ceph-fuse
 * 20.2.4 is built on libfuse3, which refuses it ("fuse: unknown option(s): `-o nonempty'") and
 * mounts over a non-empty directory anyway. The node plugin finds this wrapper first on its PATH:
 * it drops that one option and runs the real ceph-fuse with everything else unchanged.
 */
const fuseWrapper = `#!/bin/sh
set -eu
o=0
for a in "$@"; do
    shift
    if [ "$o" = 1 ]; then
        o=0
        v=$(printf '%s' "$a" | sed -e 's/^nonempty,//' -e 's/,nonempty//g' -e 's/^nonempty$//')
        if [ -n "$v" ]; then set -- "$@" -o "$v"; fi
        continue
    fi
    if [ "$a" = "-o" ]; then o=1; continue; fi
    set -- "$@" "$a"
done
exec /usr/bin/ceph-fuse "$@"
`;

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
export function configMapData(plan: CephPlan, name: string): { name: string; data: Record<string, string> } {
    const inputs = plan.resource(name, "kubernetes:core/v1:ConfigMap").inputs as { metadata: { name: string }; data: Record<string, string> };
    return { name: inputs.metadata.name, data: inputs.data };
}

export interface CephCsiRig {
    c: CephTestCluster;
    plan: CephPlan;
    /** The names of the daemons started, for their logs. */
    logs: string[];
    /**
     * Runs a rendered csi-cephfsplugin container as a daemon in the namespace; returns its socket,
     * <socketDir>/csi.sock (the directory of the socket-dir volume: by default <tmp>/pods/<podName>/csi).
     */
    startPlugin(pod: RenderedPod, podName: string, nodeName: string, socketDir?: string): Promise<string>;
    /** The provisioner Deployment's and the node DaemonSet's pods as planned. */
    provisionerPod(): RenderedPod;
    nodePluginPod(): RenderedPod;
}

/**
 * The Ceph tier's cluster of the tier's stack, up and serving CephFS with the CSI user, and
 * ceph-csi's files in place. `bin` is the handed-in cephcsi; `programs` are more programs the
 * namespace runs, copied to <tmp>/bin/<name>.
 */
export interface BootCephCsiOptions {
    /** ceph.conf settings of this test over the tier's (CephTestCluster.confOverrides). */
    confOverrides?: Record<string, string>;
    /** Runs once the cluster's namespace exists, before any daemon starts (e.g. an interface moved into it). */
    afterBoot?: (c: CephTestCluster) => Promise<void>;
}

export async function bootCephCsi(bin: string, programs: [from: string, name: string][], opts: BootCephCsiOptions = {}): Promise<CephCsiRig> {
    const missing = missingPrerequisites();
    if (missing.length > 0) throw new Error(`Ceph tier cannot run, missing: ${missing.join(", ")} (apt-get install ${CEPH_APT_PACKAGES.join(" ")}; run as root)`);
    const c = CephTestCluster.create();
    try {
        return await bringUp(c, bin, programs, opts);
    } catch (e) {
        await c.stop();
        throw e;
    }
}

async function bringUp(c: CephTestCluster, bin: string, programs: [from: string, name: string][], opts: BootCephCsiOptions): Promise<CephCsiRig> {
    const devs = [c.loop("osd-a", 3072), c.loop("osd-b", 3072)];
    const plan = await CephPlan.plan({
        storage: FS,
        hosts: { [NODES[0]]: [devs[0]], [NODES[1]]: [devs[1]] },
        wipeStorage: "wipe-fs",
        wipeHosts: { "zc-node-3": ["/dev/disk/by-id/zc-cephcsi-unused"] },
        kubeContext: "cephcsi-tier",
    });
    c.confOverrides = opts.confOverrides ?? {};
    await c.boot(plan);
    await opts.afterBoot?.(c);
    fs.mkdirSync(path.join(c.tmp, "bin"));
    for (const [from, name] of [[bin, "cephcsi"], ...programs]) {
        fs.copyFileSync(from, path.join(c.tmp, "bin", name));
        fs.chmodSync(path.join(c.tmp, "bin", name), 0o755);
    }
    const cephcsi = path.join(c.tmp, "bin", "cephcsi");
    fs.mkdirSync(path.join(c.tmp, "fuse-bin"));
    fs.writeFileSync(path.join(c.tmp, "fuse-bin", "ceph-fuse"), fuseWrapper, { mode: 0o755 });

    // The Ceph tier's bring-up, by the planned containers.
    ok(await c.container(plan.container(`ceph-${FS}-mon-a`, "mon-init")));
    c.cephDaemon("mon", c.monId);
    await waitFor("mon quorum", 90_000, async () => ((await c.cephJson<{ quorum_names: string[] }>(["quorum_status"])).quorum_names.includes("a") ? true : undefined));
    ok(await c.container(plan.container(`${FS}-filesystem`, "csi-user")));
    ok(await c.container(plan.container(`ceph-${FS}-mgr-a`, "keyring")));
    ok(await c.container(plan.container(`ceph-${FS}-mds-a`, "keyring")));
    c.cephDaemon("mgr", "a");
    c.cephDaemon("mds", "a");
    const osds = c.osdWorkloads();
    for (let i = 0; i < osds.length; i++) {
        c.osdDaemon(`osd.${i}`, osds[i]);
        await waitFor(`${i + 1} OSD(s) up`, 180_000, async () => ((await c.cephJson<{ num_up_osds: number }>(["osd", "stat"])).num_up_osds === i + 1 ? true : undefined));
    }
    ok(await c.container(plan.container(`${FS}-filesystem`, "filesystem"), { timeoutMs: 300_000 }));
    ok(await c.container(plan.container(`${FS}-filesystem`, "csi-user")));

    // ceph-csi's files: an /etc of the namespace's own (the chroot is shared and never
    // changed) and the rendered ConfigMaps.
    ok(await c.exec(["sh", "-c", 'd=$1; mkdir -p "$d" && mount -t tmpfs zc-csi-etc "$d" && mkdir "$d/up" "$d/work" && mount -t overlay zc-csi-etc -o "lowerdir=/etc,upperdir=$d/up,workdir=$d/work" /etc', "etc", path.join(c.tmp, "csi-etc")]));
    for (const cm of [`${DRIVER}-config`, `${DRIVER}-ceph-conf`]) {
        const { name, data } = configMapData(plan, cm);
        const dir = path.join(c.tmp, "configmaps", name);
        fs.mkdirSync(dir, { recursive: true });
        for (const [k, v] of Object.entries(data)) fs.writeFileSync(path.join(dir, k), v);
    }

    const logs: string[] = [];
    /**
     * The container's args (`$(VAR)` expanded from its env), env, and its ConfigMaps mounted
     * read-only at the rendered paths (ceph-csi hard-codes /etc/ceph and /etc/ceph-csi-config).
     * Only the CSI socket directory (an emptyDir in one pod, a host path in the other) moves to a
     * directory per pod, since both pods share this namespace; asserted to be the one rewrite.
     */
    async function startPlugin(pod: RenderedPod, podName: string, nodeName: string, socketDir?: string): Promise<string> {
        const ctr = cephFsPluginContainer(pod, podName);
        const env = downwardEnv(ctr, podName, nodeName);
        const socketMount = ctr.volumeMounts.find((m) => m.name === "socket-dir");
        assert.ok(socketMount, `${podName}: no socket-dir mount`);
        const sockets = socketDir ?? path.join(c.tmp, "pods", podName) + socketMount.mountPath;
        fs.mkdirSync(sockets, { recursive: true });
        const rewrites: string[] = [];
        const args = expandedArgs(ctr, env, podName).map((expanded) => {
            const m = /^(--endpoint=unix:\/\/)(.*)$/.exec(expanded);
            if (m && m[2].startsWith(socketMount.mountPath + "/")) {
                rewrites.push(expanded);
                return m[1] + sockets + m[2].slice(socketMount.mountPath.length);
            }
            return expanded;
        });
        assert.deepEqual(rewrites, ["--endpoint=unix:///csi/csi.sock"], `${podName}: only the socket path is rewritten`);
        // The ConfigMaps at their rendered mount paths (one /etc for both pods: same ConfigMaps).
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
        const socket = path.join(sockets, "csi.sock");
        const name = `cephcsi-${podName}`;
        logs.push(name);
        c.daemon(name, [cephcsi, ...args], { PATH: `${path.join(c.tmp, "fuse-bin")}:${pluginPath}`, ...env });
        await waitFor(`${name}'s socket`, 60_000, async () => {
            if (c.daemonPid(name) === undefined) throw new Error(`${name} exited:\n${c.daemonLog(name).slice(-3000)}`);
            return fs.existsSync(socket) ? true : undefined;
        }, 500);
        return socket;
    }
    return {
        c,
        plan,
        logs,
        startPlugin,
        provisionerPod: () => renderedPod(plan, `${DRIVER}-provisioner`, "kubernetes:apps/v1:Deployment"),
        nodePluginPod: () => renderedPod(plan, `${DRIVER}-nodeplugin`, "kubernetes:apps/v1:DaemonSet"),
    };
}
