/**
 * drivers-prebuilt tier: csi-driver-nfs driven as a user drives it, through its rendered sidecars
 * and a real API server: the plan's StorageClasses, a PVC each, a pod that uses it on a node.
 *
 * - the control plane of the engine tier (test/engine/controlplane.sh: etcd, kube-apiserver,
 *   controller-manager, scheduler, kwok) on this machine with every manifest of the plan applied;
 *   the node is a kwok Node (the labels a real node carries: hostname, os, arch);
 * - one QEMU guest of the VM tier (this machine's kernel has no nfs or nfsd) is that node and the
 *   NFS server: Debian's nfs-kernel-server exports a directory (nfsServer.ts);
 * - in the guest, from the rendered manifests through the runner: the node DaemonSet's `nfs`
 *   (csi-driver-nfs, handed in) and `node-driver-registrar` (handed in), and the controller
 *   Deployment's `nfs` (it mounts the share itself to make, delete or archive a volume's directory);
 * - on this machine, the controller pod's csi-provisioner and csi-resizer (handed in) with the
 *   in-cluster configuration of the rendered ServiceAccount (clusterPods.ts), dialling the
 *   controller plugin's socket, forwarded from the guest to the same rendered path (ssh -L);
 * - what stands in for the kubelet: its plugin watcher (kubeletStandIn.ts: GetInfo on the
 *   registrar's socket, NodeGetInfo, the CSINode, NotifyRegistrationStatus) and its volume
 *   manager's CSI calls for the pod, made with csi-call in the guest exactly as the kubelet's CSI
 *   volume plugin makes them for this driver: no NodeStageVolume (the node does not claim
 *   STAGE_UNSTAGE_VOLUME), NodePublishVolume of the PV's volume handle at
 *   <kubelet>/pods/<pod uid>/volumes/kubernetes.io~csi/<pv>/mount with the PV's mount options,
 *   its volume attributes as the context and the claim's access mode; NodeUnpublishVolume before
 *   the pod is deleted. kwok marks the pod Running; nothing runs in it.
 *
 *   ZCLOUD_NFSPLUGIN_BIN=... ZCLOUD_CSI_PROVISIONER_BIN=...-6.3.0 ZCLOUD_CSI_RESIZER_BIN=...-2.2.1 \
 *   ZCLOUD_NODE_DRIVER_REGISTRAR_BIN=...-2.17.0 \
 *     flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/nfs-flow.test.ts
 */
import assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { images } from "../../../components/images";
import { nfsDriverName, nfsSubDirPattern } from "../../../components/nfs";
import { PlanRun, PlannedResource, planYaml } from "../../helpers/plan";
import { applyManifests, toolsEnv } from "../../engine/applied";
import { GuestSet, bootGuests } from "../../vm/harness";
import { csiCallProgram } from "../programs";
import { PreparedContainer, StartedContainer, guestCommand, prepareContainer } from "../runner";
import { copyIntoGuest, flagOf, socketFromGuest, guestUntil } from "../guestFiles";
import { csiNodeFor, getInfo, nodeGetInfo, notifyRegistrationStatus } from "../kubeletStandIn";
import { InClusterPod, applyPvcAndPod, containerLogs, inClusterPod, joinControlPlane, startControlPlane, startControllerSidecars, stopControlPlane, timer, until } from "../clusterPods";
import { downloadNfsServer, startNfsServer } from "../nfsServer";
import { handedIn } from "./handedIn";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../../..");
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const NAMESPACE = "zcloud-storage";
const NODE = "nfs-a";
/** The guest's address in QEMU user networking: the NFS server's and the node's. */
const ADDRESS = "10.0.2.15";
const EXPORT = "/srv/nfs/k8s";
/** Where a pod finds the API server inside its own network namespace on this machine. */
const podApiPort = 6443;
const pinned = images.nfsPlugin.split(":").pop()!;

