/**
 * Drivers tier: every rendered driver container whose program this machine can build is started
 * once as a process with its real command, args, env and config files (runner.ts). A flag the
 * pinned binary does not know, a socket path two containers do not share, or a config key the
 * program refuses fails here. Needs root (loop device, LVM, PID namespace) and the programs
 * built by test/drivers/build-drivers.sh (cached; the first build takes minutes).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { images } from "../../components/images";
import { PlanRun, PlannedResource, baseConfig, planValues, resourceNamed } from "../helpers/plan";
import { ApiStandIn, startApiStandIn } from "./apiStandIn";
import { LoopVolumeGroup, loopVolumeGroup } from "./hostLvm";
import { PodNetwork, podNetwork } from "./podNetwork";
import { csiSanityVersion, driverCacheRoot, lookupProgram, topolvmBuildDir } from "./programs";
import { PodIdentity, PreparedContainer, StartOptions, StartedContainer, prepareContainer, startContainer, waitFor } from "./runner";

/**
 * What csi-sanity can check without a cluster behind the stand-in API: creating a volume needs
 * the node to reconcile a stored LogicalVolume, which the stand-in does not keep.
 */
const sanityFocus = "Identity Service|NodeGetCapabilities|NodeGetInfo|ControllerGetCapabilities";
const DAEMON_SET = "kubernetes:apps/v1:DaemonSet";
const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const repo = path.resolve(__dirname, "../..");

