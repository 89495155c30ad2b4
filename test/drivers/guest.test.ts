/**
 * Drivers tier, on a real kernel: TopoLVM as the plan renders it, against a real API server.
 *
 * - the control plane (test/engine/controlplane.sh: etcd, kube-apiserver, controller-manager,
 *   scheduler, kwok) on this machine's 127.0.0.1; every manifest of the plan applied to it (CRDs,
 *   CSIDriver, RBAC, the node's label patch); the guest's Node kept Ready by kwok;
 * - one QEMU guest of the VM tier is the storage's node: its planned disk command makes the VG on
 *   its virtio disk, then lvmd and topolvm-node run there from the rendered containers (runner.ts
 *   lays out their files; the same paths in the guest), topolvm-node with a token of its rendered
 *   ServiceAccount, so the rendered RBAC is what it gets;
 * - topolvm-controller runs on this machine (a Deployment's pod on another node) in a pod network
 *   of its own, with its ServiceAccount's token; its CSI socket is forwarded into the guest over
 *   SSH, where kubernetes-csi's csi-sanity runs against both sockets and our CSI client
 *   (csi-call) drives a volume as the kubelet and the sidecars would: create, publish with XFS,
 *   write, expand, read back;
 * - the thick storage's guest reboots with a volume published: what the node keeps (VG, LV
 *   activation, mounts) is observed before anything of ours runs, then lvmd and topolvm-node
 *   start again as rendered and the same volume publishes with its data.
 *
 * Needs root, QEMU and the guest image (test/vm), the engine tools (test/engine/build-tools.sh)
 * and the driver builds (build-drivers.sh); all are built once and cached.
 */
import assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { PlanRun, planYaml, resourceNamed } from "../helpers/plan";
import { copyOverSsh, plannedCopy } from "../helpers/planned";
import { applyManifests, toolsEnv } from "../engine/applied";
import { Guest, GuestSet, HOST_FROM_GUEST, bootGuests } from "../vm/harness";
import { PodNetwork, podNetwork } from "./podNetwork";
import { csiCallProgram, csiSanityProgram, topolvmBuildDir } from "./programs";
import { PreparedContainer, StartedContainer, guestCommand, prepareContainer, startContainer, waitFor } from "./runner";
import { copyIntoGuest, csiSanityCommand, csiSanitySummary, flagOf, GuestLvmStorage, guestLvmStackYaml, guestUntil, tokenKubeconfig, topolvmCapacity } from "./guestFiles";
import { parseStackConfig } from "../../components/config/parse";
import { lvmMonitoring, thinPoolPercent, topolvmControllerMetricsTarget, topolvmMetricsTarget } from "../../components/lvm/monitoring";
import { ruleFile } from "../../components/monitoring/stackMonitoring";
import { freePort } from "../helpers/net";
import { PrometheusServer, metricNames, startPrometheus, withFor } from "../monitoring/prometheusServer";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../..");
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const NAMESPACE = "zcloud-storage";
const GiB = 1024 ** 3;

/** A csi-sanity spec pattern skipped, with the reason. */
interface SanitySkip {
    spec: string;
    reason: string;
}

/**
 * TopoLVM's controller claims CREATE_DELETE_SNAPSHOT and CLONE_VOLUME for every device class but
 * implements both only for thin ones (a thick LV has no thin snapshot to take); its own e2e suite
 * skips the same specs for its thick device class.
 */
