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
 *   write, expand, read back.
 *
 * Needs root, QEMU and the guest image (test/vm), the engine tools (test/engine/build-tools.sh)
 * and the driver builds (build-drivers.sh); all are built once and cached.
 */
import assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { PlanRun, planYaml, resourceNamed } from "../helpers/plan";
import { applyManifests, toolsEnv } from "../engine/applied";
import { Guest, GuestSet, HOST_FROM_GUEST, bootGuests } from "../vm/harness";
import { PodNetwork, podNetwork } from "./podNetwork";
import { csiCallProgram, driverCacheRoot, topolvmBuildDir } from "./programs";
import { PreparedContainer, StartedContainer, guestCommand, prepareContainer, startContainer, waitFor } from "./runner";

const run$ = promisify(execFile);
const repo = path.resolve(__dirname, "../..");
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const NAMESPACE = "zcloud-storage";
const GiB = 1024 ** 3;

const STORAGE = "gthick";
const NODE = "topolvm-a";
const DISK = "tl-thick";
const csiSanityVersion = "5.6.0";

/**
 * csi-sanity specs skipped, each with the reason; everything else must pass. TopoLVM's controller
 * claims CREATE_DELETE_SNAPSHOT and CLONE_VOLUME for every device class, but implements both only
 * for thin ones (a thick LV has no thin snapshot to take); its own e2e suite skips the same specs
 * for its thick device class. The storage here is thick.
 */
const sanitySkips: Array<{ spec: string; reason: string }> = [
    { spec: "CreateVolume.*source snapshot", reason: "a volume from a snapshot: TopoLVM makes snapshots of thin volumes only" },
    { spec: "CreateVolume.*source volume", reason: "a clone of a volume: TopoLVM clones thin volumes only (a thin snapshot)" },
    { spec: "CreateSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
    { spec: "DeleteSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
];

/** Where everything of this run lives, on this machine and at the same path in the guest. */
const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zg-${suffix}`;
const hostRoot = path.join(dir, "host");
/** The guest's copies of the programs. */
const guestBin = "/opt/zcloud";
const guestTopolvm = (program: string) => `${guestBin}/topolvm/${program}`;
const guestSanity = `${guestBin}/csi-sanity`;
const guestCsiCall = `${guestBin}/csi-call`;
/** Where the controller's CSI socket appears in the guest (forwarded over SSH). */
const controllerInGuest = path.join(dir, "controller.sock");
/** Where a pod finds the API server inside its own network namespace on this machine. */
const podApiPort = 6443;

let env: NodeJS.ProcessEnv;
let controlPlane: string;
let vms: GuestSet | undefined;
let guest: Guest;
let run: PlanRun;
let apiPort: number;
let caData: string;
const timings: string[] = [];
const hostProcesses: ChildProcess[] = [];
const networks: PodNetwork[] = [];
const started: StartedContainer[] = [];
let apiBridge: net.Server | undefined;
let containerCount = 0;

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { encoding: "utf8", env, input });

async function timed<T>(label: string, f: () => Promise<T>): Promise<T> {
    const t = Date.now();
    try {
        return await f();
    } finally {
        timings.push(`${label} ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
}

function stackYaml(g: Guest): string {
    return yaml.dump({
        config: {
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:drivers-guest" }, hostKeys: { [NODE]: g.connection.hostKey } },
            "zcloud-storage:nodes": { [NODE]: { address: g.connection.host, port: g.connection.port } },
            "zcloud-storage:lvm": [{ name: STORAGE, hosts: { [NODE]: [g.disks[DISK]] } }],
        },
    });
}

/** A kubeconfig with a ServiceAccount's token (the rendered RBAC decides what it may do). */
function kubeconfigFor(serviceAccount: string, server: string): string {
    const token = kubectl(["-n", NAMESPACE, "create", "token", serviceAccount, "--duration", "3h"]).trim();
    return yaml.dump({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "engine", cluster: { server, "certificate-authority-data": caData } }],
        users: [{ name: serviceAccount, user: { token } }],
        contexts: [{ name: serviceAccount, context: { cluster: "engine", user: serviceAccount } }],
        "current-context": serviceAccount,
    });
}