/** Two storages: the deleted claim's directory goes, or is archived with its data. */
const storages = [
    { name: "nfs-delete", onDelete: "delete", mountOptions: ["nfsvers=4.2", "hard"] },
    { name: "nfs-archive", onDelete: "archive", mountOptions: ["nfsvers=4.1", "noatime"] },
] as const;

const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zf-${suffix}`;
const hostRoot = path.join(dir, "host");
const guestBin = "/opt/zcloud";

let env: NodeJS.ProcessEnv;
let controlPlane: string | undefined;
let vms: GuestSet | undefined;
let run: PlanRun;
let apiPort: number;
let caData: string;
let bins: { plugin: string; provisioner: string; resizer: string; registrar: string };
const timings: string[] = [];
const forwards: ChildProcess[] = [];
const started: StartedContainer[] = [];
const guestLogs: string[] = [];
let controllerNetwork: InClusterPod | undefined;
let nodePlugin: PreparedContainer | undefined;
let controllerPod: Record<string, StartedContainer> | undefined;

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });
const getJson = (args: string[]) => JSON.parse(kubectl([...args, "-o", "json"]));
const guest = () => vms!.get(NODE);

const timed = timer(timings);

/** The one workload of csi-driver-nfs of `type` that runs `container`. */
function workload(type: string, container: string): PlannedResource {
    const found = run.resources.filter((r) => r.type === type && r.name.startsWith("csi-driver-nfs-") && ((r.inputs.spec as any)?.template?.spec?.containers ?? []).some((c: any) => c.name === container));
    assert.equal(found.length, 1, `one ${type} of csi-driver-nfs runs ${container}`);
    return found[0];
}

function prepare(w: PlannedResource, container: string, root: string, podName: string): PreparedContainer {
    return prepareContainer(run, w, container, { root: path.join(dir, root), hostRoot, pod: { nodeName: NODE, podName, namespace: NAMESPACE, podIP: ADDRESS, hostIP: ADDRESS } });
}

/** Starts a container's program in the guest, detached; resolves with its log once `ready` holds (fails at once if it ended). */
async function startInGuest(p: PreparedContainer, program: string, ready: string, prefix = ""): Promise<string> {
    const g = guest();
    const script = `${prefix}${guestCommand(p, { program, network: "node" })}`;
    const pid = (await g.check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & echo $!; }`, { stdin: `${script}\n` })).trim();
    guestLogs.push(`${p.root}.log`);
    await guestUntil(g, `${ready} || ! kill -0 ${pid}`, 120_000, `cat ${p.root}.log`);
    assert.equal((await g.run(ready)).code, 0, `${p.container} ended:\n${(await g.run(`cat ${p.root}.log`)).stdout}`);
    return `${p.root}.log`;
}

const guestLog = async (file: string) => (await guest().run(`tail -n 40 ${file}`)).stdout;

const fromGuest = (local: string, guestPath: string) => socketFromGuest(guest(), local, guestPath, forwards);

