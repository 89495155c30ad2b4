/**
 * drivers-prebuilt tier: ceph-csi (CephFS) driven as a user drives it, through its rendered
 * sidecars and a real API server: the plan's CephFS StorageClass, a PVC, a pod that uses it.
 *
 * - the Ceph tier's cluster (cephCsiRig.ts: Ceph 20.2.4 in its chroot and namespace, brought up by
 *   the planned containers) and, beside it, the engine tier's control plane
 *   (test/engine/controlplane.sh: etcd, kube-apiserver, controller-manager, scheduler, kwok) with
 *   every manifest of the same stack's plan applied; the stack's nodes are kwok Nodes (hostname,
 *   os, arch labels, and the plan's label commands' storage labels);
 * - the plan's CSI Secret applied again with the cluster's real client.csi key (the plan shows
 *   it as "[secret]"); the key goes through kubectl's stdin and a 0600 file only;
 * - the provisioner pod as rendered: csi-cephfsplugin in the Ceph namespace (it links the
 *   chroot's libcephfs and reaches the mon), csi-provisioner and csi-resizer (handed in) on this
 *   machine with their ServiceAccount's in-cluster configuration (clusterPods.ts) in a pod
 *   network of their own, dialling the plugin's socket at the rendered path below the pod's root;
 *   they read the provisioner and controller-expand Secrets from the API server, as the class's
 *   csi.storage.k8s.io/*-secret-* parameters say;
 * - the node pod as rendered: csi-cephfsplugin of the DaemonSet (node id zc-node-1) in the Ceph
 *   namespace, with ceph-fuse as its mounter (this machine's kernel has no ceph module), serving
 *   its socket in the node's plugin directory (the host paths of the node live below the
 *   namespace's temp dir); driver-registrar (handed in) on this machine, and a stand-in for the
 *   kubelet's plugin watcher (kubeletStandIn.ts: GetInfo, NodeGetInfo, the CSINode,
 *   NotifyRegistrationStatus);
 * - what stands in for the kubelet's volume manager: this test, with csi-call in the namespace,
 *   making the calls the kubelet's CSI volume plugin makes for this driver (the node claims
 *   STAGE_UNSTAGE_VOLUME): it reads the PV's nodeStageSecretRef Secret from the API server,
 *   NodeStageVolume at <kubelet>/plugins/kubernetes.io/csi/<driver>/<sha256(volume handle)>/globalmount,
 *   NodePublishVolume at <kubelet>/pods/<pod uid>/volumes/kubernetes.io~csi/<pv>/mount, both with
 *   the PV's volume attributes as the context and the claim's access mode, <kubelet> being a
 *   directory of the test's; NodeUnpublishVolume and NodeUnstageVolume before the pod is deleted.
 *   kwok marks the pod Running; nothing runs in it.
 *
 *   ZCLOUD_CEPHCSI_BIN=.../cephcsi ZCLOUD_CSI_PROVISIONER_BIN=...-6.3.0 ZCLOUD_CSI_RESIZER_BIN=...-2.2.1 \
 *   ZCLOUD_NODE_DRIVER_REGISTRAR_BIN=...-2.17.0 \
 *     flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/cephcsi-flow.test.ts
 *
 * Not run: the liveness probe, a node reboot (cephcsi.test.ts restarts the node plugin with a
 * volume published).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { csiCephUser } from "../../../components/cephfs/cluster";
import { cephFsDriverName } from "../../../components/cephfs/cephCsiDriver";
import { csiSecretData } from "../../../components/cephfs/csi";
import { images } from "../../../components/images";
import { tierStackYaml } from "../../ceph/planned";
import { waitFor } from "../../ceph/cluster";
import { applyManifests, toolsEnv } from "../../engine/applied";
import { csiCallProgram } from "../programs";
import { StartedContainer, prepareContainer, startContainer } from "../runner";
import { flagOf } from "../guestFiles";
import { csiNodeFor, getInfo, nodeGetInfo, notifyRegistrationStatus } from "../kubeletStandIn";
import { InClusterPod, applyPvcAndPod, containerLogs, inClusterPod, joinControlPlane, startControlPlane, startControllerSidecars, stopControlPlane, timer, until } from "../clusterPods";
import { CephCsiRig, DRIVER, FS, GiB, NODES, bootCephCsi, ok, show } from "./cephCsiRig";
import { handedIn } from "./handedIn";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../../..");
const NAMESPACE = "zcloud-storage";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const NODE = NODES[0];
const podApiPort = 6443;
const pinned = images.cephCsi.split(":").pop()!;

let env: NodeJS.ProcessEnv;
let dir: string;
let controlPlane: string | undefined;
let rig: CephCsiRig | undefined;
let bins: { cephcsi: string; provisioner: string; resizer: string; registrar: string };
let apiPort: number;
let caData: string;
let controllerNetwork: InClusterPod | undefined;
const started: StartedContainer[] = [];
const timings: string[] = [];
const sockets: Record<string, string> = {};
let controllerPod: Record<string, StartedContainer> | undefined;

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });
const getJson = (args: string[]) => JSON.parse(kubectl([...args, "-o", "json"]));
const timed = timer(timings);
const cluster = () => rig!.c;

/** The subvolumes of the CSI group, by name. */
const subvolumes = async () => (await cluster().cephJson<{ name: string }[]>(["fs", "subvolume", "ls", FS, "csi"])).map((s) => s.name);