/** Each container gets its own short root below the run directory (socket paths are limited). */
function prepare(workload: string, type: string, container: string): PreparedContainer {
    const root = path.join(dir, `c${containerCount++}`);
    return prepareContainer(run, resourceNamed(run, workload, type), container, {
        root,
        hostRoot,
        pod: { nodeName: NODE, podName: `${container}-x`, namespace: NAMESPACE, podIP: "10.0.2.15" },
    });
}

const flagOf = (argv: string[], flag: string) => {
    const found = argv.find((a) => a.startsWith(`${flag}=`));
    assert.ok(found, `no ${flag} in ${argv.join(" ")}`);
    return found.slice(flag.length + 1);
};

/** Copies local files into the guest at the same paths (tar over the SSH session's stdin). */
async function copyIntoGuest(g: Guest, from: string, paths: string[], to: string): Promise<void> {
    const tar = execFileSync("tar", ["-c", "-C", from, ...paths], { maxBuffer: 512 * 1024 * 1024 });
    await g.check(`mkdir -p ${to} && tar -x -C ${to}`, { stdin: tar, timeoutMs: 600_000 });
}

/** Starts a container's launch script in the guest, detached; its output goes to <root>.log. */
async function startInGuest(g: Guest, p: PreparedContainer, network: "none" | "node", hostEnv: Record<string, string> = {}): Promise<string> {
    const root = p.root;
    const script = guestCommand(p, { program: guestTopolvm(path.basename(p.argv[0])), network, hostEnv });
    // Only the start is in the background (a background list would read its stdin from /dev/null).
    await g.check(`cat >${root}.sh && { setsid sh ${root}.sh >${root}.log 2>&1 </dev/null & }`, { stdin: `${script}\n` });
    return `${root}.log`;
}

/** Polls a guest command until it succeeds; fails with `explain`'s output after `ms`. */
async function guestUntil(g: Guest, check: string, ms: number, explain: string): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        if ((await g.run(check)).code === 0) {
            return;
        }
        await new Promise((r) => setTimeout(r, 1000));
    }
    assert.fail(`${check}: not true within ${ms} ms\n${(await g.run(explain)).stdout}`);
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

/** One CSI call in the guest through csi-call; the response as JSON. */
async function csiCall(endpoint: string, call: string, flags: string[]): Promise<any> {
    const out = await guest.check([guestCsiCall, `-endpoint=unix://${endpoint}`, ...flags, call].join(" "), { timeoutMs: 360_000 });
    return JSON.parse(out || "{}");
}