async function csiCall(socket: string, call: string, flags: string[]): Promise<any> {
    const quoted = flags.map((f) => `'${f.replace(/'/g, `'\\''`)}'`);
    const out = await guest().check([`${guestBin}/csi-call`, `-endpoint=unix://${socket}`, ...quoted, call].join(" "), { timeoutMs: 300_000 });
    return JSON.parse(out || "{}");
}

const controllerLogs = () => containerLogs(controllerPod ?? {});

/** What is on the export below a namespace's directories (and their archived twins). */
const onExport = async (ns: string) =>
    (await guest().check(`cd ${EXPORT} && find . -mindepth 1 \\( -path './${ns}*' -o -path './archived-${ns}*' \\) | sort`)).trim().split("\n").filter(Boolean);

before(async () => {
    assert.equal(process.getuid?.(), 0, "needs root (the control plane's PKI, QEMU guests, namespaces)");
    bins = {
        plugin: handedIn("ZCLOUD_NFSPLUGIN_BIN", `the csi-driver-nfs ${pinned} nfsplugin`),
        provisioner: handedIn("ZCLOUD_CSI_PROVISIONER_BIN", `the ${images.nfsProvisioner.split(":").pop()} external-provisioner`),
        resizer: handedIn("ZCLOUD_CSI_RESIZER_BIN", `the ${images.nfsResizer.split(":").pop()} external-resizer`),
        registrar: handedIn("ZCLOUD_NODE_DRIVER_REGISTRAR_BIN", `the ${images.nfsNodeDriverRegistrar.split(":").pop()} node-driver-registrar`),
    };
    env = toolsEnv();
    fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
    downloadNfsServer(dir);
    for (const b of [bins.plugin, bins.registrar, csiCallProgram()]) {
        fs.copyFileSync(b, path.join(dir, "bin", path.basename(b)));
    }
    controlPlane = path.join(dir, "controlplane");
    const [set] = await Promise.all([
        timed("guest boot", () => bootGuests([{ name: NODE }])),
        timed("control plane start", () => startControlPlane(controlPlane!, env)),
    ]);
    vms = set;
    ({ caData, apiPort } = joinControlPlane(controlPlane, env, NODE));

    const stack = yaml.dump({ config: { "zcloud-storage:nfs": storages.map((s) => ({ name: s.name, server: ADDRESS, path: EXPORT, onDelete: s.onDelete, mountOptions: [...s.mountOptions] })) } });
    const stackFile = path.join(dir, "Pulumi.nfsflow.yaml");
    fs.writeFileSync(stackFile, stack);
    const out = path.join(dir, "plan");
    await timed("plan", async () => {
        run = await planYaml(stack);
        assert.equal(run.error, undefined, run.error?.message);
        await run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo });
    });
    applyManifests(out, kubectl);
    await timed("nfs-kernel-server", () => startNfsServer(guest(), dir, EXPORT));
    await copyIntoGuest(guest(), path.join(dir, "bin"), fs.readdirSync(path.join(dir, "bin")), guestBin);
});

after(async () => {
    process.stderr.write(`[nfs-flow] timings: ${timings.join(", ")}\n`);
    if (vms && guestLogs.length) {
        process.stderr.write(`[nfs-flow] guest logs:\n${(await guest().run(`tail -n 15 ${guestLogs.join(" ")}`)).stdout}\n`);
    }
    await Promise.all(started.map((s) => s.stop()));
    forwards.forEach((f) => f.kill("SIGTERM"));
    controllerNetwork?.close();
    await vms?.close();
    stopControlPlane(controlPlane, env);
    fs.rmSync(dir, { recursive: true, force: true });
});

