/**
 * drivers-prebuilt tier: csi-sanlock-lvm driven as a user drives it, through its CSI sidecars and
 * a real API server: the plan's iSCSI StorageClass, one PVC, a pod that uses it on an initiator.
 *
 * - the engine tier's control plane (test/engine/controlplane.sh) with every manifest of the plan
 *   applied; the initiator is a kwok Node (the plan's label command gives it the storage label) whose
 *   host is a QEMU guest of the VM tier logged in to a tgtd CHAP LUN with the planned login
 *   command, the shared VG made by the planned VG command;
 * - in the guest, the node pod as rendered: lvmctrld, driverd and node-driver-registrar; a
 *   stand-in for the kubelet's plugin watcher (kubeletStandIn.ts) registers the plugin through the
 *   registrar and writes the CSINode and the topology label the kubelet would;
 * - in the guest too, the controller pod as rendered (its podAffinity puts it next to a node pod:
 *   its sidecars use that pod's socket): csi-provisioner and csi-resizer with the in-cluster
 *   configuration of their ServiceAccount (token, CA, namespace at the fixed path, the API
 *   server at 10.0.2.2, this machine through QEMU's user network; the guest's network stands in
 *   for the pod network);
 * - the kubelet's part for the pod (kwok marks it Running, it runs nothing) is done by this test
 *   with csi-call on the driver's socket, with the requests the kubelet makes: NodeStageVolume at
 *   the kubelet's global mount path, NodePublishVolume at the pod's volume path with the PV's
 *   attributes and the pod's (the CSIDriver has podInfoOnMount), NodeExpandVolume after the
 *   resizer, then unpublish and unstage when the pod goes.
 *
 *   ZCLOUD_SANLOCK_LVMCTRLD_BIN=... ZCLOUD_SANLOCK_DRIVERD_BIN=... ZCLOUD_CSI_PROVISIONER_BIN=... \
 *   ZCLOUD_CSI_RESIZER_BIN=... ZCLOUD_NODE_DRIVER_REGISTRAR_BIN=... \
 *     flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/sanlock-flow.test.ts
 *
 * Not run: the liveness probe, a second initiator (sanlock.test.ts moves a volume between two).
 */
import assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { chapStdin } from "../../../components/iscsi/commands";
import { images } from "../../../components/images";
import { sanlockDriverName, sanlockHostId, sanlockTopologyKey } from "../../../components/iscsi";
import { sanlockPluginDir } from "../../../components/iscsi/csiSanlockLvm";
import { PlanRun, planYaml, resourceNamed } from "../../helpers/plan";
import { performCopies, plannedCopy } from "../../helpers/planned";
import { applyManifests, manifestsInApplyOrder, toolsEnv } from "../../engine/applied";
import { Guest, GuestSet, HOST_FROM_GUEST, bootGuests } from "../../vm/harness";
import { IscsiTarget } from "../../vm/iscsi-target";
import { csiCallProgram } from "../programs";
import { PreparedContainer, guestCommand, prepareContainer } from "../runner";
import { copyIntoGuest, flagOf, guestUntil } from "../guestFiles";
import { csiNodeFor, getInfo, nodeGetInfo, notifyRegistrationStatus } from "../kubeletStandIn";
import { handedIn } from "./handedIn";
import { applyPvcAndPod, joinControlPlane, leasesHeld, serviceAccountToken, startControlPlane, stopControlPlane, timer, until } from "../clusterPods";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../../..");
const STORAGE = "slflow";
const VG = `zcloud-${STORAGE}`;
const IQN = "iqn.2026-11.io.zcloud.test:slflow";
const USER = "k8s";
const NAMESPACE = "zcloud-storage";
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const GiB = 1024 ** 3;
const NODE = "sla";
/** The node's address as its kubelet reports it (status.hostIP): the guest's on QEMU's user network. */
const HOST_IP = "10.0.2.15";
const password = `pw-${crypto.randomBytes(9).toString("hex")}`;
const pinned = images.sanlockDriverd.split(":").pop()!;
const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zf-${suffix}`;
const hostRoot = path.join(dir, "host");
const guestBin = "/opt/zcloud";
/** lvmctrld's LVM uses lvmlockd, as its image's lvm.conf does (see sanlock.test.ts). */
const lvmSystemDir = "/etc/zcloud-lvmctrld-lvm";
const kubeletDir = "/var/lib/kubelet";

let env: NodeJS.ProcessEnv;
let controlPlane: string;
let vms: GuestSet | undefined;
let run: PlanRun;
let out: string;
let apiPort: number;
let caData: string;
let bins: { lvmctrld: string; driverd: string; provisioner: string; resizer: string; registrar: string };
let containerCount = 0;
const timings: string[] = [];
const forwards: ChildProcess[] = [];
const target = new IscsiTarget({ iqn: IQN, lun: 1, sizeMiB: 4096, portals: 1, chap: { username: USER, password } });
/** The node pod's CSI socket and logs once it runs; the controller pod's logs. */
let nodePod: { socket: string; logs: string[] } | undefined;
let controllerLogs: string[] = [];

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });
const getJson = (args: string[]) => JSON.parse(kubectl([...args, "-o", "json"]));
const guest = (): Guest => vms!.get(NODE);
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

const timed = timer(timings);

function prepare(workload: string, type: string, container: string, podName: string): PreparedContainer {
    return prepareContainer(run, resourceNamed(run, workload, type), container, {
        root: path.join(dir, `c${containerCount++}`),
        hostRoot,
        pod: { nodeName: NODE, podName, namespace: NAMESPACE, podIP: HOST_IP, hostIP: HOST_IP },
    });
}

/** Starts a container's program in the guest, detached; its output goes to <root>.log. */
async function startInGuest(p: PreparedContainer, program: string, network: "none" | "node", hostEnv: Record<string, string> = {}, prefix = ""): Promise<string> {
    const script = `${prefix}${guestCommand(p, { program, network, hostEnv })}`;
    await guest().check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & }`, { stdin: `${script}\n` });
    return `${p.root}.log`;
}

const tail = async (files: string[]) => (await guest().run(`tail -n 40 ${files.join(" ")}`)).stdout;
const lvm = (command: string) => `LVM_SYSTEM_DIR=${lvmSystemDir} ${command}`;
/** The VG's LVs but lvmlockd's and the driver's own (RPC) ones: name and size in bytes. */
const volumes = async () =>
    (await guest().check(lvm(`lvs --noheadings --units b --nosuffix -o lv_name,lv_size ${VG}`)))
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter(([name]) => name && name.startsWith("csl-v-"));

/** A guest's socket at a path of this machine (ssh -L), waited for. */
async function fromGuest(local: string, guestPath: string): Promise<string> {
    const f = guest().forwardGuestSocket(local, guestPath);
    forwards.push(f);
    let err = "";
    f.stderr!.on("data", (d) => (err += d));
    await until(`${guestPath} forwarded to ${local}`, () => fs.existsSync(local) || undefined, 20_000, () => err);
    return local;
}

/** One CSI call on the node pod's socket as the kubelet makes it; the response as JSON. */
async function csiCall(call: string, flags: string[]): Promise<any> {
    assert.ok(nodePod, "the node pod runs (test above)");
    const r = await guest().run([`${guestBin}/csi-call`, `-endpoint=unix://${nodePod.socket}`, ...flags.map(q), call].join(" "), { timeoutMs: 600_000 });
    assert.equal(r.code, 0, `csi-call ${call}: ${r.stderr}\n${await tail(nodePod.logs)}`);
    return JSON.parse(r.stdout || "{}");
}