before(async () => {
    assert.equal(process.getuid?.(), 0, "the drivers guest test needs root (the control plane's PKI and QEMU guests)");
    process.stdout.write(execFileSync("sh", [path.join(repo, "test/drivers/build-drivers.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
    env = toolsEnv();
    fs.mkdirSync(dir, { recursive: true });
    controlPlane = path.join(dir, "controlplane");
    // The guest boots while the control plane starts: the two slow parts overlap.
    const [set] = await Promise.all([
        timed("guest boot", () => bootGuests([{ name: NODE, disks: [{ serial: DISK, sizeMiB: 8192 }], memoryMiB: 1536 }])),
        timed("control plane start", () => run$("bash", [path.join(repo, "test/engine/controlplane.sh"), "start", controlPlane], { env })),
    ]);
    vms = set;
    guest = set.get(NODE);
    env.KUBECONFIG = path.join(controlPlane, "kubeconfig");
    const view = JSON.parse(kubectl(["config", "view", "--raw", "-o", "json"]));
    caData = view.clusters[0].cluster["certificate-authority-data"];
    apiPort = Number(new URL(view.clusters[0].cluster.server).port);
    execFileSync("bash", [path.join(repo, "test/engine/controlplane.sh"), "add-node", controlPlane, NODE], { env, stdio: ["ignore", "ignore", "inherit"] });

    const stack = stackYaml(guest);
    const stackFile = path.join(dir, "Pulumi.guest.yaml");
    fs.writeFileSync(stackFile, stack);
    const out = path.join(dir, "plan");
    await timed("plan", async () => {
        run = await planYaml(stack);
        assert.equal(run.error, undefined, run.error?.message);
        await run$(process.execPath, ["--import", "tsx", path.join(repo, "tools", "plan.ts"), stackFile, "--out", out], { cwd: repo });
    });
    // Disk command first, then the objects (the node's label included), as the graph orders them.
    await timed("disk command", () => guest.check("sh -s", { stdin: fs.readFileSync(path.join(out, "node-commands", `${STORAGE}-${NODE}-disks.create.sh`)) }));
    applyManifests(path.join(out, "manifests"), kubectl);
    await timed("copy programs", async () => {
        await copyIntoGuest(guest, path.dirname(topolvmBuildDir()), [path.basename(topolvmBuildDir())], guestBin);
        await guest.check(`mv ${guestBin}/${path.basename(topolvmBuildDir())} ${guestBin}/topolvm`);
        await copyIntoGuest(guest, path.join(driverCacheRoot, `csi-sanity-v${csiSanityVersion}`), ["csi-sanity"], guestBin);
        await copyIntoGuest(guest, path.dirname(csiCallProgram()), ["csi-call"], guestBin);
    });
});

after(async () => {
    process.stderr.write(`[drivers] guest.test.ts timings: ${timings.join(", ")}\n`);
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
    let nodeSocket: string;
    let nodeLog: string;

    test("lvmd and topolvm-node run from the rendered containers on the guest; topolvm-node publishes the VG's free space on the guest's Node", async () => {
        const lvmd = prepare(`lvmd-${STORAGE}`, DAEMON_SET, "lvmd");
        const node = prepare("topolvm-node", DAEMON_SET, "topolvm-node");
        const lvmdSocket = lvmd.pathOf("/run/topolvm/lvmd.sock");
        nodeSocket = flagOf(node.argv, "--csi-socket");
        // Both pods' files, laid out here, at the same paths in the guest (the host directory they share included).
        fs.writeFileSync(path.join(dir, "node.kubeconfig"), kubeconfigFor("topolvm-node", `https://${HOST_FROM_GUEST}:${apiPort}`), { mode: 0o600 });
        const podFiles = [lvmd, node].map((p) => p.root);
        await copyIntoGuest(guest, dir, [...podFiles, hostRoot, path.join(dir, "node.kubeconfig")].map((f) => path.relative(dir, f)), dir);
        const lvmdLog = await startInGuest(guest, lvmd, "none");
        await guestUntil(guest, `test -S ${lvmdSocket}`, 60_000, `cat ${lvmdLog}`);
        nodeLog = await startInGuest(guest, node, "node", { KUBECONFIG: path.join(dir, "node.kubeconfig") });
        await guestUntil(guest, `test -S ${nodeSocket}`, 120_000, `cat ${nodeLog}`);
        const vgFree = (await guest.check(`vgs --noheadings --units b --nosuffix -o vg_free zcloud-${STORAGE}`)).trim();
        const deadline = Date.now() + 60_000;
        let capacity = "";
        while (Date.now() < deadline && capacity !== vgFree) {
            capacity = kubectl(["get", "node", NODE, "-o", `jsonpath={.metadata.annotations.capacity\\.topolvm\\.io/${STORAGE}}`]);
            await new Promise((r) => setTimeout(r, 1000));
        }
        assert.equal(capacity, vgFree, `capacity.topolvm.io/${STORAGE} on ${NODE}\n${(await guest.run(`cat ${nodeLog}`)).stdout}`);
    });

    test("topolvm-controller runs with its ServiceAccount's token and serves CSI; its socket reaches the guest", async () => {
        const p = prepare("topolvm-controller", DEPLOYMENT, "topolvm-controller");
        apiBridge = await bridgeToApi(path.join(dir, "api.sock"), apiPort);
        const network = await podNetwork({ port: podApiPort, socket: path.join(dir, "api.sock") });
        networks.push(network);
        const kc = path.join(dir, "controller.kubeconfig");
        fs.writeFileSync(kc, kubeconfigFor("topolvm-controller", `https://127.0.0.1:${podApiPort}`), { mode: 0o600 });
        const s = startContainer(p, { network, hostEnv: { KUBECONFIG: kc } });
        started.push(s);
        const socket = flagOf(p.argv, "--csi-socket");
        assert.equal(await waitFor(s, () => fs.existsSync(socket), 60_000), "ready", `topolvm-controller did not serve on ${socket}:\n${s.output()}`);
        const c = guest.connection;
        const forward = spawn(
            "ssh",
            ["-F", "/dev/null", "-N", "-i", c.privateKeyPath, "-p", String(c.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${c.knownHostsPath}`, "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes", "-R", `${controllerInGuest}:${socket}`, `${c.user}@${c.host}`],
            { stdio: ["ignore", "ignore", "pipe"] },
        );
        hostProcesses.push(forward);
        await guestUntil(guest, `test -S ${controllerInGuest}`, 30_000, "true");
        const caps = await csiCall(controllerInGuest, "controller-caps", []);
        const claimed = caps.capabilities.map((c: any) => c.rpc.type).sort();
        // The capabilities the skips above are about.
        assert.deepEqual(claimed, ["CLONE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CREATE_DELETE_VOLUME", "EXPAND_VOLUME", "GET_CAPACITY"]);
    });

    test("csi-sanity: the full suite passes against the node and controller sockets (skips: thin-only snapshots and clones)", async () => {
        const params = path.join(dir, "sanity-params.yaml");
        await guest.check(`cat >${params}`, { stdin: yaml.dump({ "csi.storage.k8s.io/fstype": "xfs", "topolvm.io/device-class": STORAGE }) });
        const sanity = (extra: string[]) =>
            [
                guestSanity,
                `--csi.endpoint=unix://${nodeSocket}`,
                `--csi.controllerendpoint=unix://${controllerInGuest}`,
                `--csi.mountdir=${path.join(dir, "sanity", "mount")}`,
                `--csi.stagingdir=${path.join(dir, "sanity", "staging")}`,
                `--csi.testvolumesize=${GiB}`,
                `--csi.testvolumeexpandsize=${2 * GiB}`,
                `--csi.testvolumeparameters=${params}`,
                "--ginkgo.no-color",
                ...extra,
            ].join(" ");
        // Each skip names specs that exist (a renamed spec must not turn a skip into nothing).
        for (const { spec } of sanitySkips) {
            const dry = await guest.run(sanity(["--ginkgo.dry-run", `--ginkgo.focus='${spec}'`]));
            assert.match(dry.stdout, /Ran [1-9]\d* of \d+ Specs/, `skip ${spec} matches no spec:\n${dry.stdout}${dry.stderr}`);
        }
        const skip = sanitySkips.map((x) => x.spec).join("|");
        const r = await timed("csi-sanity", () => guest.run(sanity([`--ginkgo.skip='${skip}'`]), { timeoutMs: 1_800_000 }));
        const out = `${r.stdout}${r.stderr}`;
        const summary = out.match(/Ran (\d+) of (\d+) Specs.*\n.*?(\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/);
        process.stderr.write(`[drivers] csi-sanity: ${summary ? summary[0].replace(/\n/g, " ") : "no summary"}\n`);
        assert.equal(r.code, 0, `csi-sanity failed:\n${out.slice(-20000)}\n--- topolvm-node:\n${(await guest.run(`tail -n 60 ${nodeLog}`)).stdout}`);
        assert.ok(summary, out.slice(-3000));
        assert.equal(summary[4], "0");
        assert.ok(Number(summary[3]) > 0);
    });

    test("a volume as the kubelet drives it: created, published with XFS, written, expanded online, read back, removed", async () => {
        const nodeCaps = await csiCall(nodeSocket, "node-caps", []);
        const staged = nodeCaps.capabilities.some((c: any) => c.rpc.type === "STAGE_UNSTAGE_VOLUME");
        assert.equal(staged, false, "TopoLVM's node claims no STAGE_UNSTAGE_VOLUME: the kubelet publishes directly");
        const created = await csiCall(controllerInGuest, "create", ["-name=pvc-io", `-size=${GiB}`, `-param=topolvm.io/device-class=${STORAGE}`, "-param=csi.storage.k8s.io/fstype=xfs"]);
        const volume = created.volume;
        assert.equal(volume.capacityBytes, String(GiB));
        assert.deepEqual(volume.accessibleTopology, [{ segments: { "topology.topolvm.io/node": NODE } }]);
        // The controller asked through a LogicalVolume; topolvm-node made the LV with lvmd.
        const lv = JSON.parse(kubectl(["get", "logicalvolumes.topolvm.io", "-o", "json"])).items.find((x: any) => x.status?.volumeID === volume.volumeId);
        assert.ok(lv, `a LogicalVolume with volumeID ${volume.volumeId}`);
        assert.equal(lv.spec.nodeName, NODE);
        assert.equal(lv.spec.deviceClass, STORAGE);
        const lvSize = async () => (await guest.check(`lvs --noheadings --units b --nosuffix -o lv_size zcloud-${STORAGE}/${volume.volumeId}`)).trim();
        assert.equal(await lvSize(), String(GiB));

        const target = path.join(dir, "pods", "io", "volumes", "mount");
        const context = Object.entries(volume.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
        await csiCall(nodeSocket, "publish", [`-volume=${volume.volumeId}`, `-target=${target}`, "-fs=xfs", ...context]);
        assert.equal((await guest.check(`findmnt -n -o FSTYPE ${target}`)).trim(), "xfs");
        const sum = (await guest.check(`head -c 64M /dev/urandom >${target}/data && sync && sha256sum <${target}/data`)).trim();
        const fsSize = async () => Number((await guest.check(`df -B1 --output=size ${target} | tail -n1`)).trim());
        const before = await fsSize();
        assert.ok(before > 0.9 * GiB && before <= GiB, `filesystem of ${before} bytes`);

        const expanded = await csiCall(controllerInGuest, "controller-expand", [`-volume=${volume.volumeId}`, `-size=${2 * GiB}`]);
        assert.equal(expanded.capacityBytes, String(2 * GiB));
        assert.equal(expanded.nodeExpansionRequired, true);
        assert.equal(await lvSize(), String(2 * GiB));
        await csiCall(nodeSocket, "node-expand", [`-volume=${volume.volumeId}`, `-target=${target}`, `-size=${2 * GiB}`]);
        const after = await fsSize();
        assert.ok(after > 1.9 * GiB && after <= 2 * GiB, `filesystem of ${after} bytes after expansion`);
        assert.match(await guest.check(`xfs_info ${target}`), /data\s+=\s+bsize=4096\s+blocks=524288/);
        assert.equal((await guest.check(`sha256sum <${target}/data`)).trim(), sum);

        await csiCall(nodeSocket, "unpublish", [`-volume=${volume.volumeId}`, `-target=${target}`]);
        assert.notEqual((await guest.run(`findmnt ${target}`)).code, 0);
        await csiCall(controllerInGuest, "delete", [`-volume=${volume.volumeId}`]);
        assert.notEqual((await guest.run(`lvs zcloud-${STORAGE}/${volume.volumeId}`)).code, 0);
        assert.equal(JSON.parse(kubectl(["get", "logicalvolumes.topolvm.io", "-o", "json"])).items.length, 0);
    });
});