describe(`csi-driver-nfs ${pinned} through its CSI sidecars and a real API server`, { timeout: 1_800_000 }, () => {
    test(`the node pod on ${NODE}: nfs and node-driver-registrar as rendered; the kubelet's plugin watcher registers ${nfsDriverName}`, async () => {
        const g = guest();
        const ds = workload(DAEMON_SET, "node-driver-registrar");
        const podName = `csi-driver-nfs-node-${NODE}`;
        const node = prepare(ds, "nfs", "node", podName);
        const registrar = prepare(ds, "node-driver-registrar", "registrar", podName);
        assert.equal((ds.inputs as any).spec.template.spec.containers.find((x: any) => x.name === "node-driver-registrar").image, images.nfsNodeDriverRegistrar);
        // Each container has its own root; the rendered paths (below the roots) are what must agree.
        const rendered = (p: PreparedContainer, file: string) => `/${path.relative(p.root, file)}`;
        const nodeSocket = flagOf(node.argv, "--endpoint").replace(/^unix:\/\//, "");
        const kubeletPath = flagOf(registrar.argv, "--kubelet-registration-path");
        assert.equal(kubeletPath, `/var/lib/kubelet/plugins/${nfsDriverName}/csi.sock`);
        // The socket the node plugin serves is, on the node, the one the registrar names to the kubelet.
        assert.equal(fs.realpathSync(path.dirname(nodeSocket)), path.join(hostRoot, path.dirname(kubeletPath)));
        assert.equal(rendered(registrar, flagOf(registrar.argv, "--csi-address")), rendered(node, nodeSocket));
        await copyIntoGuest(g, dir, ["node", "registrar", "host"], dir);
        nodePlugin = node;
        await startInGuest(node, `${guestBin}/nfsplugin`, `test -S ${nodeSocket}`);
        const registry = path.join(hostRoot, "var/lib/kubelet/plugins_registry");
        const regSocket = path.join(registry, `${nfsDriverName}-reg.sock`);
        // /registration: the registrar's default, the container's mount of the kubelet's plugins_registry.
        const registrarLog = await startInGuest(registrar, `${guestBin}/${path.basename(bins.registrar)}`, `test -S ${regSocket}`, `mkdir -p /registration ${registry} && mount --bind ${registry} /registration && `);

        const info = await getInfo(await fromGuest(path.join(dir, "reg.sock"), regSocket));
        assert.deepEqual(info, { type: "CSIPlugin", name: nfsDriverName, endpoint: kubeletPath, supportedVersions: ["1.0.0"] });
        // The kubelet dials the endpoint on the node: the node plugin's socket through the hostPath.
        const nodeInfo = await nodeGetInfo(await fromGuest(path.join(dir, "node.sock"), path.join(hostRoot, info.endpoint)));
        assert.deepEqual(nodeInfo, { nodeId: NODE, maxVolumesPerNode: 0, topology: {} });
        const uid = getJson(["get", "node", NODE]).metadata.uid;
        kubectl(["create", "-f", "-"], JSON.stringify(csiNodeFor({ name: NODE, uid }, info.name, nodeInfo)));
        await notifyRegistrationStatus(path.join(dir, "reg.sock"), true);
        await until("the registrar logs the registration", async () => (await guestLog(registrarLog)).includes(`status="plugin_registered:true"`) || undefined, 10_000, () => guestLog(registrarLog));
        const caps = await csiCall(nodeSocket, "node-caps", []);
        // No NodeStageVolume for this driver: the kubelet publishes directly.
        assert.ok(!(caps.capabilities ?? []).some((c: any) => c.rpc?.type === "STAGE_UNSTAGE_VOLUME"), JSON.stringify(caps));
    });

    test("the controller pod as rendered: nfs in the guest, csi-provisioner and csi-resizer here with their ServiceAccount's in-cluster config; leader election", async () => {
        assert.ok(nodePlugin, "the node pod runs (test above)");
        const deployment = getJson(["-n", NAMESPACE, "get", "deployment", "csi-driver-nfs-controller"]);
        const w = workload(DEPLOYMENT, "csi-provisioner");
        const podName = "csi-driver-nfs-controller-0";
        // One root for the pod: its emptyDirs (socket-dir, work-dir) are one directory for all its containers.
        const prepared = Object.fromEntries(["nfs", "csi-provisioner", "csi-resizer"].map((n) => [n, prepare(w, n, "ctl", podName)]));
        const socket = flagOf(prepared.nfs.argv, "--endpoint").replace(/^unix:\/\//, "");
        assert.equal(flagOf(prepared["csi-provisioner"].argv, "--csi-address"), socket);
        assert.equal(flagOf(prepared["csi-resizer"].argv, "--csi-address"), socket);
        await copyIntoGuest(guest(), dir, ["ctl"], dir);
        await startInGuest(prepared.nfs, `${guestBin}/nfsplugin`, `test -S ${socket}`);
        // The sidecars dial the rendered socket path here; the forward makes it the guest's.
        await fromGuest(socket, socket);

        controllerNetwork = await inClusterPod({ dir, kubectl, namespace: NAMESPACE, serviceAccount: deployment.spec.template.spec.serviceAccountName, caData, apiPort, podApiPort });
        controllerPod = {};
        // The pod uses the host network; here the sidecars get a pod network of their own only to reach the API server.
        const inPodNetwork = (name: string): PreparedContainer => ({ ...prepared[name], hostNetwork: false });
        const held = await startControllerSidecars({
            kubectl,
            namespace: NAMESPACE,
            pod: controllerNetwork,
            sidecars: [[inPodNetwork("csi-provisioner"), bins.provisioner], [inPodNetwork("csi-resizer"), bins.resizer]],
            leases: ["nfs-csi-k8s-io", "external-resizer-nfs-csi-k8s-io"],
            containers: controllerPod,
            started,
        });
        assert.deepEqual(held, ["external-resizer-nfs-csi-k8s-io", "nfs-csi-k8s-io"]);
    });

    for (const s of storages) {
        test(`${s.name}: a PVC of the plan's class provisioned (subDir as rendered) and bound, a pod on ${NODE} publishes it, writes and reads; expanded; deleted: onDelete ${s.onDelete} on the export`, async () => {
            assert.ok(controllerPod && nodePlugin, "the controller and node pods run (tests above)");
            const g = guest();
            const sc = getJson(["get", "storageclass", s.name]);
            assert.equal(sc.provisioner, nfsDriverName);
            assert.equal(sc.volumeBindingMode, "Immediate");
            assert.equal(sc.reclaimPolicy, "Delete");
            assert.equal(sc.allowVolumeExpansion, true);
            assert.deepEqual(sc.parameters, { server: ADDRESS, share: EXPORT, subDir: nfsSubDirPattern, onDelete: s.onDelete });
            const ns = `web-${s.onDelete}`;
            const workloadState = applyPvcAndPod(kubectl, ns, { storageClass: s.name, accessMode: "ReadWriteMany" });
            const explain = async () => `${workloadState()}\n${controllerLogs()}\n${await guestLog(guestLogs.join(" "))}`;
            const pvc = await timed(`${s.name} bound`, () => until("the PVC bound", () => { const c = getJson(["-n", ns, "get", "pvc", "data"]); return c.status.phase === "Bound" ? c : undefined; }, 120_000, explain));
            const pvName: string = pvc.spec.volumeName;
            const pv = getJson(["get", "pv", pvName]);
            const subDir = `${ns}/data/${pvName}`;
            assert.equal(pv.spec.csi.driver, nfsDriverName);
            assert.equal(pv.spec.persistentVolumeReclaimPolicy, "Delete");
            assert.equal(pv.spec.capacity.storage, "1Gi");
            assert.deepEqual(pv.spec.mountOptions, [...s.mountOptions]);
            assert.deepEqual(pv.spec.accessModes, ["ReadWriteMany"]);
            assert.equal(pv.spec.csi.volumeHandle, [ADDRESS, EXPORT.slice(1), subDir, pvName, s.onDelete === "delete" ? "" : s.onDelete].join("#"));
            // The class's parameters with subDir filled in, the claim's metadata, the provisioner's identity.
            assert.deepEqual(pv.spec.csi.volumeAttributes, { server: ADDRESS, share: EXPORT, subDir, onDelete: s.onDelete, "csi.storage.k8s.io/pv/name": pvName, "csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": ns, "storage.kubernetes.io/csiProvisionerIdentity": pv.spec.csi.volumeAttributes["storage.kubernetes.io/csiProvisionerIdentity"] });
            assert.equal((await g.run(`test -d ${EXPORT}/${subDir}`)).code, 0, (await g.run(`find ${EXPORT}`)).stdout);

            const pod = await until("the pod bound to the node", () => { const p = getJson(["-n", ns, "get", "pod", "app"]); return p.spec.nodeName ? p : undefined; }, 60_000, explain);
            assert.equal(pod.spec.nodeName, NODE);
            // The kubelet's NodePublishVolume for the pod's volume.
            const target = nodePlugin.pathOf(`/var/lib/kubelet/pods/${pod.metadata.uid}/volumes/kubernetes.io~csi/${pvName}/mount`);
            await g.check(`mkdir -p ${path.dirname(target)}`);
            const capability = ["-fs=", "-access-mode=MULTI_NODE_MULTI_WRITER", ...(pv.spec.mountOptions as string[]).map((o) => `-mount-flag=${o}`)];
            const context = Object.entries(pv.spec.csi.volumeAttributes as Record<string, string>).map(([k, v]) => `-context=${k}=${v}`);
            const nodeSocket = flagOf(nodePlugin.argv, "--endpoint").replace(/^unix:\/\//, "");
            await csiCall(nodeSocket, "publish", [`-volume=${pv.spec.csi.volumeHandle}`, `-target=${target}`, ...capability, ...context]);
            const resolved = (await g.check(`realpath ${target}`)).trim();
            const mount = (await g.check(`awk '$2 == "${resolved}" {print $1, $3, $4}' /proc/mounts`)).trim().split(" ");
            assert.equal(mount[0], `${ADDRESS}:${EXPORT}/${subDir}`);
            assert.equal(mount[1], "nfs4");
            assert.ok(mount[2].split(",").includes(s.mountOptions[0].replace("nfsvers", "vers")), mount[2]);
            await g.check(`echo ${s.name} >${target}/file && sync`);
            assert.equal((await g.check(`cat ${target}/file`)).trim(), s.name);
            assert.equal((await g.check(`cat ${EXPORT}/${subDir}/file`)).trim(), s.name);

            // Expansion: the resizer's ControllerExpandVolume; the driver answers the new size and
            // needs no node step (no quota: the export is the same directory, the mount unchanged).
            kubectl(["-n", ns, "patch", "pvc", "data", "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } })]);
            await until("the PV at 2Gi", () => getJson(["get", "pv", pvName]).spec.capacity.storage === "2Gi" || undefined, 120_000, explain);
            const grown = await until("the PVC at 2Gi", () => { const c = getJson(["-n", ns, "get", "pvc", "data"]); return c.status.capacity?.storage === "2Gi" ? c : undefined; }, 60_000, explain);
            assert.ok(!(grown.status.conditions ?? []).some((x: any) => x.type === "FileSystemResizePending"), JSON.stringify(grown.status));
            assert.equal((await g.check(`cat ${target}/file`)).trim(), s.name);

            // The pod goes: the kubelet unpublishes first; then the claim: the provisioner deletes the PV (reclaim Delete).
            await csiCall(nodeSocket, "unpublish", [`-volume=${pv.spec.csi.volumeHandle}`, `-target=${target}`]);
            assert.equal((await g.check(`awk '$2 == "${resolved}"' /proc/mounts`)).trim(), "");
            kubectl(["-n", ns, "delete", "pod", "app", "--wait=true", "--timeout=60s"]);
            kubectl(["-n", ns, "delete", "pvc", "data", "--wait=true", "--timeout=60s"]);
            await timed(`${s.name} PV deleted`, () => until("the PV deleted", () => (getJson(["get", "pv"]).items as any[]).every((x) => x.metadata.name !== pvName) || undefined, 120_000, explain));
            const expected: Record<string, string[]> = {
                // The directory and its emptied parents go.
                delete: [],
                // Renamed below archived-<namespace>; the emptied parents of the old place stay.
                archive: [`./archived-${ns}`, `./archived-${ns}/data`, `./archived-${ns}/data/${pvName}`, `./archived-${ns}/data/${pvName}/file`, `./${ns}`, `./${ns}/data`],
            };
            assert.deepEqual(await onExport(ns), expected[s.onDelete]);
            if (s.onDelete === "archive") {
                assert.equal((await g.check(`cat ${EXPORT}/archived-${ns}/data/${pvName}/file`)).trim(), s.name);
            }
        });
    }
});