/** One CSI call through csi-call in the Ceph namespace (as the kubelet's CSI plugin or a sidecar would make it); the response as JSON. */
async function csiCall(socket: string, call: string, flags: string[]): Promise<any> {
    const c = cluster();
    const r = await c.exec([path.join(c.tmp, "bin", "csi-call"), `-endpoint=unix://${socket}`, ...flags, call], { timeoutMs: 300_000 });
    assert.equal(r.code, 0, `csi-call ${call}: ${show(r)}\n--- node\n${c.daemonLog("cephcsi-nodeplugin").slice(-3000)}`);
    return JSON.parse(r.stdout || "{}");
}

before(async () => {
    assert.equal(process.getuid?.(), 0, "needs root (the control plane's PKI, the Ceph tier's namespace)");
    bins = {
        cephcsi: handedIn("ZCLOUD_CEPHCSI_BIN", `the ceph-csi ${pinned} cephcsi (cgo, against the Ceph tier's libraries)`),
        provisioner: handedIn("ZCLOUD_CSI_PROVISIONER_BIN", `the ${images.cephCsiProvisioner.split(":").pop()} external-provisioner`),
        resizer: handedIn("ZCLOUD_CSI_RESIZER_BIN", `the ${images.cephCsiResizer.split(":").pop()} external-resizer`),
        registrar: handedIn("ZCLOUD_NODE_DRIVER_REGISTRAR_BIN", `the ${images.cephCsiNodeDriverRegistrar.split(":").pop()} node-driver-registrar`),
    };
    env = toolsEnv();
    dir = fs.mkdtempSync("/tmp/zcf-");
    controlPlane = path.join(dir, "controlplane");
    const [booted] = await Promise.all([
        timed("Ceph cluster up", () => bootCephCsi(bins.cephcsi, [[csiCallProgram(), "csi-call"]])),
        timed("control plane start", () => startControlPlane(controlPlane!, env)),
    ]);
    rig = booted;
    const stack = rig.plan.stack;
    for (const node of [...Object.keys(stack.hosts), ...Object.keys(stack.wipeHosts)]) {
        ({ caData, apiPort } = joinControlPlane(controlPlane, env, node));
    }
    // The same stack's plan, written out and applied as `pulumi up` would apply it.
    const stackFile = path.join(dir, "Pulumi.cephflow.yaml");
    fs.writeFileSync(stackFile, tierStackYaml(stack));
    const out = path.join(dir, "plan");
    await timed("plan --out", () => run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo }));
    await timed("manifests applied", async () => applyManifests(out, kubectl));
    // What Pulumi applies with the stack's real key in place of the plan's "[secret]".
    const secret = getJson(["-n", NAMESPACE, "get", "secret", `ceph-${FS}-csi`]);
    assert.deepEqual(Object.keys(secret.data).sort(), ["adminID", "adminKey", "userID", "userKey"]);
    kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager", `zcloud-secret-ceph-${FS}-csi`, "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: `ceph-${FS}-csi`, namespace: NAMESPACE }, stringData: csiSecretData(csiCephUser, rig.c.key("csi")) }));
});

