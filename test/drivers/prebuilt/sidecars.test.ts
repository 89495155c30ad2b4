/**
 * drivers-prebuilt tier: TopoLVM driven through its CSI sidecars and a real API server, as a user
 * drives it: the plan's StorageClass, a PVC, a pod that uses it scheduled onto a node.
 *
 * - the control plane of the engine tier (test/engine/controlplane.sh: etcd, kube-apiserver,
 *   controller-manager, scheduler, kwok) with every manifest of the plan applied; the storage's
 *   node is a kwok Node, its disk a QEMU guest of the VM tier (the planned disk command makes the VG);
 * - in the guest, with the runner (as the retired guest.test.ts ran them): lvmd and topolvm-node from the rendered containers,
 *   and the node pod's csi-registrar (node-driver-registrar, handed in) with its rendered args; a
 *   stand-in for the kubelet's plugin watcher (kubeletStandIn.ts) finds its socket in the
 *   kubelet's plugins_registry directory, registers the plugin (GetInfo, NodeGetInfo at the
 *   endpoint it names, NotifyRegistrationStatus) and writes the CSINode and topology label the
 *   kubelet would;
 * - on this machine, the controller Deployment's pod as rendered: topolvm-controller,
 *   csi-provisioner and csi-resizer (handed in) in one pod network sharing the socket emptyDir,
 *   each with the in-cluster configuration a pod gets (KUBERNETES_SERVICE_HOST/PORT and the
 *   ServiceAccount's token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount in a
 *   mount namespace of its own), so the rendered RBAC is all they may do; POD_NAME is the name of
 *   a pod of the rendered Deployment that kwok runs, so capacity objects get their real owner.
 *
 *   ZCLOUD_CSI_PROVISIONER_BIN=... ZCLOUD_CSI_RESIZER_BIN=... ZCLOUD_NODE_DRIVER_REGISTRAR_BIN=... \
 *     flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/sidecars.test.ts
 *
 * Not run: the kubelet (kwok marks the pod Running; no NodePublishVolume or NodeExpandVolume of
 * the pod's volume happens), the snapshotter and the liveness probes.
 */
import assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { images } from "../../../components/images";
import { topolvmDriverName } from "../../../components/lvm/topolvm";
import { PlanRun, planYaml, resourceNamed } from "../../helpers/plan";
import { copyOverSsh, plannedCopy } from "../../helpers/planned";
import { applyManifests, toolsEnv } from "../../engine/applied";
import { Guest, GuestSet, HOST_FROM_GUEST, bootGuests } from "../../vm/harness";
import { topolvmBuildDir } from "../programs";
import { PreparedContainer, StartedContainer, guestCommand, prepareContainer, startContainer, waitFor } from "../runner";
import { copyIntoGuest, flagOf, socketFromGuest, tokenKubeconfig } from "../guestFiles";
import { csiNodeFor, getInfo, nodeGetInfo, notifyRegistrationStatus } from "../kubeletStandIn";
import { handedIn } from "./handedIn";
import { InClusterPod, applyPvcAndPod, containerLogs, inClusterPod, joinControlPlane, serviceAccountToken, startControlPlane, startControllerSidecars, stopControlPlane, timer, until } from "../clusterPods";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../../..");
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const NAMESPACE = "zcloud-storage";
const GiB = 1024 ** 3;
const STORAGE = "scfast";
const NODE = "sc-a";
const DISK = "sc-disk";
const TOPOLOGY_KEY = "topology.topolvm.io/node";