before(async () => {
    assert.equal(process.getuid?.(), 0, "needs root (tgtd, QEMU guests, the control plane's PKI)");
    bins = {
        lvmctrld: handedIn("ZCLOUD_SANLOCK_LVMCTRLD_BIN", `the csi-sanlock-lvm ${pinned} lvmctrld`),
        driverd: handedIn("ZCLOUD_SANLOCK_DRIVERD_BIN", `the csi-sanlock-lvm ${pinned} driverd`),
        provisioner: handedIn("ZCLOUD_CSI_PROVISIONER_BIN", `an external-provisioner ${images.sanlockProvisioner.split(":").pop()}`),
        resizer: handedIn("ZCLOUD_CSI_RESIZER_BIN", `an external-resizer ${images.sanlockResizer.split(":").pop()}`),
        registrar: handedIn("ZCLOUD_NODE_DRIVER_REGISTRAR_BIN", `a node-driver-registrar ${images.sanlockNodeDriverRegistrar.split(":").pop()}`),
    };
    env = toolsEnv();
    fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
    controlPlane = path.join(dir, "controlplane");
    await target.start();
    const [set] = await Promise.all([
        timed("guest boot", () => bootGuests([{ name: NODE, memoryMiB: 1536 }])),
        timed("control plane start", () => startControlPlane(controlPlane!, env)),
    ]);
    vms = set;
    ({ caData, apiPort } = joinControlPlane(controlPlane, env, NODE));

    const c = guest().connection;
    const stack = yaml.dump({
        config: {
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:sanlock-flow" }, hostKeys: { [NODE]: c.hostKey } },
            "zcloud-storage:nodes": { [NODE]: { address: HOST_IP, port: c.port } },
            "zcloud-storage:iscsi": [
                { name: STORAGE, portals: [`${HOST_FROM_GUEST}:${target.ports[0]}`], iqn: IQN, lun: 1, chap: { username: USER, password: { secure: "v1:flow-chap" } }, initiators: [NODE], wipe: false },
            ],
        },
    });
    const stackFile = path.join(dir, "Pulumi.sanlock-flow.yaml");
    fs.writeFileSync(stackFile, stack);
    out = path.join(dir, "plan");
    await timed("plan", async () => {
        run = await planYaml(stack);
        assert.equal(run.error, undefined, run.error?.message);
        await run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo });
    });
    const login = resourceNamed(run, `${STORAGE}-${NODE}-login`, "command:remote:Command");
    const vg = resourceNamed(run, `${STORAGE}-vg`, "command:remote:Command");
    await performCopies((command, stdin) => guest().run(command, { stdin }), [plannedCopy(run.resources, login), plannedCopy(run.resources, vg)]);
    await timed("login", () => guest().check(String(login.inputs.create), { stdin: chapStdin(password), timeoutMs: 300_000 }));
    await timed("VG create", () => guest().check(String(vg.inputs.create), { timeoutMs: 900_000 }));
    applyManifests(out, kubectl);
    await timed("copy programs", async () => {
        for (const [name, file] of Object.entries(bins)) {
            fs.copyFileSync(file, path.join(dir, "bin", name));
        }
        await copyIntoGuest(guest(), path.join(dir, "bin"), Object.keys(bins), guestBin);
        await copyIntoGuest(guest(), path.dirname(csiCallProgram()), ["csi-call"], guestBin);
        await guest().check(`mkdir -p ${lvmSystemDir} && sed 's/^\\s*#\\?\\s*use_lvmlockd = 0/\tuse_lvmlockd = 1/' /etc/lvm/lvm.conf >${lvmSystemDir}/lvm.conf && grep -q '^\\s*use_lvmlockd = 1' ${lvmSystemDir}/lvm.conf`);
    });
});

after(async () => {
    process.stderr.write(`[sanlock-flow] timings: ${timings.join(", ")}\n`);
    forwards.forEach((f) => f.kill("SIGTERM"));
    await vms?.close();
    target.stop();
    stopControlPlane(controlPlane, env);
    fs.rmSync(dir, { recursive: true, force: true });
});