const thickSkips: SanitySkip[] = [
    { spec: "CreateVolume.*source snapshot", reason: "a volume from a snapshot: TopoLVM makes snapshots of thin volumes only" },
    { spec: "CreateVolume.*source volume", reason: "a clone of a volume: TopoLVM clones thin volumes only (as a thin snapshot)" },
    { spec: "CreateSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
    { spec: "DeleteSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
];

/** One storage of the stack, served by a guest of its own (a node is in at most one LVM storage). */
interface StorageUnderTest extends GuestLvmStorage {
    /** csi-sanity specs skipped for this storage; everything else must pass. */
    skips: SanitySkip[];
    /** Its guest reboots in the last test (booted rebootable). */
    reboots?: boolean;
}

const storages: StorageUnderTest[] = [
    { name: "gthick", node: "topolvm-a", disk: "tl-thick", skips: thickSkips, reboots: true },
    { name: "gthin", node: "topolvm-b", disk: "tl-thin", thin: { overprovisionRatio: 4, snapshots: true }, skips: [] },
];
const [thick, thin] = storages;

/**
 * The thin storage's thresholds in the metrics test, set through its `alerts` as a stack would:
 * low enough to reach with a few hundred MiB written in an emulated guest; the metadata warning
 * just above what writing the data alone reaches.
 */
const metricsThresholds = { thinPoolDataUsed: { warning: 10, critical: 20 }, thinPoolMetadataUsed: { warning: 16, critical: 40 } };
/** What the metrics test writes into a thin volume of 1 GiB (the pool is about 7.2 GiB: about 12 % of it). */
const metricsDataMiB = 896;

/** The controller's CSI socket on this machine, once it serves (forwarded into each guest). */
let controllerSocket: string | undefined;
/** Where everything of this run lives, on this machine and at the same path in the guests. */
const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zg-${suffix}`;
/** A node's host paths shared by its pods (lvmd's socket directory, the kubelet's directories). */
const hostRootOf = (s: StorageUnderTest) => path.join(dir, `host-${s.node}`);
/** The guests' copies of the programs. */
const guestBin = "/opt/zcloud";
const guestTopolvm = (program: string) => `${guestBin}/topolvm/${program}`;
const guestSanity = `${guestBin}/csi-sanity`;
const guestCsiCall = `${guestBin}/csi-call`;
/** Where the controller's CSI socket appears in each guest (forwarded over SSH). */
const controllerInGuest = path.join(dir, "controller.sock");
/** Where a pod finds the API server inside its own network namespace on this machine. */
const podApiPort = 6443;

let env: NodeJS.ProcessEnv;
let controlPlane: string;
let vms: GuestSet | undefined;
let run: PlanRun;
let apiPort: number;
let caData: string;
const timings: string[] = [];
const hostProcesses: ChildProcess[] = [];
const networks: PodNetwork[] = [];
const started: StartedContainer[] = [];
let apiBridge: net.Server | undefined;
/** The real Prometheus of the metrics test (stopped in after). */
let prom: PrometheusServer | undefined;
let containerCount = 0;
/** What runs on each storage's node, once started. */
const served = new Map<string, { guest: Guest; nodeSocket: string; nodeLog: string }>();

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });
const guestOf = (s: StorageUnderTest) => vms!.get(s.node);

async function timed<T>(label: string, f: () => Promise<T>): Promise<T> {
    const t = Date.now();
    try {
        return await f();
    } finally {
        timings.push(`${label} ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
}

const stackYaml = (): string => guestLvmStackYaml(storages, guestOf, "v1:drivers-guest");

/** A kubeconfig with a ServiceAccount's token (the rendered RBAC decides what it may do). */
function kubeconfigFor(serviceAccount: string, server: string): string {
    return tokenKubeconfig(serviceAccount, server, caData, kubectl(["-n", NAMESPACE, "create", "token", serviceAccount, "--duration", "3h"]).trim());
}

/** Each container gets its own short root below the run directory (socket paths are limited). */
function prepare(workload: string, type: string, container: string, node: string, hostRoot: string): PreparedContainer {
    const root = path.join(dir, `c${containerCount++}`);
    return prepareContainer(run, resourceNamed(run, workload, type), container, {
        root,
        hostRoot,
        pod: { nodeName: node, podName: `${container}-x`, namespace: NAMESPACE, podIP: "10.0.2.15" },
    });
}

/** Serves the controller's CSI socket at controllerInGuest in the guest (again after a reboot: the forward ends with the guest's SSH). */
async function forwardController(g: Guest): Promise<void> {
    assert.ok(controllerSocket, "topolvm-controller serves (test above)");
    hostProcesses.push(g.forwardSocket(controllerInGuest, controllerSocket));
    await guestUntil(g, `mkdir -p ${dir} && test -S ${controllerInGuest}`, 30_000, "true");
}

/**
 * Starts lvmd, then topolvm-node, from the rendered containers on the storage's node (new
 * container roots, the node's shared host directory): resolves once both serve, with
 * topolvm-node's socket and log.
 */
async function startNodePods(s: StorageUnderTest): Promise<{ nodeSocket: string; nodeLog: string }> {
    const g = guestOf(s);
    const lvmd = prepare(`lvmd-${s.name}`, DAEMON_SET, "lvmd", s.node, hostRootOf(s));
    const node = prepare("topolvm-node", DAEMON_SET, "topolvm-node", s.node, hostRootOf(s));
    const lvmdSocket = lvmd.pathOf("/run/topolvm/lvmd.sock");
    const nodeSocket = flagOf(node.argv, "--csi-socket");
    // Both pods' files, laid out here, at the same paths in the guest (the host directory they share included).
    const kc = path.join(dir, `${s.node}.kubeconfig`);
    if (!fs.existsSync(kc)) {
        fs.writeFileSync(kc, kubeconfigFor("topolvm-node", `https://${HOST_FROM_GUEST}:${apiPort}`), { mode: 0o600 });
    }
    await copyIntoGuest(g, dir, [lvmd.root, node.root, hostRootOf(s), kc].map((f) => path.relative(dir, f)), dir);
    const lvmdLog = await startInGuest(g, lvmd, "none");
    await guestUntil(g, `test -S ${lvmdSocket}`, 60_000, `cat ${lvmdLog}`);
    const nodeLog = await startInGuest(g, node, "node", { KUBECONFIG: kc });
    await guestUntil(g, `test -S ${nodeSocket}`, 120_000, `cat ${nodeLog}`);
    return { nodeSocket, nodeLog };
}

/** Starts a container's launch script in the guest, detached; its output goes to <root>.log. */
async function startInGuest(g: Guest, p: PreparedContainer, network: "none" | "node", hostEnv: Record<string, string> = {}): Promise<string> {
    const script = guestCommand(p, { program: guestTopolvm(path.basename(p.argv[0])), network, hostEnv });
    // Only the start is in the background (a background list would read its stdin from /dev/null).
    await g.check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & }`, { stdin: `${script}\n` });
    return `${p.root}.log`;
}


/** A unix socket on this machine joined to the API server's TCP port (the pod network's forwarder dials it). */
function bridgeToApi(socket: string, port: number): Promise<net.Server> {
    const server = net.createServer((c) => {
        const t = net.connect(port, "127.0.0.1");
        c.pipe(t).pipe(c);
        c.on("error", () => t.destroy());
        t.on("error", () => c.destroy());
    });
    return new Promise((resolve) => server.listen(socket, () => resolve(server)));
}

/** What runs on a storage's node; fails if its test did not get it running. */
function servedOn(s: StorageUnderTest) {
    const found = served.get(s.name);
    assert.ok(found, `lvmd and topolvm-node run on ${s.node} (test above)`);
    assert.ok(controllerForwarded.has(s.node), `the controller's socket reaches ${s.node} (test above)`);
    return found;
}
const controllerForwarded = new Set<string>();