const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zs-${suffix}`;
const hostRoot = path.join(dir, "host");
const guestBin = "/opt/zcloud";
/** Where a pod finds the API server inside its own network namespace on this machine. */
const podApiPort = 6443;

let env: NodeJS.ProcessEnv;
let controlPlane: string;
let vms: GuestSet | undefined;
let run: PlanRun;
let apiPort: number;
let caData: string;
let bins: { provisioner: string; resizer: string; registrar: string };
let containerCount = 0;
const timings: string[] = [];
const forwards: ChildProcess[] = [];
const started: StartedContainer[] = [];
let controllerNetwork: InClusterPod | undefined;
/** The node pod's sockets once the node test has them running. */
let nodePod: { registrar: PreparedContainer; registrarLog: string; nodeLog: string } | undefined;
let controllerPod: { containers: Record<string, StartedContainer> } | undefined;

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });
const getJson = (args: string[]) => JSON.parse(kubectl([...args, "-o", "json"]));
const guest = (): Guest => vms!.get(NODE);

const timed = timer(timings);

function prepare(workload: string, type: string, container: string, o: { root?: string; podName?: string } = {}): PreparedContainer {
    return prepareContainer(run, resourceNamed(run, workload, type), container, {
        root: o.root ?? path.join(dir, `c${containerCount++}`),
        hostRoot,
        pod: { nodeName: NODE, podName: o.podName ?? `${container}-x`, namespace: NAMESPACE, podIP: "10.0.2.15" },
    });
}

function kubeconfigFor(serviceAccount: string, server: string): string {
    return tokenKubeconfig(serviceAccount, server, caData, serviceAccountToken(kubectl, NAMESPACE, serviceAccount));
}

/** Starts a container's program in the guest, detached; its output goes to <root>.log. */
async function startInGuest(p: PreparedContainer, program: string, network: "none" | "node", hostEnv: Record<string, string> = {}, prefix = ""): Promise<string> {
    const script = `${prefix}${guestCommand(p, { program, network, hostEnv })}`;
    await guest().check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & }`, { stdin: `${script}\n` });
    return `${p.root}.log`;
}

const guestLog = async (file: string) => (await guest().run(`tail -n 60 ${file}`)).stdout;

const fromGuest = (local: string, guestPath: string) => socketFromGuest(guest(), local, guestPath, forwards);

/** A Kubernetes quantity in bytes (the binary suffixes the provisioner writes, or plain bytes). */
function bytesOf(quantity: string): number {
    const m = quantity.match(/^(\d+)(Ki|Mi|Gi|Ti)?$/);
    assert.ok(m, `quantity ${quantity}`);
    return Number(m[1]) * 1024 ** ["", "Ki", "Mi", "Gi", "Ti"].indexOf(m[2] ?? "");
}

const lvs = async () => (await guest().check(`lvs --noheadings --units b --nosuffix -o lv_name,lv_size zcloud-${STORAGE}`)).trim();
const controllerLogs = () => containerLogs(controllerPod?.containers ?? {});