// Unique names: other tests on this machine may hold VGs and temp dirs at the same time.
const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const thick = `drv${suffix}`;
const thin = `drt${suffix}`;
const config = {
    ...baseConfig,
    lvm: [
        { name: thick, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] } },
        { name: thin, hosts: { node2: ["/dev/disk/by-id/wwn-0x2"] }, thin: { overprovisionRatio: 2 } },
    ],
    nfs: [{ name: "share", server: "10.0.0.60", path: "/exports/k8s" }],
    cephfs: [{ name: "shared", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"] } }],
};

let run: PlanRun;
let dir: string;
let hostRoot: string;
let vg: LoopVolumeGroup;
let kubeconfig: string;
let api: ApiStandIn;
/** Where a pod finds the API server stand-in inside its own network namespace. */
const apiPort = 6443;
const started: StartedContainer[] = [];
const networks: PodNetwork[] = [];
let containerCount = 0;

const pod = (nodeName: string, podName: string): PodIdentity => ({ nodeName, podName, namespace: "zcloud-storage", podIP: "127.0.0.1" });

/** Each container gets its own short root (socket paths are limited to 107 bytes). */
function prepare(workload: PlannedResource, container: string, p: PodIdentity, appendArgs?: string[]): PreparedContainer {
    const root = path.join(dir, `c${containerCount++}`);
    return prepareContainer(run, workload, container, { root, hostRoot, pod: p, appendArgs });
}

function start(p: PreparedContainer, o: StartOptions = {}): StartedContainer {
    const s = startContainer(p, o);
    started.push(s);
    return s;
}

const flagOf = (argv: string[], flag: string) => {
    const found = argv.find((a) => a.startsWith(`${flag}=`));
    assert.ok(found, `no ${flag} in ${argv.join(" ")}`);
    return found.slice(flag.length + 1);
};

/** A pod network with the API server stand-in at 127.0.0.1:6443, and KUBECONFIG for it. */
async function withApi(): Promise<StartOptions> {
    const network = await podNetwork({ port: apiPort, socket: api.socket });
    networks.push(network);
    return { network, hostEnv: { KUBECONFIG: kubeconfig } };
}

/** Starts a CSI program with the API stand-in; it must serve on its rendered --csi-socket and keep running. */
async function startServingCsi(p: PreparedContainer): Promise<{ s: StartedContainer; csiSocket: string }> {
    const s = start(p, await withApi());
    const csiSocket = flagOf(p.argv, "--csi-socket");
    const state = await waitFor(s, () => fs.existsSync(csiSocket), 30_000);
    assertNoRenderingMistake(s);
    assert.equal(state, "ready", `${p.container} did not serve on ${csiSocket}:\n${s.output()}`);
    assert.equal(await waitFor(s, () => false, 3000), "timeout", `${p.container} stopped:\n${s.output()}`);
    assert.ok(await socketAccepts(csiSocket), `${csiSocket} accepts connections`);
    return { s, csiSocket };
}

/** The classes of mistake this tier exists to catch, as the programs word them. */
function assertNoRenderingMistake(s: StartedContainer) {
    const out = s.output();
    assert.doesNotMatch(out, /unknown (shorthand )?flag|flag provided but not defined/, `${s.prepared.container} refused a rendered flag:\n${out}`);
    assert.doesNotMatch(out, /error unmarshaling JSON|cannot unmarshal|unknown field/, `${s.prepared.container} refused its config:\n${out}`);
    assert.doesNotMatch(out, /node name is not given/, `${s.prepared.container} got no node name:\n${out}`);
}

const socketAccepts = (socket: string) =>
    new Promise<boolean>((resolve) => {
        const c = net.connect(socket, () => {
            c.end();
            resolve(true);
        });
        c.once("error", () => resolve(false));
    });

before(async () => {
    assert.equal(process.getuid?.(), 0, "the drivers tier needs root (loop devices, LVM, PID namespaces)");
    // Builds what is missing, or says what is cached; a failed build fails the tier.
    process.stdout.write(execFileSync("sh", [path.join(repo, "test/drivers/build-drivers.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
    run = await planValues(config);
    assert.equal(run.error, undefined, run.error?.message);
    dir = fs.mkdtempSync("/tmp/zdrv-");
    hostRoot = path.join(dir, "host");
    vg = loopVolumeGroup(dir, `zcloud-${thick}`);
    // In place of the in-cluster config (a service account token at a fixed path): the stand-in.
    // It holds what the plan puts in the cluster before the driver starts: the CSIDriver and node1
    // with the label and annotation its label command applies (the Node on the command's stdin).
    const csiDriver = resourceNamed(run, "topolvm-csidriver");
    const label = resourceNamed(run, `${thick}-node1-label`);
    api = await startApiStandIn(path.join(dir, "api.sock"), [
        { apiVersion: "storage.k8s.io/v1", kind: "CSIDriver", metadata: csiDriver.inputs.metadata as any, spec: csiDriver.inputs.spec },
        { apiVersion: "v1", kind: "Node", metadata: JSON.parse(String(label.inputs.stdin)).metadata },
    ]);
    kubeconfig = path.join(dir, "kubeconfig");
    fs.writeFileSync(
        kubeconfig,
        yaml.dump({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{ name: "none", cluster: { server: `http://127.0.0.1:${apiPort}` } }],
            users: [{ name: "none", user: { token: "not-a-token" } }],
            contexts: [{ name: "none", context: { cluster: "none", user: "none" } }],
            "current-context": "none",
        }),
    );
});

after(async () => {
    await Promise.all(started.map((s) => s.stop()));
    networks.forEach((n) => n.close());
    await api?.close();
    vg?.close();
    if (dir) {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

describe("build", () => {
    test("the build script builds TopoLVM at the version the image pins", () => {
        const script = fs.readFileSync(path.join(repo, "test/drivers/build-drivers.sh"), "utf8");
        const tag = images.topolvm.slice(images.topolvm.lastIndexOf(":") + 1);
        assert.match(script, new RegExp(`^topolvm_version=v${tag.replace(/\./g, "\\.")}$`, "m"));
        for (const program of ["lvmd", "topolvm-node", "topolvm-controller"]) {
            assert.ok(fs.existsSync(path.join(topolvmBuildDir(), program)), `${program} is built`);
        }
        assert.match(script, new RegExp(`^csi_sanity_version=v${csiSanityVersion.replace(/\./g, "\\.")}$`, "m"));
    });
});

describe("TopoLVM containers as rendered", () => {
    let lvmdSocket: string;
    let nodeCsiSocket: string;
    let controllerCsiSocket: string;

    test("lvmd: its rendered command reads the rendered lvmd.yaml, finds the VG and serves on the socket", async () => {
        const p = prepare(resourceNamed(run, `lvmd-${thick}`, DAEMON_SET), "lvmd", pod("node1", `lvmd-${thick}-x`));
        assert.deepEqual(p.argv.slice(1), [`--config=${p.pathOf("/etc/topolvm")}/lvmd.yaml`]);
        assert.equal(p.hostPID, true);
        const s = start(p, { hostEnv: { LVM_SYSTEM_DIR: vg.lvmSystemDir } });
        lvmdSocket = p.pathOf("/run/topolvm/lvmd.sock");
        const state = await waitFor(s, () => fs.existsSync(lvmdSocket), 20_000);
        assertNoRenderingMistake(s);
        assert.equal(state, "ready", `lvmd did not listen on ${lvmdSocket}:\n${s.output()}`);
        assert.ok(await socketAccepts(lvmdSocket), "lvmd accepts connections on its socket");
        assert.match(s.output(), new RegExp(`configuration file loaded.*"volume-group":"zcloud-${thick}"`));
    });

    test("lvmd refuses a flag its version does not know: the old --container is an unknown flag (the crash loop this tier catches)", async () => {
        const p = prepare(resourceNamed(run, `lvmd-${thick}`, DAEMON_SET), "lvmd", pod("node1", "control"), ["--container"]);
        const s = start(p, { hostEnv: { LVM_SYSTEM_DIR: vg.lvmSystemDir } });
        assert.notEqual(await s.exited, "0");
        assert.match(s.output(), /unknown flag: --container/);
    });

    test("lvmd of a thin storage reads its thin device class and stops only at the missing pool (no device-mapper thin target here)", async () => {
        const thinVg = loopVolumeGroup(fs.mkdtempSync(path.join(dir, "thin-")), `zcloud-${thin}`);
        try {
            const p = prepare(resourceNamed(run, `lvmd-${thin}`, DAEMON_SET), "lvmd", pod("node2", `lvmd-${thin}-x`));
            const s = start(p, { hostEnv: { LVM_SYSTEM_DIR: thinVg.lvmSystemDir } });
            assert.equal(await s.exited, "1");
            assertNoRenderingMistake(s);
            assert.match(s.output(), /"type":"thin","thin-pool":\{"name":"pool","overprovision-ratio":2\}/);
            assert.match(s.output(), /Thin pool not found.*"thinpool": ?"pool"/);
        } finally {
            thinVg.close();
        }
    });

    test("topolvm-node: its --lvmd-socket is the socket lvmd made (through the shared host directory); it serves CSI on its rendered socket", async () => {
        assert.ok(lvmdSocket, "lvmd runs (first test)");
        const p = prepare(resourceNamed(run, "topolvm-node", DAEMON_SET), "topolvm-node", pod("node1", "topolvm-node-x"));
        assert.equal(p.env.NODE_NAME, "node1");
        const seenLvmdSocket = flagOf(p.argv, "--lvmd-socket");
        assert.ok(await socketAccepts(seenLvmdSocket), `${seenLvmdSocket} reaches lvmd`);
        assert.equal(fs.realpathSync(seenLvmdSocket), fs.realpathSync(lvmdSocket));
        const { s, csiSocket } = await startServingCsi(p);
        nodeCsiSocket = csiSocket;
        // Kubelet dials the registrar's --kubelet-registration-path: the same host file.
        const registrar = prepare(resourceNamed(run, "topolvm-node", DAEMON_SET), "csi-registrar", pod("node1", "topolvm-node-x"));
        assert.equal(fs.realpathSync(flagOf(registrar.argv, "--csi-address")), fs.realpathSync(csiSocket));
        assert.ok(api.requests.includes("GET /apis/topolvm.io/v1/logicalvolumes?watch"), "it watches LogicalVolumes");
        // It asked lvmd over the rendered socket for the device class's free space and published
        // it on its node: all of the VG, since lvmd.yaml holds no spare space back.
        const vgFree = Number(execFileSync("vgs", ["--noheadings", "--units", "b", "--nosuffix", "-o", "vg_free", vg.vg], { encoding: "utf8", env: { ...process.env, LVM_SYSTEM_DIR: vg.lvmSystemDir } }).trim());
        const capacity = () =>
            api.writes
                .filter((w) => w.path === "/api/v1/nodes/node1")
                .map((w) => w.body?.metadata?.annotations?.[`capacity.topolvm.io/${thick}`])
                .filter((v) => v !== undefined);
        assert.equal(await waitFor(s, () => capacity().length > 0, 20_000), "ready", `no capacity annotation on node1:\n${s.output()}`);
        assert.ok(vgFree > 0);
        assert.deepEqual([...new Set(capacity())], [String(vgFree)]);
    });

    test("topolvm-controller: rendered flags accepted; it serves CSI on its rendered socket", async () => {
        const p = prepare(resourceNamed(run, "topolvm-controller", DEPLOYMENT), "topolvm-controller", pod("node1", "topolvm-controller-x"));
        controllerCsiSocket = (await startServingCsi(p)).csiSocket;
    });

    test("csi-sanity: the identity, node-info and capability checks pass against the node and controller sockets", () => {
        assert.ok(nodeCsiSocket && controllerCsiSocket, "topolvm-node and topolvm-controller serve (tests above)");
        for (const s of started.filter((x) => ["topolvm-node", "topolvm-controller"].includes(x.prepared.container))) {
            assert.equal(s.process.exitCode, null, `${s.prepared.container} is still running:\n${s.output()}`);
        }
        const sanity = path.join(driverCacheRoot, `csi-sanity-v${csiSanityVersion}`, "csi-sanity");
        const r = spawnSync(
            sanity,
            [
                `--csi.endpoint=unix://${nodeCsiSocket}`,
                `--csi.controllerendpoint=unix://${controllerCsiSocket}`,
                `--csi.mountdir=${path.join(dir, "sanity-mount")}`,
                `--csi.stagingdir=${path.join(dir, "sanity-staging")}`,
                `--ginkgo.focus=${sanityFocus}`,
                "--ginkgo.no-color",
            ],
            { encoding: "utf8", timeout: 30_000 },
        );
        const out = `${r.stdout}${r.stderr}`;
        assert.equal(r.status, 0, `csi-sanity failed:\n${out}`);
        assert.match(out, /Ran [1-9]\d* of \d+ Specs/);
    });
});

describe("containers this machine cannot run", () => {
    test("every other rendered driver container is named with the reason its program is not built", () => {
        // The drivers' workloads; the CephFS daemons (mon, mgr, mds, osd) run in the ceph tier.
        const workloads = run.resources.filter((r) => (r.type === DAEMON_SET || r.type === DEPLOYMENT) && /^(topolvm|lvmd|csi-driver-nfs|ceph-csi)-/.test(r.name));
        const cannot: string[] = [];
        for (const w of workloads) {
            for (const c of (w.inputs.spec as any).template.spec.containers as Array<{ name: string; image: string; command?: string[] }>) {
                const found = lookupProgram(c.image, c.command?.[0]);
                if ("unavailable" in found) {
                    assert.match(found.unavailable, /^not built here: the Go module proxy answers "not available" for /);
                    cannot.push(`${w.name}/${c.name}`);
                }
            }
        }
        assert.deepEqual(cannot.sort(), [
            "ceph-csi-cephfs-nodeplugin/csi-cephfsplugin",
            "ceph-csi-cephfs-nodeplugin/driver-registrar",
            "ceph-csi-cephfs-provisioner/csi-cephfsplugin",
            "ceph-csi-cephfs-provisioner/csi-provisioner",
            "ceph-csi-cephfs-provisioner/csi-resizer",
            "csi-driver-nfs-controller/csi-provisioner",
            "csi-driver-nfs-controller/csi-resizer",
            "csi-driver-nfs-controller/liveness-probe",
            "csi-driver-nfs-controller/nfs",
            "csi-driver-nfs-node/liveness-probe",
            "csi-driver-nfs-node/nfs",
            "csi-driver-nfs-node/node-driver-registrar",
            "topolvm-controller/csi-provisioner",
            "topolvm-controller/csi-resizer",
            "topolvm-controller/liveness-probe",
            "topolvm-node/csi-registrar",
            "topolvm-node/liveness-probe",
        ]);
    });
});