/** One CSI call in the guest through csi-call; the response as JSON. */
async function csiCall(g: Guest, endpoint: string, call: string, flags: string[]): Promise<any> {
    const out = await g.check([guestCsiCall, `-endpoint=unix://${endpoint}`, ...flags, call].join(" "), { timeoutMs: 360_000 });
    return JSON.parse(out || "{}");
}

const logicalVolumes = () => JSON.parse(kubectl(["get", "logicalvolumes.topolvm.io", "-o", "json"])).items as any[];

/** Creates a volume of the storage through the controller; asserts its LogicalVolume and LV. */
async function createVolume(s: StorageUnderTest, name: string, extra: string[] = []): Promise<any> {
    const g = guestOf(s);
    const volume = (await csiCall(g, controllerInGuest, "create", [`-name=${name}`, `-size=${GiB}`, `-param=topolvm.io/device-class=${s.name}`, "-param=csi.storage.k8s.io/fstype=xfs", ...extra])).volume;
    assert.equal(volume.capacityBytes, String(GiB));
    assert.deepEqual(volume.accessibleTopology, [{ segments: { "topology.topolvm.io/node": s.node } }]);
    // The controller asked through a LogicalVolume; topolvm-node made the LV with lvmd.
    const lv = logicalVolumes().find((x) => x.status?.volumeID === volume.volumeId);
    assert.ok(lv, `a LogicalVolume with volumeID ${volume.volumeId}`);
    assert.equal(lv.spec.nodeName, s.node);
    assert.equal(lv.spec.deviceClass, s.name);
    assert.equal(await lvSize(s, volume.volumeId), String(GiB));
    return volume;
}

const lvSize = async (s: StorageUnderTest, volumeId: string) => (await guestOf(s).check(`lvs --noheadings --units b --nosuffix -o lv_size zcloud-${s.name}/${volumeId}`)).trim();