before(async () => {
    assert.equal(process.getuid?.(), 0, "the sidecars test needs root (the control plane's PKI, QEMU guests, namespaces)");
    bins = {
        provisioner: handedIn("ZCLOUD_CSI_PROVISIONER_BIN", "an external-provisioner"),
        resizer: handedIn("ZCLOUD_CSI_RESIZER_BIN", "an external-resizer"),
        registrar: handedIn("ZCLOUD_NODE_DRIVER_REGISTRAR_BIN", "a node-driver-registrar"),
    };
    process.stdout.write(execFileSync("sh", [path.join(repo, "test/drivers/build-drivers.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
    env = toolsEnv();
    fs.mkdirSync(dir, { recursive: true });
    controlPlane = path.join(dir, "controlplane");
    const [set] = await Promise.all([
        timed("guest boot", () => bootGuests([{ name: NODE, disks: [{ serial: DISK, sizeMiB: 4096 }], memoryMiB: 1536 }])),
        timed("control plane start", () => startControlPlane(controlPlane!, env)),
    ]);
    vms = set;
    ({ caData, apiPort } = joinControlPlane(controlPlane, env, NODE));

    const c = guest().connection;
    const stack = yaml.dump({
        config: {
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:drivers-sidecars" }, hostKeys: { [NODE]: c.hostKey } },
            "zcloud-storage:nodes": { [NODE]: { address: c.host, port: c.port } },
            "zcloud-storage:lvm": [{ name: STORAGE, hosts: { [NODE]: [guest().disks[DISK]] } }],
        },
    });
    const stackFile = path.join(dir, "Pulumi.sidecars.yaml");
    fs.writeFileSync(stackFile, stack);
    const out = path.join(dir, "plan");
    await timed("plan", async () => {
        run = await planYaml(stack);
        assert.equal(run.error, undefined, run.error?.message);
        await run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo });
    });
    await timed("disk command", async () => {
        const copy = copyOverSsh(plannedCopy(run.resources, resourceNamed(run, `${STORAGE}-${NODE}-disks`, "command:remote:Command")));
        await guest().check(copy.command, { stdin: copy.stdin });
        await guest().check("sh -s", { stdin: fs.readFileSync(path.join(out, "node-commands", `${STORAGE}-${NODE}-disks.create.sh`)) });
    });
    applyManifests(out, kubectl);
    await timed("copy programs", async () => {
        await copyIntoGuest(guest(), path.dirname(topolvmBuildDir()), [path.basename(topolvmBuildDir())], guestBin);
        await guest().check(`mv ${guestBin}/${path.basename(topolvmBuildDir())} ${guestBin}/topolvm`);
        await copyIntoGuest(guest(), path.dirname(bins.registrar), [path.basename(bins.registrar)], guestBin);
    });
});

after(async () => {
    process.stderr.write(`[drivers] sidecars.test.ts timings: ${timings.join(", ")}\n`);
    await Promise.all(started.map((s) => s.stop()));
    forwards.forEach((f) => f.kill("SIGTERM"));
    controllerNetwork?.close();
    await vms?.close();
    stopControlPlane(controlPlane, env);
    fs.rmSync(dir, { recursive: true, force: true });
});

describe("TopoLVM through its CSI sidecars and a real API server", { timeout: 3_600_000 }, () => {
    test(`the node pod on ${NODE}: lvmd, topolvm-node and csi-registrar as rendered; the kubelet's plugin watcher registers topolvm.io through the registrar`, async () => {
        const g = guest();
        const lvmd = prepare(`lvmd-${STORAGE}`, DAEMON_SET, "lvmd");
        const node = prepare("topolvm-node", DAEMON_SET, "topolvm-node");
        const registrar = prepare("topolvm-node", DAEMON_SET, "csi-registrar");
        // The image the registrar comes from, and the rendered command it runs.
        assert.equal((resourceNamed(run, "topolvm-node", DAEMON_SET).inputs as any).spec.template.spec.containers.find((x: any) => x.name === "csi-registrar").image, images.topolvm);
        assert.equal(registrar.argv[0], "/csi-node-driver-registrar");
        const nodeSocket = flagOf(node.argv, "--csi-socket");
        // Each container has its own root; the rendered paths (below the roots) are what must agree.
        const rendered = (p: PreparedContainer, file: string) => `/${path.relative(p.root, file)}`;
        const renderedNodeSocket = rendered(node, nodeSocket);
        assert.equal(rendered(registrar, flagOf(registrar.argv, "--csi-address")), renderedNodeSocket, "the registrar dials topolvm-node's socket");
        assert.equal(rendered(registrar, flagOf(registrar.argv, "--kubelet-registration-path")), renderedNodeSocket, "and announces the same socket to the kubelet");
        const kc = path.join(dir, "node.kubeconfig");
        fs.writeFileSync(kc, kubeconfigFor("topolvm-node", `https://${HOST_FROM_GUEST}:${apiPort}`), { mode: 0o600 });
        await copyIntoGuest(g, dir, [lvmd.root, node.root, registrar.root, hostRoot, kc].map((f) => path.relative(dir, f)), dir);
        const lvmdLog = await startInGuest(lvmd, `${guestBin}/topolvm/lvmd`, "none");
        await until("lvmd's socket", async () => (await g.run(`test -S ${lvmd.pathOf("/run/topolvm/lvmd.sock")}`)).code === 0 || undefined, 60_000, () => guestLog(lvmdLog));
        const nodeLog = await startInGuest(node, `${guestBin}/topolvm/topolvm-node`, "node", { KUBECONFIG: kc });
        await until("topolvm-node's socket", async () => (await g.run(`test -S ${nodeSocket}`)).code === 0 || undefined, 120_000, () => guestLog(nodeLog));

        // The registrar writes its socket to /registration (its flag's default, not rendered): the
        // container's mount of the kubelet's plugins_registry, bound there in the guest as the pod would have it.
        const registry = path.join(hostRoot, "var/lib/kubelet/plugins_registry");
        const registrarLog = await startInGuest(registrar, `${guestBin}/${path.basename(bins.registrar)}`, "none", {}, `mkdir -p /registration ${registry} && mount --bind ${registry} /registration && `);
        const regSocket = path.join(registry, `${topolvmDriverName}-reg.sock`);
        await until("the registrar's socket in plugins_registry", async () => (await g.run(`test -S ${regSocket}`)).code === 0 || undefined, 60_000, () => guestLog(registrarLog));

        // The plugin watcher: GetInfo on the registration socket, NodeGetInfo at the endpoint it names.
        const info = await getInfo(await fromGuest(path.join(dir, "reg.sock"), regSocket));
        assert.deepEqual(info, { type: "CSIPlugin", name: topolvmDriverName, endpoint: flagOf(registrar.argv, "--kubelet-registration-path"), supportedVersions: ["1.0.0"] });

        const nodeInfo = await nodeGetInfo(await fromGuest(path.join(dir, "node.sock"), info.endpoint));
        assert.deepEqual(nodeInfo, { nodeId: NODE, maxVolumesPerNode: 0, topology: { [TOPOLOGY_KEY]: NODE } });
        // What the kubelet writes on a successful registration: the CSINode entry and the topology labels.
        const uid = getJson(["get", "node", NODE]).metadata.uid;
        kubectl(["create", "-f", "-"], JSON.stringify(csiNodeFor({ name: NODE, uid }, info.name, nodeInfo)));
        kubectl(["label", "node", NODE, ...Object.entries(nodeInfo.topology).map(([k, v]) => `${k}=${v}`)]);
        await notifyRegistrationStatus(path.join(dir, "reg.sock"), true);
        await until("the registrar logs the registration", async () => (await guestLog(registrarLog)).includes(`"Received NotifyRegistrationStatus call" status="plugin_registered:true"`) || undefined, 10_000, () => guestLog(registrarLog));
        assert.equal((await g.run(`pgrep -f ${path.basename(bins.registrar)}`)).code, 0, `the registrar keeps running:\n${await guestLog(registrarLog)}`);
        nodePod = { registrar, registrarLog, nodeLog };
    });

    test("the controller pod as rendered: topolvm-controller, csi-provisioner and csi-resizer with the in-cluster config of their ServiceAccount; leader election and capacity", async () => {
        assert.ok(nodePod, "the node pod runs (test above)");
        const deployment = getJson(["-n", NAMESPACE, "get", "deployment", "topolvm-controller"]);
        const selector = Object.entries(deployment.spec.selector.matchLabels as Record<string, string>).map(([k, v]) => `${k}=${v}`).join(",");
        // A pod of the rendered Deployment as kwok runs it: its name is the provisioner's POD_NAME.
        const podName = await until("a topolvm-controller pod", () => getJson(["-n", NAMESPACE, "get", "pods", "-l", selector]).items[0]?.metadata.name as string | undefined, 60_000, () => kubectl(["-n", NAMESPACE, "get", "pods,rs", "-o", "wide"]));
        const root = path.join(dir, "ctl");
        const prepared = Object.fromEntries(["topolvm-controller", "csi-provisioner", "csi-resizer"].map((n) => [n, prepare("topolvm-controller", DEPLOYMENT, n, { root, podName })]));
        const socket = flagOf(prepared["topolvm-controller"].argv, "--csi-socket");
        assert.equal(flagOf(prepared["csi-provisioner"].argv, "--csi-address"), socket);
        assert.equal(flagOf(prepared["csi-resizer"].argv, "--csi-address"), socket);
        assert.equal(prepared["csi-provisioner"].env.POD_NAME, podName);

        controllerNetwork = await inClusterPod({ dir, kubectl, namespace: NAMESPACE, serviceAccount: deployment.spec.template.spec.serviceAccountName, caData, apiPort, podApiPort });
        const controller = startContainer(prepared["topolvm-controller"], { network: { enter: controllerNetwork.enter }, hostEnv: controllerNetwork.env });
        started.push(controller);
        controllerPod = { containers: { "topolvm-controller": controller } };
        assert.equal(await waitFor(controller, () => fs.existsSync(socket), 60_000), "ready", `topolvm-controller did not serve on ${socket}:\n${controller.output()}`);

        // Leader election in the storage namespace (rendered --leader-election-namespace), one Lease each.
        const leases = await startControllerSidecars({
            kubectl,
            namespace: NAMESPACE,
            pod: controllerNetwork,
            sidecars: [[prepared["csi-provisioner"], bins.provisioner], [prepared["csi-resizer"], bins.resizer]],
            leases: ["topolvm-io", "external-resizer-topolvm-io"],
            containers: controllerPod.containers,
            started,
        });
        assert.ok(leases.length >= 2);
        // Capacity: one CSIStorageCapacity for the node's topology and the storage's class, owned by the Deployment.
        const capacity = await until(
            "a CSIStorageCapacity for the node",
            () => (getJson(["-n", NAMESPACE, "get", "csistoragecapacities"]).items as any[]).find((c) => c.storageClassName === STORAGE && c.nodeTopology?.matchLabels?.[TOPOLOGY_KEY] === NODE && c.capacity),
            120_000,
            controllerLogs,
        );
        assert.deepEqual(capacity.metadata.ownerReferences.map((o: any) => `${o.kind}/${o.name}`), ["Deployment/topolvm-controller"]);
        const vgFree = Number((await guest().check(`vgs --noheadings --units b --nosuffix -o vg_free zcloud-${STORAGE}`)).trim());
        assert.equal(bytesOf(capacity.capacity), vgFree, `the capacity (${capacity.capacity}) is the VG's free space as lvmd reports it`);
    });

    test(`a PVC of the StorageClass ${STORAGE} and a pod using it: scheduled, provisioned and bound, expanded by the resizer, deleted with its LV`, async () => {
        assert.ok(controllerPod, "the controller pod runs (test above)");
        const sc = getJson(["get", "storageclass", STORAGE]);
        assert.equal(sc.provisioner, topolvmDriverName);
        assert.equal(sc.volumeBindingMode, "WaitForFirstConsumer");
        assert.equal(sc.reclaimPolicy, "Delete");
        assert.equal(sc.allowVolumeExpansion, true);
        const ns = "app";
        const workloadState = applyPvcAndPod(kubectl, ns, { storageClass: STORAGE, accessMode: "ReadWriteOnce" });
        const explain = () => `${workloadState()}\n${controllerLogs()}`;
        // WaitForFirstConsumer: the scheduler picks the node (capacity allowing), the provisioner creates there.
        const pvc = await until("the PVC bound", () => { const c = getJson(["-n", ns, "get", "pvc", "data"]); return c.status.phase === "Bound" ? c : undefined; }, 180_000, explain);
        assert.equal(pvc.metadata.annotations["volume.kubernetes.io/selected-node"], NODE);
        const pv = getJson(["get", "pv", pvc.spec.volumeName]);
        assert.equal(pv.spec.csi.driver, topolvmDriverName);
        assert.equal(pv.spec.persistentVolumeReclaimPolicy, "Delete");
        assert.equal(pv.spec.capacity.storage, "1Gi");
        assert.equal(pv.spec.csi.fsType, "xfs", "the StorageClass's csi.storage.k8s.io/fstype");
        assert.deepEqual(pv.spec.nodeAffinity.required.nodeSelectorTerms, [{ matchExpressions: [{ key: TOPOLOGY_KEY, operator: "In", values: [NODE] }] }]);
        const pod = await until("the pod bound to the node", () => { const p = getJson(["-n", ns, "get", "pod", "app"]); return p.spec.nodeName ? p : undefined; }, 60_000, explain);
        assert.equal(pod.spec.nodeName, NODE);
        const volumeId = pv.spec.csi.volumeHandle;
        const lv = (getJson(["get", "logicalvolumes.topolvm.io"]).items as any[]).find((x) => x.status?.volumeID === volumeId);
        assert.ok(lv, `a LogicalVolume for ${volumeId}`);
        assert.equal(lv.spec.deviceClass, STORAGE);
        assert.equal(lv.spec.nodeName, NODE);
        assert.match(await lvs(), new RegExp(`^\\s*${volumeId}\\s+${GiB}$`, "m"));

        // Expansion: the resizer asks the controller; the LV grows; the file system is the kubelet's part.
        kubectl(["-n", ns, "patch", "pvc", "data", "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } })]);
        await until("the PV at 2Gi", () => getJson(["get", "pv", pv.metadata.name]).spec.capacity.storage === "2Gi" || undefined, 120_000, explain);
        assert.match(await lvs(), new RegExp(`^\\s*${volumeId}\\s+${2 * GiB}$`, "m"));
        const conditions = await until("the PVC waiting for the node's file system resize", () => { const c = getJson(["-n", ns, "get", "pvc", "data"]).status.conditions as any[] | undefined; return c?.some((x) => x.type === "FileSystemResizePending") ? c : undefined; }, 60_000, explain);
        assert.ok(conditions.some((x) => x.type === "FileSystemResizePending" && x.status === "True"));

        // Deletion with the class's reclaim policy: the PV, the LogicalVolume and the LV go.
        kubectl(["-n", ns, "delete", "pod", "app", "--wait=true", "--timeout=60s"]);
        kubectl(["-n", ns, "delete", "pvc", "data", "--wait=true", "--timeout=60s"]);
        await until("the PV deleted", () => (getJson(["get", "pv"]).items as any[]).every((x) => x.metadata.name !== pv.metadata.name) || undefined, 120_000, explain);
        assert.equal((getJson(["get", "logicalvolumes.topolvm.io"]).items as any[]).length, 0);
        assert.doesNotMatch(await lvs(), new RegExp(volumeId));
    });
});