after(async () => {
    process.stderr.write(`[cephcsi-flow] timings: ${timings.join(", ")}\n`);
    for (const name of rig?.logs ?? []) {
        process.stderr.write(`--- ${name} (last lines)\n${rig!.c.daemonLog(name).split("\n").slice(-15).join("\n")}\n`);
    }
    await Promise.all(started.map((s) => s.stop()));
    controllerNetwork?.close();
    stopControlPlane(controlPlane, env);
    await rig?.c.stop();
    if (dir) {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

describe(`ceph-csi ${pinned} (CephFS) through its CSI sidecars and a real API server`, { timeout: 1_800_000 }, () => {
    test(`the node pod on ${NODE}: csi-cephfsplugin and driver-registrar as rendered; the kubelet's plugin watcher registers ${cephFsDriverName}`, async () => {
        const c = cluster();
        // The node as a kubelet registers it, with the plan's storage label; the DaemonSet's pod lands on it.
        const labels = getJson(["get", "node", NODE]).metadata.labels;
        assert.equal(labels["kubernetes.io/hostname"], NODE);
        assert.equal(labels["kubernetes.io/os"], "linux");
        assert.equal(labels["storage.zcloud.io/cephfs"], FS);
        await until("the node plugin's pod on the node", () => (getJson(["-n", NAMESPACE, "get", "pods", "-l", "app.kubernetes.io/component=nodeplugin"]).items as any[]).some((p) => p.spec.nodeName === NODE) || undefined, 60_000, () => kubectl(["-n", NAMESPACE, "get", "pods", "-o", "wide"]));
        // The node's host paths live below the namespace's temp dir (the plugin runs in its chroot).
        const hostRoot = path.join(c.tmp, "host");
        const ds = rig!.plan.resource(`${DRIVER}-nodeplugin`, DAEMON_SET);
        const volumes = (ds.inputs.spec as any).template.spec.volumes as { name: string; hostPath?: { path: string } }[];
        const pluginDir = volumes.find((v) => v.name === "socket-dir")!.hostPath!.path;
        assert.equal(pluginDir, `/var/lib/kubelet/plugins/${cephFsDriverName}`);
        // The registrar's registration directory is its default, /registration (the kubelet's
        // plugins_registry mounted there): written out so the runner moves it with the mount.
        const registrar = prepareContainer(rig!.plan.run, ds, "driver-registrar", { root: path.join(c.tmp, "nodepod"), hostRoot, pod: { nodeName: NODE, podName: `${DRIVER}-nodeplugin-${NODE}`, namespace: NAMESPACE, podIP: "10.0.0.1" }, appendArgs: ["--plugin-registration-path=/registration"] });
        assert.equal((ds.inputs.spec as any).template.spec.containers.find((x: any) => x.name === "driver-registrar").image, images.cephCsiNodeDriverRegistrar);
        const kubeletPath = flagOf(registrar.argv, "--kubelet-registration-path");
        assert.equal(kubeletPath, `${pluginDir}/csi.sock`);
        sockets.node = await rig!.startPlugin(rig!.nodePluginPod(), "nodeplugin", NODE, path.join(hostRoot, pluginDir));
        // The socket the node plugin serves is, on the node, the one the registrar dials and names to the kubelet.
        assert.equal(fs.realpathSync(flagOf(registrar.argv, "--csi-address")), fs.realpathSync(sockets.node));
        assert.equal(sockets.node, path.join(hostRoot, kubeletPath));
        const regSocket = path.join(hostRoot, "var/lib/kubelet/plugins_registry", `${cephFsDriverName}-reg.sock`);
        const reg = startContainer({ ...registrar, program: bins.registrar, unavailable: undefined });
        started.push(reg);
        await until("the registrar's socket", () => fs.existsSync(regSocket) || reg.process.exitCode !== null || undefined, 60_000, () => reg.output());
        assert.ok(fs.existsSync(regSocket), `the registrar ended:\n${reg.output()}`);

        const info = await getInfo(regSocket);
        assert.deepEqual(info, { type: "CSIPlugin", name: cephFsDriverName, endpoint: kubeletPath, supportedVersions: ["1.0.0"] });
        // The kubelet dials the endpoint on the node: the node plugin's socket through the hostPath.
        const nodeInfo = await nodeGetInfo(path.join(hostRoot, info.endpoint));
        assert.deepEqual(nodeInfo, { nodeId: NODE, maxVolumesPerNode: 0, topology: {} });
        const uid = getJson(["get", "node", NODE]).metadata.uid;
        kubectl(["create", "-f", "-"], JSON.stringify(csiNodeFor({ name: NODE, uid }, info.name, nodeInfo)));
        await notifyRegistrationStatus(regSocket, true);
        await until("the registrar logs the registration", () => reg.output().includes(`status="plugin_registered:true"`) || undefined, 10_000, () => reg.output());
        assert.deepEqual(getJson(["get", "csinode", NODE]).spec.drivers.map((d: any) => [d.name, d.nodeID]), [[cephFsDriverName, NODE]]);
        const caps = await csiCall(sockets.node, "node-caps", []);
        // The kubelet stages before it publishes for this driver.
        assert.ok((caps.capabilities ?? []).some((x: any) => x.rpc?.type === "STAGE_UNSTAGE_VOLUME"), JSON.stringify(caps));
    });

    test("the provisioner pod as rendered: csi-cephfsplugin in the Ceph namespace, csi-provisioner and csi-resizer with their ServiceAccount's in-cluster config; leader election", async () => {
        const c = cluster();
        const deployment = getJson(["-n", NAMESPACE, "get", "deployment", `${DRIVER}-provisioner`]);
        sockets.controller = await rig!.startPlugin(rig!.provisionerPod(), "provisioner", NODE);
        // The pod's root is the plugin's: its socket-dir emptyDir is one directory for all its containers.
        const workload = rig!.plan.resource(`${DRIVER}-provisioner`, DEPLOYMENT);
        const pod = { nodeName: NODE, podName: `${DRIVER}-provisioner-0`, namespace: NAMESPACE, podIP: "10.244.0.10" };
        const prepared = Object.fromEntries(["csi-provisioner", "csi-resizer"].map((n) => [n, prepareContainer(rig!.plan.run, workload, n, { root: path.join(c.tmp, "pods", "provisioner"), hostRoot: path.join(dir, "host"), pod })]));
        for (const p of Object.values(prepared)) {
            assert.equal(flagOf(p.argv, "--csi-address"), sockets.controller);
        }
        const rendered = Object.fromEntries(((workload.inputs.spec as any).template.spec.containers as any[]).map((x) => [x.name, x.image]));
        assert.deepEqual(rendered, { "csi-cephfsplugin": images.cephCsi, "csi-provisioner": images.cephCsiProvisioner, "csi-resizer": images.cephCsiResizer });

        controllerNetwork = await inClusterPod({ dir, kubectl, namespace: NAMESPACE, serviceAccount: deployment.spec.template.spec.serviceAccountName, caData, apiPort, podApiPort });
        controllerPod = {};
        const held = await startControllerSidecars({
            kubectl,
            namespace: NAMESPACE,
            pod: controllerNetwork,
            sidecars: [[prepared["csi-provisioner"], bins.provisioner], [prepared["csi-resizer"], bins.resizer]],
            leases: ["cephfs-csi-ceph-com", "external-resizer-cephfs-csi-ceph-com"],
            containers: controllerPod,
            started,
        });
        assert.deepEqual(held, ["cephfs-csi-ceph-com", "external-resizer-cephfs-csi-ceph-com"]);
    });

    test(`${FS}: a PVC of the plan's class provisioned (a subvolume with its quota) and bound; staged and published on ${NODE}, written and read; expanded; deleted: the subvolume goes (reclaim Delete)`, async () => {
        assert.ok(controllerPod && sockets.node, "the provisioner and node plugins run (test above)");
        const c = cluster();
        const sc = getJson(["get", "storageclass", FS]);
        assert.equal(sc.provisioner, cephFsDriverName);
        assert.equal(sc.reclaimPolicy, "Delete");
        assert.equal(sc.allowVolumeExpansion, true);
        const ns = "web";
        const workloadState = applyPvcAndPod(kubectl, ns, { storageClass: FS, accessMode: "ReadWriteMany", node: NODE });
        const explain = () => `${workloadState()}\n${containerLogs(controllerPod ?? {})}\n--- plugin\n${c.daemonLog("cephcsi-provisioner").slice(-3000)}`;
        const pvc = await timed("PVC bound", () => until("the PVC bound", () => { const x = getJson(["-n", ns, "get", "pvc", "data"]); return x.status.phase === "Bound" ? x : undefined; }, 180_000, explain));
        const pvName: string = pvc.spec.volumeName;
        const pv = getJson(["get", "pv", pvName]);
        const attrs = pv.spec.csi.volumeAttributes as Record<string, string>;
        assert.equal(pv.spec.csi.driver, cephFsDriverName);
        assert.equal(pv.spec.persistentVolumeReclaimPolicy, "Delete");
        assert.equal(pv.spec.capacity.storage, "1Gi");
        assert.deepEqual(pv.spec.accessModes, ["ReadWriteMany"]);
        assert.deepEqual(pv.spec.csi.nodeStageSecretRef, { name: `ceph-${FS}-csi`, namespace: NAMESPACE });
        assert.equal(attrs.clusterID, c.fsid);
        assert.equal(attrs.fsName, FS);
        assert.equal(attrs.pool, `${FS}-data`);
        const subvolume = attrs.subvolumeName;
        assert.match(subvolume, /^csi-vol-[0-9a-f-]{36}$/);
        assert.ok((await subvolumes()).includes(subvolume), `${subvolume} in the csi group`);
        // --extra-create-metadata: the claim's and the PV's names reach the driver, which keeps them on the subvolume (not in the PV's attributes).
        const metadata = await c.cephJson<Record<string, string>>(["fs", "subvolume", "metadata", "ls", FS, subvolume, "--group_name", "csi"]);
        assert.deepEqual(
            { pvc: metadata["csi.storage.k8s.io/pvc/name"], namespace: metadata["csi.storage.k8s.io/pvc/namespace"], pv: metadata["csi.storage.k8s.io/pv/name"] },
            { pvc: "data", namespace: ns, pv: pvName },
            JSON.stringify({ metadata, attrs }),
        );
        const info = () => c.cephJson<{ bytes_quota: number; data_pool: string; path: string }>(["fs", "subvolume", "info", FS, subvolume, "--group_name", "csi"]);
        const before = await info();
        assert.equal(before.bytes_quota, GiB);
        assert.equal(before.data_pool, `${FS}-data`);
        assert.equal(attrs.subvolumePath, before.path);

        const app = await until("the pod bound to the node", () => { const p = getJson(["-n", ns, "get", "pod", "app"]); return p.spec.nodeName ? p : undefined; }, 60_000, explain);
        assert.equal(app.spec.nodeName, NODE);
        // The kubelet reads the node-stage Secret the PV names (never printed: a 0600 file in the namespace's scratch).
        const ref = pv.spec.csi.nodeStageSecretRef;
        const stageSecret = getJson(["-n", ref.namespace, "get", "secret", ref.name]).data as Record<string, string>;
        const secretsFile = path.join(c.tmp, "scratch", "node-stage-secret");
        fs.writeFileSync(secretsFile, Object.entries(stageSecret).map(([k, v]) => `${k}=${Buffer.from(v, "base64").toString()}`).join("\n") + "\n", { mode: 0o600 });
        const kubelet = path.join(c.tmp, "kubelet");
        const handle: string = pv.spec.csi.volumeHandle;
        const staging = path.join(kubelet, "plugins/kubernetes.io/csi", cephFsDriverName, crypto.createHash("sha256").update(handle).digest("hex"), "globalmount");
        const target = path.join(kubelet, "pods", app.metadata.uid, "volumes/kubernetes.io~csi", pvName, "mount");
        fs.mkdirSync(staging, { recursive: true });
        fs.mkdirSync(path.dirname(target), { recursive: true });
        const capability = ["-fs=", "-access-mode=MULTI_NODE_MULTI_WRITER"];
        const context = Object.entries(attrs).map(([k, v]) => `-context=${k}=${v}`);
        await timed("staged and published", async () => {
            await csiCall(sockets.node, "stage", [`-volume=${handle}`, `-staging=${staging}`, `-secrets=${secretsFile}`, ...capability, ...context]);
            await csiCall(sockets.node, "publish", [`-volume=${handle}`, `-staging=${staging}`, `-target=${target}`, ...capability, ...context]);
        });
        assert.match(ok(await c.exec(["findmnt", "-n", "-o", "FSTYPE", staging])).stdout, /^fuse\.ceph-fuse/);
        ok(await c.exec(["sh", "-c", 'printf "zcloud through the sidecars\\n" > "$1/file" && sync', "write", target]));
        assert.equal(ok(await c.exec(["cat", path.join(target, "file")])).stdout, "zcloud through the sidecars\n");
        const dfSize = async () => Number(ok(await c.exec(["df", "-B1", "--output=size", target])).stdout.trim().split("\n")[1]);
        assert.equal(await dfSize(), GiB, "ceph-fuse reports the subvolume's quota as its size");

        // Expansion: the resizer's ControllerExpandVolume with the controller-expand Secret sets the quota; no node step.
        kubectl(["-n", ns, "patch", "pvc", "data", "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } })]);
        await timed("expanded", () => until("the PV at 2Gi", () => getJson(["get", "pv", pvName]).spec.capacity.storage === "2Gi" || undefined, 120_000, explain));
        const grown = await until("the PVC at 2Gi", () => { const x = getJson(["-n", ns, "get", "pvc", "data"]); return x.status.capacity?.storage === "2Gi" ? x : undefined; }, 60_000, explain);
        assert.ok(!(grown.status.conditions ?? []).some((x: any) => x.type === "FileSystemResizePending"), JSON.stringify(grown.status));
        assert.equal((await info()).bytes_quota, 2 * GiB);
        await waitFor("the mount's size after expansion", 60_000, async () => ((await dfSize()) === 2 * GiB ? true : undefined), 2000);
        assert.equal(ok(await c.exec(["cat", path.join(target, "file")])).stdout, "zcloud through the sidecars\n");

        // The pod goes: the kubelet unpublishes and unstages; then the claim: the provisioner deletes the volume (reclaim Delete).
        await csiCall(sockets.node, "unpublish", [`-volume=${handle}`, `-target=${target}`]);
        await csiCall(sockets.node, "unstage", [`-volume=${handle}`, `-staging=${staging}`]);
        assert.equal((await c.exec(["findmnt", staging])).code, 1, "nothing stays mounted");
        kubectl(["-n", ns, "delete", "pod", "app", "--wait=true", "--timeout=60s"]);
        kubectl(["-n", ns, "delete", "pvc", "data", "--wait=true", "--timeout=60s"]);
        await timed("PV deleted", () => until("the PV deleted", () => (getJson(["get", "pv"]).items as any[]).every((x) => x.metadata.name !== pvName) || undefined, 120_000, explain));
        assert.ok(!(await subvolumes()).includes(subvolume), `${subvolume} is deleted`);
    });
});