/** NodePublishVolume as the kubelet calls it for a pod (TopoLVM claims no staging); returns the target. */
async function publish(s: StorageUnderTest, volume: any, pod: string): Promise<string> {
    const target = path.join(dir, "pods", pod, "volumes", "mount");
    const context = Object.entries(volume.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
    await csiCall(guestOf(s), servedOn(s).nodeSocket, "publish", [`-volume=${volume.volumeId}`, `-target=${target}`, "-fs=xfs", ...context]);
    assert.equal((await guestOf(s).check(`findmnt -n -o FSTYPE ${target}`)).trim(), "xfs");
    return target;
}

/** Unpublishes and deletes a volume; its LV and LogicalVolume are gone. */
async function removeVolume(s: StorageUnderTest, volumeId: string, target: string): Promise<void> {
    const g = guestOf(s);
    await csiCall(g, servedOn(s).nodeSocket, "unpublish", [`-volume=${volumeId}`, `-target=${target}`]);
    assert.notEqual((await g.run(`findmnt ${target}`)).code, 0);
    await csiCall(g, controllerInGuest, "delete", [`-volume=${volumeId}`]);
    assert.notEqual((await g.run(`lvs zcloud-${s.name}/${volumeId}`)).code, 0);
    assert.equal(logicalVolumes().filter((x) => x.status?.volumeID === volumeId).length, 0);
}

before(async () => {
    assert.equal(process.getuid?.(), 0, "the drivers guest test needs root (the control plane's PKI and QEMU guests)");
    process.stdout.write(execFileSync("sh", [path.join(repo, "test/drivers/build-drivers.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
    env = toolsEnv();
    fs.mkdirSync(dir, { recursive: true });
    controlPlane = path.join(dir, "controlplane");
    // The guests boot while the control plane starts: the slow parts overlap.
    const [set] = await Promise.all([
        timed("guests boot", () => bootGuests(storages.map((s) => ({ name: s.node, disks: [{ serial: s.disk, sizeMiB: 8192 }], memoryMiB: 1536, rebootable: s.reboots === true })))),
        timed("control plane start", () => run$("bash", [path.join(repo, "test/engine/controlplane.sh"), "start", controlPlane], { env })),
    ]);
    vms = set;
    env.KUBECONFIG = path.join(controlPlane, "kubeconfig");
    const view = JSON.parse(kubectl(["config", "view", "--raw", "-o", "json"]));
    caData = view.clusters[0].cluster["certificate-authority-data"];
    apiPort = Number(new URL(view.clusters[0].cluster.server).port);
    for (const s of storages) {
        execFileSync("bash", [path.join(repo, "test/engine/controlplane.sh"), "add-node", controlPlane, s.node], { env, stdio: ["ignore", "ignore", "inherit"] });
    }

    const stack = stackYaml();
    const stackFile = path.join(dir, "Pulumi.guest.yaml");
    fs.writeFileSync(stackFile, stack);
    const out = path.join(dir, "plan");
    await timed("plan", async () => {
        run = await planYaml(stack);
        assert.equal(run.error, undefined, run.error?.message);
        await run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo });
    });
    // Per node its script copy, then its disk command; then the objects (the nodes' labels
    // included), as the graph orders them.
    await timed("disk commands", () =>
        Promise.all(
            storages.map(async (s) => {
                const copy = copyOverSsh(plannedCopy(run.resources, resourceNamed(run, `${s.name}-${s.node}-disks`, "command:remote:Command")));
                await guestOf(s).check(copy.command, { stdin: copy.stdin });
                await guestOf(s).check("sh -s", { stdin: fs.readFileSync(path.join(out, "node-commands", `${s.name}-${s.node}-disks.create.sh`)) });
            }),
        ),
    );
    applyManifests(out, kubectl);
    await timed("copy programs", () =>
        Promise.all(
            storages.map(async (s) => {
                const g = guestOf(s);
                await copyIntoGuest(g, path.dirname(topolvmBuildDir()), [path.basename(topolvmBuildDir())], guestBin);
                await g.check(`mv ${guestBin}/${path.basename(topolvmBuildDir())} ${guestBin}/topolvm`);
                await copyIntoGuest(g, path.dirname(csiSanityProgram()), ["csi-sanity"], guestBin);
                await copyIntoGuest(g, path.dirname(csiCallProgram()), ["csi-call"], guestBin);
            }),
        ),
    );
});

after(async () => {
    process.stderr.write(`[drivers] guest.test.ts timings: ${timings.join(", ")}\n`);
    await prom?.stop();
    await Promise.all(started.map((s) => s.stop()));
    networks.forEach((n) => n.close());
    for (const p of hostProcesses) {
        p.kill("SIGTERM");
    }
    apiBridge?.close();
    await vms?.close();
    if (controlPlane) {
        execFileSync("bash", [path.join(repo, "test/engine/controlplane.sh"), "stop", controlPlane], { env, stdio: ["ignore", "ignore", "inherit"] });
    }
    fs.rmSync(dir, { recursive: true, force: true });
});

describe("TopoLVM on a real kernel against a real API server", { timeout: 3_600_000 }, () => {
    for (const s of storages) {
        test(`${s.name}: lvmd and topolvm-node run from the rendered containers on ${s.node}; topolvm-node publishes its free capacity on the Node`, async () => {
            const g = guestOf(s);
            const { nodeSocket, nodeLog } = await startNodePods(s);
            const expected = await topolvmCapacity(g, `zcloud-${s.name}`, s.thin);
            const annotation = () => kubectl(["get", "node", s.node, "-o", `jsonpath={.metadata.annotations.capacity\\.topolvm\\.io/${s.name}}`]);
            const deadline = Date.now() + 60_000;
            while (Date.now() < deadline && annotation() === "") {
                await new Promise((r) => setTimeout(r, 1000));
            }
            assert.equal(annotation(), expected, `capacity.topolvm.io/${s.name} on ${s.node}\n${(await g.run(`cat ${nodeLog}`)).stdout}`);
            served.set(s.name, { guest: g, nodeSocket, nodeLog });
        });
    }

    test("topolvm-controller runs with its ServiceAccount's token and serves CSI; its socket reaches each node", async () => {
        const p = prepare("topolvm-controller", DEPLOYMENT, "topolvm-controller", "controller-host", path.join(dir, "host-controller"));
        apiBridge = await bridgeToApi(path.join(dir, "api.sock"), apiPort);
        const network = await podNetwork({ port: podApiPort, socket: path.join(dir, "api.sock") });
        networks.push(network);
        const kc = path.join(dir, "controller.kubeconfig");
        fs.writeFileSync(kc, kubeconfigFor("topolvm-controller", `https://127.0.0.1:${podApiPort}`), { mode: 0o600 });
        const c = startContainer(p, { network, hostEnv: { KUBECONFIG: kc } });
        started.push(c);
        const socket = flagOf(p.argv, "--csi-socket");
        assert.equal(await waitFor(c, () => fs.existsSync(socket), 60_000), "ready", `topolvm-controller did not serve on ${socket}:\n${c.output()}`);
        controllerSocket = socket;
        // Monitoring's controller Service scrapes its `metrics` port: topolvm-controller's own
        // (controller-runtime) endpoint, in the pod's network.
        const metricsPort = topolvmControllerMetricsTarget(false).ports.find((x) => x.name === "metrics")!.port;
        const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
        const metrics = async () => (await run$(network.enter[0], [...network.enter.slice(1), "curl", "-sf", "--max-time", "5", metricsUrl]).catch((e) => ({ stdout: String(e) }))).stdout;
        const deadline = Date.now() + 30_000;
        let text = await metrics();
        while (!text.includes("# TYPE controller_runtime_reconcile_total counter")) {
            assert.ok(Date.now() < deadline, `topolvm-controller's metrics at ${metricsUrl} in its pod network: not within 30000 ms\n${text.slice(0, 2000)}\n${c.output()}`);
            await new Promise((r) => setTimeout(r, 500));
            text = await metrics();
        }
        for (const s of storages) {
            const g = guestOf(s);
            await forwardController(g);
            const caps = await csiCall(g, controllerInGuest, "controller-caps", []);
            // What the thick storage's skips below are about: claimed for every device class.
            assert.deepEqual(caps.capabilities.map((x: any) => x.rpc.type).sort(), ["CLONE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CREATE_DELETE_VOLUME", "EXPAND_VOLUME", "GET_CAPACITY"]);
            controllerForwarded.add(s.node);
        }
    });

    // The thin storage's suite runs against its real pods in the nodes tier (test/nodes/lvm.test.ts).
    for (const s of storages.filter((x) => !x.thin)) {
        test(`${s.name}: csi-sanity's full suite passes against ${s.node}'s node socket and the controller${s.skips.length ? " (skips: thick snapshots and clones)" : ", snapshots and clones included"}`, async () => {
            const { guest: g, nodeSocket, nodeLog } = servedOn(s);
            const work = path.join(dir, `sanity-${s.name}`);
            const params = path.join(work, "params.yaml");
            await g.check(`mkdir -p ${work} && cat >${params}`, { stdin: yaml.dump({ "csi.storage.k8s.io/fstype": "xfs", "topolvm.io/device-class": s.name }) });
            const sanity = (extra: string[]) => csiSanityCommand({ program: guestSanity, nodeSocket, controllerSocket: controllerInGuest, work, params, extra });
            const summaryOf = csiSanitySummary;
            // Each skip names specs that exist (a renamed spec must not turn a skip into nothing).
            for (const { spec } of s.skips) {
                const dry = await g.run(sanity(["--ginkgo.dry-run", `--ginkgo.focus='${spec}'`]));
                assert.ok(summaryOf(dry.stdout).ran > 0, `skip ${spec} matches no spec`);
            }
            const skip = s.skips.length ? [`--ginkgo.skip='${s.skips.map((x) => x.spec).join("|")}'`] : [];
            // A dry run skips only what the patterns skip; the real run also skips the specs of
            // capabilities the driver does not claim (csi-sanity's own checks).
            const skippedHere = summaryOf((await g.run(sanity(["--ginkgo.dry-run", ...skip]))).stdout).skipped;
            const r = await timed(`csi-sanity ${s.name}`, () => g.run(sanity(skip), { timeoutMs: 1_800_000 }));
            const out = `${r.stdout}${r.stderr}`;
            assert.equal(r.code, 0, `csi-sanity failed:\n${out.slice(-20000)}\n--- topolvm-node:\n${(await g.run(`tail -n 60 ${nodeLog}`)).stdout}`);
            const { total, passed, failed, pending, skipped } = summaryOf(out);
            process.stderr.write(`[drivers] csi-sanity ${s.name}: ${total} specs: ${passed} passed, ${failed} failed, ${pending} pending, ${skippedHere} skipped here, ${skipped - skippedHere} skipped by csi-sanity (capability not claimed)\n`);
            assert.equal(failed, 0);
            assert.ok(passed > 0);
            assert.equal(skippedHere > 0, s.skips.length > 0);
        });
    }

    test(`${thick.name}: a volume as the kubelet drives it: created, published with XFS, written, expanded online, read back, removed`, async () => {
        const g = guestOf(thick);
        const { nodeSocket } = servedOn(thick);
        const nodeCaps = await csiCall(g, nodeSocket, "node-caps", []);
        assert.deepEqual(nodeCaps.capabilities.map((c: any) => c.rpc.type).sort(), ["EXPAND_VOLUME", "GET_VOLUME_STATS", "VOLUME_CONDITION"], "no STAGE_UNSTAGE_VOLUME: the kubelet publishes directly");
        const volume = await createVolume(thick, "pvc-io");
        const target = await publish(thick, volume, "io");
        const sum = (await g.check(`head -c 64M /dev/urandom >${target}/data && sync && sha256sum <${target}/data`)).trim();
        const fsSize = async () => Number((await g.check(`df -B1 --output=size ${target} | tail -n1`)).trim());
        const before = await fsSize();
        assert.ok(before > 0.9 * GiB && before <= GiB, `filesystem of ${before} bytes`);

        const expanded = await csiCall(g, controllerInGuest, "controller-expand", [`-volume=${volume.volumeId}`, `-size=${2 * GiB}`]);
        assert.equal(expanded.capacityBytes, String(2 * GiB));
        assert.equal(expanded.nodeExpansionRequired, true);
        assert.equal(await lvSize(thick, volume.volumeId), String(2 * GiB));
        await csiCall(g, nodeSocket, "node-expand", [`-volume=${volume.volumeId}`, `-target=${target}`, `-size=${2 * GiB}`]);
        const after = await fsSize();
        assert.ok(after > 1.9 * GiB && after <= 2 * GiB, `filesystem of ${after} bytes after expansion`);
        assert.match(await g.check(`xfs_info ${target}`), /data\s+=\s+bsize=4096\s+blocks=524288/);
        assert.equal((await g.check(`sha256sum <${target}/data`)).trim(), sum);
        await removeVolume(thick, volume.volumeId, target);
    });

    test(`${thin.name}: a thin volume written, snapshotted, overwritten; a volume from the snapshot holds the data of the snapshot`, async () => {
        const g = guestOf(thin);
        const volume = await createVolume(thin, "pvc-origin");
        const target = await publish(thin, volume, "origin");
        const sum = (await g.check(`head -c 32M /dev/urandom >${target}/data && sync && sha256sum <${target}/data`)).trim();
        // A thin LV in the storage's pool, as the device class says.
        assert.equal((await g.check(`lvs --noheadings -o pool_lv zcloud-${thin.name}/${volume.volumeId}`)).trim(), "pool");
        // The external snapshotter freezes nothing: the kubelet's sync above is what a pod's fsync would be.
        const snapshot = (await csiCall(g, controllerInGuest, "snapshot", [`-volume=${volume.volumeId}`, "-name=snap-origin"])).snapshot;
        assert.equal(snapshot.sourceVolumeId, volume.volumeId);
        assert.equal(snapshot.readyToUse, true);
        await g.check(`head -c 32M /dev/urandom >${target}/data && sync`);
        assert.notEqual((await g.check(`sha256sum <${target}/data`)).trim(), sum);
        const restored = await createVolume(thin, "pvc-restored", [`-snapshot=${snapshot.snapshotId}`]);
        assert.deepEqual(restored.contentSource, { snapshot: { snapshotId: snapshot.snapshotId } });
        const restoredTarget = await publish(thin, restored, "restored");
        assert.equal((await g.check(`sha256sum <${restoredTarget}/data`)).trim(), sum);
        await removeVolume(thin, restored.volumeId, restoredTarget);
        await csiCall(g, controllerInGuest, "delete-snapshot", [`-snapshot=${snapshot.snapshotId}`]);
        assert.notEqual((await g.run(`lvs zcloud-${thin.name}/${snapshot.snapshotId}`)).code, 0);
        await removeVolume(thin, volume.volumeId, target);
        assert.equal(logicalVolumes().length, 0);
    });

    test(`${thin.name}: a real Prometheus scrapes topolvm-node on ${thin.node} with the rendered LVM rules: the thin pool's data alert fires, then its metadata alert; every LVM dashboard query has series`, async () => {
        const g = guestOf(thin);
        servedOn(thin);
        const vg = `zcloud-${thin.name}`;
        const t0 = Date.now();
        const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
        const note = (line: string) => process.stderr.write(`[drivers] metrics: ${line}\n`);
        const pool = async () => {
            const [data, meta] = (await g.check(`lvs --noheadings --nosuffix -o data_percent,metadata_percent ${vg}/pool`)).trim().split(/\s+/).map(Number);
            return { data, meta };
        };
        const { thinPoolDataUsed: dataAt, thinPoolMetadataUsed: metaAt } = metricsThresholds;

        const before = await pool();

        // The rules of this storage as the program renders them, with the thresholds set through its alerts.
        const parsed = parseStackConfig({
            ssh: { privateKey: "k", hostKeys: { [thin.node]: g.connection.hostKey } },
            nodes: { [thin.node]: { address: g.connection.host, port: g.connection.port } },
            monitoring: {},
            lvm: [{ name: thin.name, hosts: { [thin.node]: [g.disks[thin.disk]] }, thin: thin.thin, alerts: metricsThresholds }],
        });
        assert.deepEqual(parsed.errors, []);
        const lvm = lvmMonitoring(parsed.model!.lvm, { namespace: parsed.model!.namespace, ownsDriver: true });
        const gauge = async (part: "data" | "metadata") => {
            const found = await prom!.query(thinPoolPercent(thin.name, part));
            return found.length === 1 ? Number(found[0].value[1]) : undefined;
        };
        /** Prometheus up and scraping topolvm-node's metrics port (the rendered target's), forwarded here over SSH. */
        const scraping = async () => {
            const port = await freePort();
            hostProcesses.push(g.forwardGuestPort(port, topolvmMetricsTarget.ports[0].port));
            const endpoint = `http://127.0.0.1:${port}${topolvmMetricsTarget.path}`;
            const deadline = Date.now() + 30_000;
            let text = "";
            while (!text.includes("topolvm_thinpool_data_percent")) {
                assert.ok(Date.now() < deadline, `topolvm-node's thin pool gauges at ${endpoint} (guest port ${topolvmMetricsTarget.ports[0].port}): not within 30000 ms\n${text.slice(0, 2000)}`);
                await new Promise((r) => setTimeout(r, 500));
                text = await fetch(endpoint, { signal: AbortSignal.timeout(5_000) }).then((r) => r.text(), (e) => String(e));
            }
            prom = await startPrometheus({
                dir: path.join(dir, "prometheus"),
                // As the rendered ServiceMonitor scrapes: the target's path, its own labels kept (node).
                scrapeConfigs: [{ job_name: topolvmMetricsTarget.service, honor_labels: topolvmMetricsTarget.honorLabels, metrics_path: topolvmMetricsTarget.path, static_configs: [{ targets: [`127.0.0.1:${port}`] }] }],
                // Every `for` shortened: the promtool cases (test/monitoring/promtool.test.ts) prove the real ones.
                ruleFiles: [withFor(ruleFile({ lvm }), "4s")],
                interval: "2s",
            });
            await prom.until(`${thinPoolPercent(thin.name, "data")} scraped`, 30_000, () => gauge("data"));
        };
        // What the test makes, removed in the end whatever fails (the reboot test counts LogicalVolumes).
        let volumeId: string | undefined;
        const snapshots: string[] = [];
        let steps = 0;
        try {
            // Data: a thin volume of the storage (made while Prometheus starts), written below.
            const made = async () => {
                const v = await createVolume(thin, "pvc-metrics");
                volumeId = v.volumeId;
                return v;
            };
            const [volume] = await Promise.all([timed("metrics: volume created", made), timed("metrics: Prometheus scrapes topolvm-node", scraping)]);
            const p = prom!;
            const alertsOf = async (prefix: string) => (await p.alerts()).filter((a) => a.labels.alertname.startsWith(prefix) && a.labels.storage === thin.name);
            const firing = (name: string) => p.until(`${name} firing for ${thin.name} in ${p.url}/api/v1/alerts`, 90_000, async () => (await alertsOf(name)).find((a) => a.labels.alertname === name && a.state === "firing"));
            // An alert's labels less the target's (instance, job here; the Operator's scrape adds namespace, pod, service too).
            const alertLabels = (a: { labels: Record<string, string> }) => Object.fromEntries(Object.entries(a.labels).filter(([k]) => k !== "instance" && k !== "job"));
            note(`at start: lvs data ${before.data}%, metadata ${before.meta}%; after the volume's creation the gauges say ${await gauge("data")}%, ${await gauge("metadata")}% (${at()})`);
            assert.ok(before.data < dataAt.warning && before.meta < metaAt.warning, `the pool starts below the test's thresholds: ${JSON.stringify(before)}`);
            assert.deepEqual(await alertsOf("LvmThinPool"), [], "no thin pool alert before anything is written");

            // dm-thin maps a chunk for every write, zeros too.
            const device = `/dev/${vg}/${volume.volumeId}`;
            await timed("metrics: data written", () => g.check(`dd if=/dev/zero of=${device} bs=1M count=${metricsDataMiB} oflag=direct status=none`, { timeoutMs: 300_000 }));
            const written = await pool();
            // lvmd sends topolvm-node the pool's figures only after a volume operation of its own (or on
            // its 10-minute tick): the gauge still says what it said before the writes.
            note(`${metricsDataMiB} MiB written (${at()}): lvs data ${written.data}%, metadata ${written.meta}%; gauges still ${await gauge("data")}%, ${await gauge("metadata")}%`);
            // Any volume operation on the node refreshes them: a snapshot of the volume, as a VolumeSnapshot would.
            snapshots.push((await csiCall(g, controllerInGuest, "snapshot", [`-volume=${volume.volumeId}`, "-name=snap-metrics-data"])).snapshot.snapshotId);
            const refreshedData = Date.now();
            const dataFilling = await timed("metrics: LvmThinPoolDataFilling fires", () => firing("LvmThinPoolDataFilling"));
            const afterData = await pool();
            note(`LvmThinPoolDataFilling firing ${((Date.now() - refreshedData) / 1000).toFixed(1)} s after the refresh (${at()}): lvs data ${afterData.data}%, metadata ${afterData.meta}%; gauges ${await gauge("data")}%, ${await gauge("metadata")}%`);
            assert.deepEqual(alertLabels(dataFilling), { alertname: "LvmThinPoolDataFilling", severity: "warning", storage: thin.name, device_class: thin.name, node: thin.node });
            assert.match(dataFilling.annotations.description, new RegExp(`thin pool data of ${thin.name} on ${thin.node} is \\d+\\.\\d% used`));
            assert.ok(afterData.data >= dataAt.warning && afterData.data < dataAt.critical, `data between the warning and the critical threshold: ${afterData.data}%`);
            assert.ok(afterData.meta < metaAt.warning, `filling the data alone keeps the metadata below ${metaAt.warning}%: ${afterData.meta}%`);
            const dataAlerts = (await alertsOf("LvmThinPool")).map((a) => `${a.labels.alertname} ${a.state}`).sort();
            note(`thin pool alerts: ${dataAlerts.join(", ")}`);
            assert.deepEqual(dataAlerts.filter((a) => !a.includes("FullSoon")), ["LvmThinPoolDataFilling firing"], "the data warning alone: no metadata alert yet, no critical (a forecast may be pending: the share rose fast)");

            // Metadata: thin snapshots of the volume, each followed by a 4 KiB write every 4 MiB of it:
            // each write un-shares a chunk (64 KiB of data) and copies its mapping's btree leaf (a 4 KiB
            // metadata block), so the metadata grows far faster than the data, as with many snapshots.
            const offsets = Array.from({ length: metricsDataMiB / 4 }, (_, i) => i * 4 * 1024 * 1024);
            let now = afterData;
            const metaStart = Date.now();
            while (now.meta < metaAt.warning + 1) {
                assert.ok(steps < 20, `metadata past ${metaAt.warning + 1}% within 20 snapshots: ${now.meta}%`);
                steps++;
                const writes = offsets.map((o) => `-c 'pwrite -q -S ${steps} ${o} 4096'`).join(" ");
                await g.check(`lvcreate --quiet --snapshot --name zmeta${steps} ${vg}/${volume.volumeId} >/dev/null && xfs_io -d ${writes} ${device}`, { timeoutMs: 120_000 });
                now = await pool();
            }
            timings.push(`metrics: metadata filled (${steps} snapshots) ${((Date.now() - metaStart) / 1000).toFixed(1)} s`);
            note(`${steps} snapshots with ${offsets.length} writes each (${at()}): lvs data ${now.data}%, metadata ${now.meta}%; gauges still ${await gauge("data")}%, ${await gauge("metadata")}%`);
            snapshots.push((await csiCall(g, controllerInGuest, "snapshot", [`-volume=${volume.volumeId}`, "-name=snap-metrics-metadata"])).snapshot.snapshotId);
            const refreshedMeta = Date.now();
            const metaFilling = await timed("metrics: LvmThinPoolMetadataFilling fires", () => firing("LvmThinPoolMetadataFilling"));
            const afterMeta = await pool();
            note(`LvmThinPoolMetadataFilling firing ${((Date.now() - refreshedMeta) / 1000).toFixed(1)} s after the refresh (${at()}): lvs data ${afterMeta.data}%, metadata ${afterMeta.meta}%; gauges ${await gauge("data")}%, ${await gauge("metadata")}%`);
            assert.deepEqual(alertLabels(metaFilling), { alertname: "LvmThinPoolMetadataFilling", severity: "warning", storage: thin.name, device_class: thin.name, node: thin.node });
            assert.ok(Date.parse(metaFilling.activeAt) > Date.parse(dataFilling.activeAt), `the metadata alert (active at ${metaFilling.activeAt}) after the data alert (${dataFilling.activeAt})`);
            // The gauges come to lvs's figures once the refresh is through (nothing writes since). lvmd's
            // own 10-minute tick may have sent figures read between two fills first: waited for.
            const gauges = await p.until(`the gauges at lvs's figures (data ${afterMeta.data}%, metadata ${afterMeta.meta}%)`, 30_000, async () => {
                const got = { data: await gauge("data"), meta: await gauge("metadata") };
                return got.data === afterMeta.data && got.meta === afterMeta.meta ? got : undefined;
            });
            note(`gauges ${gauges.data}%, ${gauges.meta}% = lvs (${at()})`);
            assert.ok(afterMeta.data < dataAt.critical && afterMeta.meta < metaAt.critical);
            const thinAlerts = (await alertsOf("LvmThinPool")).map((a) => `${a.labels.alertname} ${a.state}`).sort();
            note(`thin pool alerts: ${thinAlerts.join(", ")}`);
            assert.deepEqual(thinAlerts.filter((a) => !a.includes("FullSoon")), ["LvmThinPoolDataFilling firing", "LvmThinPoolMetadataFilling firing"], "the two warnings, no critical (the forecasts may be pending: the shares rose fast)");

            // Every metric the storage's rules read from TopoLVM is served, with the labels they use.
            const servedNames = new Set((await p.query('count by (__name__) ({__name__=~"topolvm_.+"})')).map((x) => x.metric.__name__));
            const ruleMetrics = [...new Set(lvm.groups.flatMap((gr) => gr.rules).flatMap((r) => metricNames(r.expr)))].sort();
            const fromTopolvm = ruleMetrics.filter((m) => m.startsWith("topolvm_"));
            note(`rule metrics from TopoLVM: ${fromTopolvm.join(", ")}; served: ${[...servedNames].sort().join(", ")}; not TopoLVM's (kube-state-metrics, the kubelet): ${ruleMetrics.filter((m) => !m.startsWith("topolvm_")).join(", ")}`);
            assert.ok(fromTopolvm.length > 0);
            assert.deepEqual(fromTopolvm.filter((m) => !servedNames.has(m)), [], "a rule reads a TopoLVM metric that topolvm-node does not serve");
            for (const m of fromTopolvm) {
                for (const s of await p.query(m)) {
                    assert.equal(s.metric.node, thin.node, `${m} carries node`);
                    assert.equal(s.metric.device_class, thin.name, `${m} carries device_class`);
                }
            }

            // Every query of the LVM dashboard, for this storage.
            const empty: string[] = [];
            for (const panel of lvm.dashboard!.panels as { title: string; targets: { expr: string }[] }[]) {
                for (const t of panel.targets) {
                    const series = await p.query(t.expr.replaceAll("$storage", thin.name));
                    note(`dashboard "${panel.title}": ${series.length} series`);
                    if (series.length === 0) empty.push(panel.title);
                }
            }
            // No kubelet runs here (kwok stands in for it): its volume stats exist only in a real cluster.
            assert.deepEqual(empty, ["Volumes used"], "every dashboard query but the kubelet's volume stats has series");

        } finally {
            await prom?.stop();
            prom = undefined;
            if (steps > 0) await g.run(`lvremove --quiet --yes ${Array.from({ length: steps }, (_, i) => `${vg}/zmeta${i + 1}`).join(" ")}`);
            for (const id of snapshots) {
                await csiCall(g, controllerInGuest, "delete-snapshot", [`-snapshot=${id}`]);
            }
            if (volumeId) await csiCall(g, controllerInGuest, "delete", [`-volume=${volumeId}`]);
        }
        assert.notEqual((await g.run(`lvs ${vg}/${volumeId}`)).code, 0);
        assert.equal(logicalVolumes().length, 0);
        timings.push(`metrics test ${at()}`);
    });

    test(`${thick.name}: ${thick.node} reboots with a volume published; nothing of ours runs until lvmd and topolvm-node start again as rendered, then the same volume publishes with its data`, async () => {
        const g = guestOf(thick);
        const vg = `zcloud-${thick.name}`;
        const volume = await createVolume(thick, "pvc-reboot");
        const target = await publish(thick, volume, "reboot");
        const sum = (await g.check(`head -c 16M /dev/urandom >${target}/data && sync && sha256sum <${target}/data`)).trim();
        const { nodeSocket } = servedOn(thick);
        const ms = await timed(`reboot ${thick.node}`, () => g.reboot(600_000));
        process.stderr.write(`[drivers] ${thick.node} back over SSH ${(ms / 1000).toFixed(1)} s after the reboot\n`);
        // What the node is like before anything of ours runs again: observed first, asserted after.
        const seen: Record<string, { code: number | null; stdout: string; stderr: string }> = {
            programs: await g.run("pgrep -a -f '/opt/zcloud/[t]opolvm/'"),
            vg: await g.run(`vgs --noheadings -o vg_name,pv_count,lv_count,vg_tags ${vg}`),
            lv: await g.run(`lvs --noheadings -o lv_name,lv_active,lv_attr ${vg}/${volume.volumeId}`),
            dm: await g.run("dmsetup ls"),
            mounted: await g.run(`findmnt ${target}`),
            target: await g.run(`ls -ld ${target}`),
            tmp: await g.run("findmnt -n -o FSTYPE /tmp"),
            sockets: await g.run(`ls -l ${nodeSocket}`),
            lvmConfig: await g.run("lvmconfig --typeconfig diff"),
            devicesFile: await g.run("ls /etc/lvm/devices"),
        };
        for (const [what, r] of Object.entries(seen)) {
            process.stderr.write(`[drivers] after reboot, ${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
        }
        assert.notEqual(seen.programs.code, 0, `nothing of ours runs after the reboot: ${seen.programs.stdout}`);
        assert.match(seen.vg.stdout, new RegExp(`^\\s*${vg}\\s+1\\s+1\\s+zcloud\\.machine=`), "the VG is found on its device at boot, stamped, with the volume's LV");
        assert.notEqual(seen.mounted.code, 0, "the published mount is gone");
        const active = seen.lv.stdout.trim().split(/\s+/)[1] === "active";
        process.stderr.write(`[drivers] after reboot the LV is ${active ? "active (event autoactivation at boot)" : "not active"}\n`);

        // The kubelet starts the DaemonSet's pods again: the same containers, as rendered. A socket
        // left from the boot before would pass for a served one: gone first.
        await g.run(`rm -f ${nodeSocket}`);
        const restarted = await timed(`lvmd and topolvm-node ${thick.node} after reboot`, () => startNodePods(thick));
        served.set(thick.name, { guest: g, ...restarted });
        // The kubelet publishes the pod's volume again at the same target.
        await g.check(`mkdir -p ${target}`);
        await timed(`NodePublishVolume ${thick.node} after reboot`, () => publish(thick, volume, "reboot"));
        assert.equal((await g.check(`sha256sum <${target}/data`)).trim(), sum, "the data survived the reboot");
        await forwardController(g);
        await removeVolume(thick, volume.volumeId, target);
        assert.equal(logicalVolumes().length, 0);
    });
});