describe(`csi-sanlock-lvm ${pinned} through its CSI sidecars and a real API server`, { timeout: 3_000_000 }, () => {
    const hostId = String(sanlockHostId(HOST_IP));

    test(`the node pod on ${NODE} as rendered: lvmctrld joins the lockspace, driverd serves, the plugin watcher registers it through node-driver-registrar`, async () => {
        const g = guest();
        const node = getJson(["get", "node", NODE]);
        assert.equal(node.metadata.labels["storage.zcloud.io/iscsi"], STORAGE, "the plan's label command labels the initiator");
        const podName = `csi-sanlock-lvm-node-${NODE}`;
        const lvmctrld = prepare("csi-sanlock-lvm-node", DAEMON_SET, "lvmctrld", podName);
        const driverd = prepare("csi-sanlock-lvm-node", DAEMON_SET, "driverd", podName);
        const registrar = prepare("csi-sanlock-lvm-node", DAEMON_SET, "node-driver-registrar", podName);
        await copyIntoGuest(g, dir, [lvmctrld.root, driverd.root, registrar.root, hostRoot].map((f) => path.relative(dir, f)), dir);
        const lvmctrldLog = await timed("lvmctrld joins", async () => {
            const log = await startInGuest(lvmctrld, `${guestBin}/lvmctrld`, "node", { LVM_SYSTEM_DIR: lvmSystemDir });
            await guestUntil(g, `test -S ${flagOf(lvmctrld.argv, "--listen").replace(/^unix:\/\//, "")}`, 600_000, `cat ${log}; sanlock client status`, 2000);
            return log;
        });
        assert.match(await g.check("sanlock client status"), new RegExp(`^s lvm_${VG}:${hostId}:`, "m"));
        const socket = flagOf(driverd.argv, "--listen").replace(/^unix:\/\//, "");
        const driverdLog = await startInGuest(driverd, `${guestBin}/driverd`, "node");
        await guestUntil(g, `test -S ${socket}`, 300_000, `cat ${driverdLog}; echo ---; tail -n 40 ${lvmctrldLog}`, 2000);

        // The registrar writes its socket to /registration (its mount of the kubelet's plugins_registry).
        const registry = path.join(hostRoot, kubeletDir, "plugins_registry");
        const registrarLog = await startInGuest(registrar, `${guestBin}/registrar`, "none", {}, `mkdir -p /registration ${registry} && mount --bind ${registry} /registration && `);
        nodePod = { socket, logs: [lvmctrldLog, driverdLog, registrarLog] };
        const regSocket = path.join(registry, `${sanlockDriverName}-reg.sock`);
        await guestUntil(g, `test -S ${regSocket}`, 60_000, `cat ${registrarLog}`);
        const info = await getInfo(await fromGuest(path.join(dir, "reg.sock"), regSocket));
        assert.deepEqual(info, { type: "CSIPlugin", name: sanlockDriverName, endpoint: flagOf(registrar.argv, "--kubelet-registration-path"), supportedVersions: ["1.0.0"] });
        // The endpoint is a path of the kubelet's (this guest's kubelet directory is <hostRoot>/var/lib/kubelet): driverd's socket.
        assert.equal(info.endpoint, `${sanlockPluginDir}/csi.sock`);
        const endpoint = path.join(hostRoot, info.endpoint);
        assert.equal((await g.run(`test ${endpoint} -ef ${socket}`)).code, 0, `the registrar announces driverd's socket (${socket})`);
        const nodeInfo = await nodeGetInfo(await fromGuest(path.join(dir, "csi.sock"), endpoint));
        // The driver's node id and topology are the node's sanlock host id, the one the plan computes.
        assert.deepEqual(nodeInfo, { nodeId: hostId, maxVolumesPerNode: 0, topology: { [sanlockTopologyKey]: hostId } });
        kubectl(["create", "-f", "-"], JSON.stringify(csiNodeFor({ name: NODE, uid: node.metadata.uid }, info.name, nodeInfo)));
        kubectl(["label", "node", NODE, ...Object.entries(nodeInfo.topology).map(([k, v]) => `${k}=${v}`)]);
        await notifyRegistrationStatus(path.join(dir, "reg.sock"), true);
        await guestUntil(g, `grep -q 'plugin_registered:true' ${registrarLog}`, 10_000, `cat ${registrarLog}`);
    });

    test("the controller pod as rendered, next to the node pod: csi-provisioner and csi-resizer with their ServiceAccount's in-cluster config hold their leases", async () => {
        assert.ok(nodePod, "the node pod runs (test above)");
        const deployment = getJson(["-n", NAMESPACE, "get", "deployment", "csi-sanlock-lvm-controller"]);
        const selector = Object.entries(deployment.spec.selector.matchLabels as Record<string, string>).map(([k, v]) => `${k}=${v}`).join(",");
        // kwok runs the rendered Deployment's pod where its affinities allow: on the initiator, next to the node pod.
        const pod = await until(
            "a csi-sanlock-lvm-controller pod on the initiator",
            () => (getJson(["-n", NAMESPACE, "get", "pods", "-l", selector]).items as any[]).find((p) => p.spec.nodeName === NODE),
            90_000,
            () => kubectl(["-n", NAMESPACE, "get", "pods,rs,ds", "-o", "wide"]),
        );
        const sa = deployment.spec.template.spec.serviceAccountName;
        const token = serviceAccountToken(kubectl, NAMESPACE, sa);
        const secrets = "/var/run/secrets/kubernetes.io/serviceaccount";
        await guest().check(`mkdir -p ${secrets} && cat >${secrets}/token && chmod 600 ${secrets}/token`, { stdin: token });
        await guest().check(`cat >${secrets}/ca.crt && printf %s ${NAMESPACE} >${secrets}/namespace`, { stdin: Buffer.from(caData, "base64") });
        const inCluster = { KUBERNETES_SERVICE_HOST: HOST_FROM_GUEST, KUBERNETES_SERVICE_PORT: String(apiPort) };
        const provisioner = prepare("csi-sanlock-lvm-controller", DEPLOYMENT, "csi-provisioner", pod.metadata.name);
        const resizer = prepare("csi-sanlock-lvm-controller", DEPLOYMENT, "csi-resizer", pod.metadata.name);
        await copyIntoGuest(guest(), dir, [provisioner.root, resizer.root].map((f) => path.relative(dir, f)), dir);
        // The Deployment mounts the node plugin's socket directory from the host: its sidecars dial driverd's socket.
        for (const p of [provisioner, resizer]) {
            assert.equal((await guest().run(`test ${flagOf(p.argv, "--csi-address")} -ef ${nodePod.socket}`)).code, 0, `${p.container} dials ${nodePod.socket}`);
        }
        controllerLogs = [await startInGuest(provisioner, `${guestBin}/provisioner`, "node", inCluster), await startInGuest(resizer, `${guestBin}/resizer`, "node", inCluster)];
        const leases = await leasesHeld(kubectl, NAMESPACE, ["csi-sanlock-lvm-csi-vleo-net", "external-resizer-csi-sanlock-lvm-csi-vleo-net"], () => tail(controllerLogs));
        assert.deepEqual(leases, ["csi-sanlock-lvm-csi-vleo-net", "external-resizer-csi-sanlock-lvm-csi-vleo-net"]);
    });

    test(`a PVC of the StorageClass ${STORAGE} and a pod using it: provisioned and bound, staged and published as the kubelet would, written, expanded, deleted with its LV`, async () => {
        assert.ok(nodePod && controllerLogs.length, "the controller pod runs (test above)");
        const sc = getJson(["get", "storageclass", STORAGE]);
        assert.equal(sc.provisioner, sanlockDriverName);
        assert.equal(sc.volumeBindingMode, "WaitForFirstConsumer");
        assert.equal(sc.reclaimPolicy, "Delete");
        assert.equal(sc.allowVolumeExpansion, true);
        assert.deepEqual(sc.allowedTopologies, [{ matchLabelExpressions: [{ key: sanlockTopologyKey, values: [hostId] }] }]);
        // The class as the program rendered it before this test (allowedTopologies on the node
        // label storage.zcloud.io/iscsi), for the first attempts; the planned one is applied after.
        const oldTopologies = [{ matchLabelExpressions: [{ key: "storage.zcloud.io/iscsi", values: [STORAGE] }] }];
        kubectl(["patch", "storageclass", STORAGE, "--type=merge", "-p", JSON.stringify({ allowedTopologies: oldTopologies })]);
        const ns = "app";
        const workloadState = applyPvcAndPod(kubectl, ns, { storageClass: STORAGE, accessMode: "ReadWriteOnce" });
        const explain = async () => `${workloadState()}\n${await tail([...controllerLogs, ...nodePod!.logs])}`;
        const failed = await timed("ProvisioningFailed (old class)", () =>
            until("the provisioner's answer to the old class", () => (getJson(["-n", ns, "get", "events", "--field-selector", "reason=ProvisioningFailed"]).items as any[])[0]?.message as string | undefined, 300_000, explain),
        );
        process.stderr.write(`[sanlock-flow] old class: ${failed}\n`);
        const classFile = manifestsInApplyOrder(out).find((f) => /^kind: StorageClass$/m.test(fs.readFileSync(f, "utf8")) && new RegExp(`^  name: ${STORAGE}$`, "m").test(fs.readFileSync(f, "utf8")));
        assert.ok(classFile, "the planned StorageClass's manifest");
        // The fix reaches a live class in place: allowedTopologies is mutable (only parameters, provisioner, reclaimPolicy and volumeBindingMode are not).
        kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager", `zcloud-${path.basename(classFile, ".yaml")}`, "-f", classFile]);
        assert.deepEqual(getJson(["get", "storageclass", STORAGE]).allowedTopologies, [{ matchLabelExpressions: [{ key: sanlockTopologyKey, values: [hostId] }] }]);
        const pvc = await timed("PVC bound", () => until("the PVC bound", () => { const c = getJson(["-n", ns, "get", "pvc", "data"]); return c.status.phase === "Bound" ? c : undefined; }, 600_000, explain));
        assert.equal(pvc.metadata.annotations["volume.kubernetes.io/selected-node"], NODE);
        const pv = getJson(["get", "pv", pvc.spec.volumeName]);
        assert.equal(pv.spec.csi.driver, sanlockDriverName);
        assert.equal(pv.spec.persistentVolumeReclaimPolicy, "Delete");
        assert.equal(pv.spec.capacity.storage, "1Gi");
        // v0.4.6 returns no accessible topology from CreateVolume: the PV has no node affinity (docs/iscsi.md, Limits).
        assert.equal(pv.spec.nodeAffinity, undefined);
        const volumeId: string = pv.spec.csi.volumeHandle;
        assert.match(volumeId, new RegExp(`^csl-v-\\S+@${VG}$`));
        const lvName = volumeId.slice(0, volumeId.lastIndexOf("@"));
        assert.deepEqual(await volumes(), [[lvName, String(GiB)]]);
        const pod = await until("the pod bound to the node", () => { const p = getJson(["-n", ns, "get", "pod", "app"]); return p.spec.nodeName ? p : undefined; }, 60_000, explain);
        assert.equal(pod.spec.nodeName, NODE);

        // The kubelet's part: the global mount, then the pod's volume path.
        const fsType: string = pv.spec.csi.fsType ?? "";
        const staging = path.join(hostRoot, kubeletDir, "plugins/kubernetes.io/csi", sanlockDriverName, crypto.createHash("sha256").update(volumeId).digest("hex"), "globalmount");
        const targetPath = path.join(hostRoot, kubeletDir, "pods", pod.metadata.uid, "volumes/kubernetes.io~csi", pv.metadata.name, "mount");
        const attributes = Object.entries((pv.spec.csi.volumeAttributes ?? {}) as Record<string, string>).map(([k, v]) => `-context=${k}=${v}`);
        const podInfo = Object.entries({
            "csi.storage.k8s.io/pod.name": pod.metadata.name,
            "csi.storage.k8s.io/pod.namespace": ns,
            "csi.storage.k8s.io/pod.uid": pod.metadata.uid,
            "csi.storage.k8s.io/serviceAccount.name": pod.spec.serviceAccountName ?? "default",
            "csi.storage.k8s.io/ephemeral": "false",
        }).map(([k, v]) => `-context=${k}=${v}`);
        await guest().check(`mkdir -p ${staging}`);
        await timed("NodeStageVolume", () => csiCall("stage", [`-volume=${volumeId}`, `-fs=${fsType}`, ...attributes, `-staging=${staging}`]));
        await timed("NodePublishVolume", () => csiCall("publish", [`-volume=${volumeId}`, `-fs=${fsType}`, ...attributes, ...podInfo, `-staging=${staging}`, `-target=${targetPath}`]));
        const sum = (await guest().check(`head -c 16M /dev/urandom >${targetPath}/data && sync && sha256sum <${targetPath}/data`)).trim();
        const fsBytes = async () => Number((await guest().check(`df -B1 --output=size ${targetPath} | tail -n 1`)).trim());
        const before = await fsBytes();
        assert.ok(before > 0.85 * GiB && before <= GiB, `file system of ${before} bytes on a 1 GiB volume`);
        process.stderr.write(`[sanlock-flow] file system: ${(await guest().check(`findmnt -n -o FSTYPE,SOURCE ${targetPath}`)).trim()}, ${before} bytes\n`);

        // Expansion while published: the resizer grows the LV, the kubelet's NodeExpandVolume the file system.
        kubectl(["-n", ns, "patch", "pvc", "data", "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } })]);
        await timed("ControllerExpandVolume", () => until("the PV at 2Gi", () => getJson(["get", "pv", pv.metadata.name]).spec.capacity.storage === "2Gi" || undefined, 300_000, explain));
        // csi-sanlock-lvm's controller only answers the size (node expansion required): the LV is
        // active on the node under its lock, so the node plugin extends it (seen 2026-11-27: PV at
        // 2Gi, the LV still 1 GiB until NodeExpandVolume).
        assert.deepEqual(await volumes(), [[lvName, String(GiB)]]);
        await until("the PVC waiting for the node's file system resize", () => (getJson(["-n", ns, "get", "pvc", "data"]).status.conditions as any[] | undefined)?.some((x) => x.type === "FileSystemResizePending" && x.status === "True") || undefined, 60_000, explain);
        await timed("NodeExpandVolume", () => csiCall("node-expand", [`-volume=${volumeId}`, `-fs=${fsType}`, `-target=${targetPath}`, `-staging=${staging}`, `-size=${2 * GiB}`]));
        assert.deepEqual(await volumes(), [[lvName, String(2 * GiB)]]);
        const after = await fsBytes();
        assert.ok(after > before + 0.9 * GiB && after <= 2 * GiB, `file system of ${after} bytes after the expansion to 2 GiB (${before} before)`);
        assert.equal((await guest().check(`sha256sum <${targetPath}/data`)).trim(), sum, "the data survives the expansion");

        // The pod goes: the kubelet unpublishes and unstages; then the PVC goes with the class's reclaim policy.
        kubectl(["-n", ns, "delete", "pod", "app", "--wait=true", "--timeout=60s"]);
        await timed("NodeUnpublishVolume", () => csiCall("unpublish", [`-volume=${volumeId}`, `-target=${targetPath}`]));
        await timed("NodeUnstageVolume", () => csiCall("unstage", [`-volume=${volumeId}`, `-staging=${staging}`]));
        assert.notEqual((await guest().run(`findmnt ${staging}`)).code, 0, "nothing mounted at the global mount");
        kubectl(["-n", ns, "delete", "pvc", "data", "--wait=true", "--timeout=60s"]);
        await timed("DeleteVolume", () => until("the PV deleted", () => (getJson(["get", "pv"]).items as any[]).every((x) => x.metadata.name !== pv.metadata.name) || undefined, 300_000, explain));
        assert.deepEqual(await volumes(), [], "the LV is gone");
        // The break the planned class fixes: external-provisioner takes its requisite terms from
        // allowedTopologies, and the selected node's topology (the driver's key) was not in them.
        const expected = `error generating accessibility requirements: topology [{${sanlockTopologyKey} ${hostId}}] from selected node "${NODE}" is not in requisite: [[{storage.zcloud.io/iscsi ${STORAGE}}]]`;
        assert.ok(failed.includes(expected), `${failed}\ndoes not include\n${expected}`);
    });
});
