/**
 * Nodes tier, LVM on real nodes: TopoLVM as the program renders it, run by real kubelets and
 * containerd in two QEMU guests (TCG) of the VM tier, which have the device-mapper this machine's
 * kernel lacks. The control plane and the registry run here (cluster.sh, no namespace node); each
 * guest joins the cluster as a node (cluster.sh guests: a tap on the bridge, a pod /24, containerd,
 * kubelet and kube-proxy as enabled systemd units, their programs over a read-only 9p share).
 * A stack with a thick storage on one guest and a thin one on the other, monitoring on (without the
 * Prometheus Operator), is planned with `imageRegistry` at the local registry, where images.sh
 * pushed the TopoLVM image built here, and applied as `pulumi up` applies it (apply.ts): the disk
 * commands over SSH, the objects to the API server. The kubelets pull the image and run lvmd,
 * topolvm-node and topolvm-controller as pods. The CSI sidecars cannot be built here (the module
 * proxy does not serve them): the containers that run them cannot start, and exactly those are
 * asserted. In their place our CSI client (test/drivers/csi-call) and csi-sanity call the pods'
 * sockets in the guests, as the sidecars and the kubelet would. Each storage's tests run on its own
 * guest, the two guests' at once: on the thick one csi-sanity's suite, a volume created, published
 * with XFS and expanded online, the node's kubelet and containerd restarted, the node rebooted; on
 * the thin one csi-sanity's snapshot, clone and thin-pool specs, a volume snapshotted and restored, and a real Prometheus
 * scraping the pods through the rendered metrics Services while the thin pool fills.
 * Run: node --import tsx --test test/nodes/lvm.test.ts (root; builds or reuses the tools, images
 * and the VM image).
 */
import { after, before, describe, test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { planYaml, PlanRun } from "../helpers/plan";
import { bootGuests, Guest, GuestSet } from "../vm/harness";
import { copyIntoGuest, csiSanityCommand, csiSanitySummary, GuestLvmStorage, guestLvmStackYaml, sanityPathPrograms, topolvmCapacity } from "../drivers/guestFiles";
import { csiCallProgram, csiSanityProgram } from "../drivers/programs";
import { decidedSpec, failedSpec, focusOn, sanityCounts, sanitySpecs, skippedAsItRan, transientCause, withRerun } from "../drivers/csiSanityReport";
import { shellQuote } from "../../components/node/script";
import { PrometheusServer, metricNames, startPrometheus, withFor } from "../monitoring/prometheusServer";
import { thinPoolPercent, topolvmControllerMetricsTarget, topolvmMetricsTarget } from "../../components/lvm/monitoring";
import { NodesCluster, startCluster, waitFor } from "./cluster";
import { GuestShell, PlanApplier } from "./apply";
import { describeGuestLoad, guestLoadCommand, parseGuestLoad } from "./guestLoad";

const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";

/** A csi-sanity spec pattern (Go's RE2, as ginkgo reads it), with the reason it is skipped or run. */
interface SanityPattern {
    spec: string;
    reason: string;
}

/**
 * csi-sanity's specs of snapshots and clones. TopoLVM's controller claims CREATE_DELETE_SNAPSHOT
 * and CLONE_VOLUME for every device class but implements both only for thin ones (a thick LV has
 * no thin snapshot to take); its own e2e suite skips the same specs for its thick device class.
 */
const snapshotAndCloneSpecs: SanityPattern[] = [
    { spec: "CreateVolume.*source snapshot", reason: "a volume from a snapshot: TopoLVM makes snapshots of thin volumes only" },
    { spec: "CreateVolume.*source volume", reason: "a clone of a volume: TopoLVM clones thin volumes only (as a thin snapshot)" },
    { spec: "CreateSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
    { spec: "DeleteSnapshot", reason: "TopoLVM makes snapshots of thin volumes only" },
];

/**
 * What the thin storage's suite runs: its snapshots and clones, and the specs whose calls reach a
 * thin pool (capacity, a volume's life, expansion). The rest of the suite (arguments refused,
 * idempotence, the node's answers) calls the same topolvm-node and controller program whatever the
 * device class: it runs once, in the thick storage's suite. The whole suite on the thin storage
 * was the guests' critical path (test/nodes/README.md, "twelfth").
 */
const thinSpecs: SanityPattern[] = [
    ...snapshotAndCloneSpecs,
    { spec: "GetCapacity", reason: "the thin pool's capacity, overprovisioned" },
    { spec: "CreateVolume should return appropriate values SingleNodeWriter WithCapacity 1Gi", reason: "a thin volume of a size" },
    { spec: "Node Service should work$", reason: "a thin volume published, unpublished and deleted" },
    { spec: "NodeExpandVolume should work if node-expand is called after node-publish", reason: "a thin volume expanded by the controller, then its file system by the node" },
];

interface StorageUnderTest extends GuestLvmStorage {
    /** csi-sanity specs skipped for this storage; everything else must pass. */
    skips: SanityPattern[];
    /** The only specs run for this storage (its suite is these less its skips); all when absent. */
    focus?: SanityPattern[];
    /** Its guest reboots in the last test (booted rebootable). */
    reboots?: boolean;
    /** csi-sanity v5.6.0's specs that pass here (test/nodes/README.md): a spec the suite stops running fails this. */
    sanityPassesAtLeast: number;
}

/**
 * The thin storage's thresholds, set through its `alerts` as a stack would: low enough to reach
 * with a few hundred MiB written in an emulated guest; the metadata warning just above what
 * writing the data alone reaches.
 */
const metricsThresholds = { thinPoolDataUsed: { warning: 10, critical: 20 }, thinPoolMetadataUsed: { warning: 16, critical: 40 } };
/** What the metrics test writes into a thin volume of 1 GiB (the pool is about 7.2 GiB: about 12 % of it). */
const metricsDataMiB = 896;
/**
 * Each guest's virtual CPUs: with two the image pulls in about a third of the time (59-75 s, not
 * 206 s). The controller replicas still lose their leader lease under TCG (test/nodes/README.md).
 * Both on one host thread ("single"): the two guests are busy at once on this machine's two cores.
 */
const guestCpus = 2;
/** Each guest's disk (a sparse file): room for a 2 GiB volume on the thick VG and a 7 GiB thin pool. */
const diskMiB = 8192;

const storages: StorageUnderTest[] = [
    { name: "lthick", node: "topolvm-a", disk: "nl-thick", skips: snapshotAndCloneSpecs, reboots: true, sanityPassesAtLeast: 38 },
    { name: "lthin", node: "topolvm-b", disk: "nl-thin", thin: { overprovisionRatio: 4, snapshots: true }, skips: [], focus: thinSpecs, alerts: metricsThresholds, sanityPassesAtLeast: 16 },
];

let cluster: NodesCluster;
let vms: GuestSet | undefined;
let plan: PlanRun;
const figures: string[] = [];
const began = Date.now();
const since = () => `${((Date.now() - began) / 1000).toFixed(0)} s`;

const guestOf = (s: StorageUnderTest): Guest => vms!.get(s.node);
const [thick, thin] = storages;
/** Where csi-call (our CSI client, test/drivers/csi-call) and csi-sanity are copied in each guest. */
const guestBin = "/opt/zcloud-test";
/** The real Prometheus of the metrics test (stopped in after). */
let prom: PrometheusServer | undefined;

/** topolvm-controller's leader-election Lease (its spec), or undefined while there is none. */
function controllerLease(): { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string } | undefined {
    return cluster.json(`get leases -n ${NS}`).items.find((l: { metadata: { name: string } }) => l.metadata.name === "topolvm")?.spec;
}

/**
 * Longer leases than upstream's 15/10/2 s, as a stack on a slow control plane would set them
 * (docs/drivers.md): at those defaults both controller replicas lost their lease every few
 * minutes on these emulated guests, whose answers to the API server lag by seconds.
 */
const leaderElection = { leaseDuration: "137s", renewDeadline: "107s", retryPeriod: "26s" };

const stackYaml = (): string =>
    guestLvmStackYaml(storages, guestOf, "v1:nodes-tier", {
        "kubernetes:context": CONTEXT,
        "zcloud-storage:imageRegistry": "10.250.0.1:5000",
        "zcloud-storage:monitoring": { prometheusOperator: false },
        "zcloud-storage:leaderElection": leaderElection,
    });

before(async () => {
    cluster = startCluster([], "zcloud-nodes-lvm-");
    figures.push(`cluster (control plane, registry, pushes) up at ${since()}`);
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" guests "${cluster.dir}" ${storages.map((s) => s.node).join(" ")}`);
    const tapOf = (node: string) => `zcn0-t${fs.readFileSync(path.join(cluster.dir, "nodes", node, "index"), "utf8").trim()}`;
    vms = await bootGuests(
        storages.map((s) => ({
            name: s.node,
            disks: [{ serial: s.disk, sizeMiB: diskMiB }],
            memoryMiB: 2048,
            cpus: guestCpus,
            tcgThreads: "single",
            rebootable: s.reboots === true,
            taps: [tapOf(s.node)],
            shares: [
                { tag: "zcnbin", path: path.join(cluster.dir, "guest-bin") },
                { tag: "zcnconf", path: path.join(cluster.dir, "nodes", s.node, "guest") },
            ],
        })),
    );
    figures.push(`guests booted at ${since()} (${vms.guests.map((g) => `${g.name} ${(g.bootMs / 1000).toFixed(0)} s`).join(", ")})`);
    // Planned, and our programs copied in, while the guests join (they need only SSH).
    const planned = planYaml(stackYaml());
    planned.catch(() => undefined); // awaited below
    const install = fs.readFileSync(path.join(__dirname, "guest-node.sh"), "utf8");
    await Promise.all(storages.map((s) => guestOf(s).check("sh -s", { stdin: install })));
    // our CSI client and csi-sanity, which call the pods' sockets in the guests
    const copied = Promise.all(storages.map(async (s) => {
        await copyIntoGuest(guestOf(s), path.dirname(csiCallProgram()), ["csi-call"], guestBin);
        await copyIntoGuest(guestOf(s), path.dirname(csiSanityProgram()), ["csi-sanity"], guestBin);
        await copyIntoGuest(guestOf(s), path.dirname(sanityPathPrograms), [path.basename(sanityPathPrograms)], guestBin);
    }));
    copied.catch(() => undefined); // awaited below
    for (const s of storages) {
        await waitFor(`node ${s.node} Ready`, 300_000, () => {
            const node = cluster.json(`get node ${s.node}`);
            return node.status.conditions.find((c: any) => c.type === "Ready")?.status === "True" ? true : undefined;
        }, 2000);
    }
    figures.push(`both guest nodes Ready at ${since()}`);
    await copied;
    plan = await planned;
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
});

after(async () => {
    await prom?.stop();
    await vms?.close();
    if (cluster) cluster.stop();
    console.log(figures.map((f) => `# ${f}`).join("\n"));
});

/** A container of a pod of the storage namespace, as the kubelet reports it. */
interface ContainerSeen {
    /** The pod's workload (its DaemonSet, or its ReplicaSet's Deployment). */
    workload: string;
    node: string;
    container: string;
    running: boolean;
    ready: boolean;
    /** Why it is not running: the last termination's message, else the waiting one's. */
    why: string;
}

function containersSeen(): ContainerSeen[] {
    const pods = cluster.json(`get pods -n ${NS}`).items as any[];
    return pods.flatMap((p) => {
        const owner = p.metadata.ownerReferences?.[0] ?? { kind: "", name: p.metadata.name };
        const workload = owner.kind === "ReplicaSet" ? owner.name.replace(/-[a-z0-9]+$/, "") : owner.name;
        return (p.status.containerStatuses ?? []).map((c: any) => ({
            workload,
            node: p.spec.nodeName,
            container: c.name,
            running: c.state.running !== undefined,
            ready: c.ready === true,
            // a crash loop's waiting message is the back-off; the start's error is the last termination's
            why: c.lastState?.terminated?.message ?? c.state.waiting?.message ?? c.state.waiting?.reason ?? "",
        }));
    });
}

/**
 * The CSI sidecars not in the TopoLVM image built here, by container, and the program each runs.
 * (The image has a stand-in of ours for the fifth, livenessprobe: test/drivers/csi-call/livenessprobe.)
 */
const sidecarPrograms: Record<string, string> = {
    "csi-provisioner": "/csi-provisioner",
    "csi-resizer": "/csi-resizer",
    "csi-snapshotter": "/csi-snapshotter",
    "csi-registrar": "/csi-node-driver-registrar",
};

test("applied as pulumi up applies it: the kubelets pull the TopoLVM image and run lvmd, topolvm-node and topolvm-controller, their liveness probes answered; exactly the CSI sidecars not built here cannot start, their programs missing from the image", async () => {
    const guests: Record<string, GuestShell> = {};
    for (const s of storages) guests[`${guestOf(s).connection.host}:${guestOf(s).connection.port}`] = guestOf(s);
    const applier = new PlanApplier(cluster, {
        context: CONTEXT,
        nodeByAddress: {},
        guests,
        // their sidecars cannot start here (below)
        notAwaited: new Set(["topolvm-controller", "topolvm-node"]),
        log: (l) => console.log(`# ${l.slice(0, 200)}`),
    });
    let t = Date.now();
    await applier.apply(plan);
    figures.push(`plan applied in ${((Date.now() - t) / 1000).toFixed(0)} s (disk commands over SSH, objects server-side applied)`);

    t = Date.now();
    const nodes = storages.map((s) => s.node).sort();
    let last: ContainerSeen[] = [];
    const settled = await waitFor("every TopoLVM container Running, or tried and failed", 480_000, () => {
        const seen = (last = containersSeen());
        const ours = seen.filter((c) => !(c.container in sidecarPrograms));
        const sidecars = seen.filter((c) => c.container in sidecarPrograms);
        const workloads = new Set(seen.map((c) => `${c.workload} ${c.node}`));
        const expected = [...storages.map((s) => `lvmd-${s.name} ${s.node}`), ...nodes.map((n) => `topolvm-node ${n}`)];
        const all = expected.every((w) => workloads.has(w)) && seen.some((c) => c.workload === "topolvm-controller");
        return all && ours.every((c) => c.running && (c.container !== "lvmd" || c.ready)) && sidecars.every((c) => c.why !== "" && c.why !== "ContainerCreating") ? seen : undefined;
    }, 5000).catch((e) => {
        console.log(last.map((c) => `# ${c.workload} ${c.node} ${c.container} running=${c.running} ready=${c.ready} ${c.why.slice(0, 300)}`).join("\n"));
        throw e;
    });
    figures.push(`pods settled ${((Date.now() - t) / 1000).toFixed(0)} s after the apply (image pulled and unpacked in each guest, under TCG)`);
    console.log(settled.map((c) => `# ${c.workload} ${c.node} ${c.container} running=${c.running} ready=${c.ready} ${c.why.slice(0, 160)}`).join("\n"));

    // every container that runs a program of the image is Running (lvmd Ready)
    const running = settled.filter((c) => c.running).map((c) => `${c.workload} ${c.node} ${c.container}`).sort();
    const controllers = settled.filter((c) => c.workload === "topolvm-controller" && c.container === "topolvm-controller").map((c) => c.node).sort();
    assert.deepEqual(running, [
        ...storages.map((s) => `lvmd-${s.name} ${s.node} lvmd`),
        ...controllers.flatMap((n) => ["topolvm-controller", "liveness-probe"].map((c) => `topolvm-controller ${n} ${c}`)),
        ...nodes.flatMap((n) => ["topolvm-node", "liveness-probe"].map((c) => `topolvm-node ${n} ${c}`)),
    ].sort());
    // and exactly the sidecars not built here are not: each failed to start on its missing program
    const notRunning = settled.filter((c) => !c.running);
    assert.deepEqual(notRunning.map((c) => `${c.workload} ${c.node} ${c.container}`).sort(), [
        ...controllers.flatMap((n) => ["csi-provisioner", "csi-resizer", "csi-snapshotter"].map((c) => `topolvm-controller ${n} ${c}`)),
        ...nodes.map((n) => `topolvm-node ${n} csi-registrar`),
    ].sort());
    for (const c of notRunning) {
        const program = sidecarPrograms[c.container];
        assert.ok(c.why.includes(`exec: "${program}": stat ${program}: no such file or directory`), `${c.workload} ${c.node} ${c.container}: ${c.why}`);
    }
    // the stack's lease timings reached the running controller: its Lease holds its duration
    const lease = await waitFor("topolvm-controller's Lease held", 120_000, () => {
        const spec = controllerLease();
        return spec?.holderIdentity ? spec : undefined;
    }, 3000);
    assert.equal(lease.leaseDurationSeconds, 137, JSON.stringify(lease));
});

test("topolvm-node, as a pod, publishes each node's free capacity on its Node, as lvmd reads it from the guest's LVM", async () => {
    for (const s of storages) {
        const expected = await topolvmCapacity(guestOf(s), `zcloud-${s.name}`, s.thin);
        const annotation = await waitFor(`capacity.topolvm.io/${s.name} on ${s.node}`, 120_000, () => {
            const a = cluster.json(`get node ${s.node}`).metadata.annotations?.[`capacity.topolvm.io/${s.name}`];
            return a === undefined ? undefined : String(a);
        });
        assert.equal(annotation, expected, `capacity.topolvm.io/${s.name} on ${s.node}`);
        assert.ok(Number(expected) > 1024 ** 3, `${s.name}: ${expected} bytes`);
    }
});

const GiB = 1024 ** 3;
/** The node plugin's socket, as the rendered DaemonSet puts it on the node. */
const nodeSocket = "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock";
/**
 * Where the tests publish volumes: the kubelet would publish in a pod's volume directory, but
 * without the registrar no pod gets a TopoLVM volume, and the kubelet removes a pod directory it
 * does not know. The node plugin sees the kubelet's CSI plugin directory too (mounted as rendered,
 * Bidirectional).
 */
const pluginDir = "/var/lib/kubelet/plugins/kubernetes.io/csi/topolvm.io";
/** The volume of the restart and reboot tests, once created and published. */
let volume: { volumeId: string; volumeContext?: Record<string, string> } | undefined;
let target = "";
let checksum = "";

/**
 * The controller pod's CSI socket on `g`: in that pod's emptyDir under the kubelet's pods
 * directory, reached through a short link (its own path is longer than a socket address may be).
 */
async function controllerSocket(g: Guest): Promise<string> {
    return waitFor(`the controller pod's socket on ${g.name}`, 120_000, async () => {
        const found = (await g.check("find /var/lib/kubelet/pods -path '*kubernetes.io~empty-dir/socket-dir/csi-topolvm.sock'")).trim().split("\n").filter(Boolean);
        assert.ok(found.length <= 1, `one controller pod on ${g.name}: ${found.join(", ")}`);
        if (found.length === 0) return undefined;
        await g.check(`ln -sfn ${path.dirname(found[0])} /run/zcloud-test-controller`);
        return "/run/zcloud-test-controller/csi-topolvm.sock";
    });
}

/**
 * One CSI call through csi-call in the guest, as a sidecar or the kubelet would make it; the
 * response as JSON. Asked again, bounded, while the socket is not served (a plugin starting again
 * after its node's reboot), as a sidecar or the kubelet would.
 */
async function csiCall(g: Guest, endpoint: () => Promise<string>, call: string, flags: string[]): Promise<any> {
    const deadline = Date.now() + 120_000;
    for (let tries = 1; ; tries++) {
        const socket = await endpoint();
        const r = await g.run([`${guestBin}/csi-call`, `-endpoint=unix://${socket}`, ...flags, call].join(" "), { timeoutMs: 360_000 });
        if (r.code === 0) {
            if (tries > 1) console.log(`# csi-call ${call} on ${g.name}: answered at try ${tries}`);
            return JSON.parse(r.stdout || "{}");
        }
        const said = `csi-call ${call} at ${socket} on ${g.name} failed (${r.code}, try ${tries}): ${r.stderr.trim()}`;
        if (!/connection refused|no such file|Unavailable/.test(r.stderr) || Date.now() > deadline) throw new Error(said);
        await new Promise((resolve) => setTimeout(resolve, 2000));
    }
}

const onNode = async () => nodeSocket;
/** The controller pod on the storage's own node (each guest runs one: a sidecar would call its own pod's socket). */
const controllerOf = (s: StorageUnderTest) => () => controllerSocket(guestOf(s));
const logicalVolumes = () => cluster.json("get logicalvolumes.topolvm.io").items as any[];
/** The storage's LogicalVolumes (its device class): the other guest's tests make and remove their own meanwhile. */
const logicalVolumesOf = (s: StorageUnderTest) => logicalVolumes().filter((x) => x.spec.deviceClass === s.name);
/** The storage's LogicalVolumes' names now, so a test checks only what it made (not what a failed test before it left). */
const logicalVolumeNames = (s: StorageUnderTest) => new Set(logicalVolumesOf(s).map((x) => x.metadata.name as string));
const madeSince = (s: StorageUnderTest, before: Set<string>) => logicalVolumesOf(s).filter((x) => !before.has(x.metadata.name));
const lvSize = async (s: StorageUnderTest, volumeId: string) => (await guestOf(s).check(`lvs --noheadings --units b --nosuffix -o lv_size zcloud-${s.name}/${volumeId}`)).trim();

/** Creates a 1 GiB volume of the storage through its node's controller pod; asserts its LogicalVolume and LV. */
async function createVolume(s: StorageUnderTest, name: string, extra: string[] = []): Promise<any> {
    const created = (await csiCall(guestOf(s), controllerOf(s), "create", [`-name=${name}`, `-size=${GiB}`, `-param=topolvm.io/device-class=${s.name}`, "-param=csi.storage.k8s.io/fstype=xfs", ...extra])).volume;
    assert.equal(created.capacityBytes, String(GiB));
    assert.deepEqual(created.accessibleTopology, [{ segments: { "topology.topolvm.io/node": s.node } }]);
    // The controller asked through a LogicalVolume; topolvm-node made the LV with lvmd.
    const lv = logicalVolumes().find((x) => x.status?.volumeID === created.volumeId);
    assert.ok(lv, `a LogicalVolume with volumeID ${created.volumeId}`);
    assert.equal(lv.spec.nodeName, s.node);
    assert.equal(lv.spec.deviceClass, s.name);
    assert.equal(await lvSize(s, created.volumeId), String(GiB));
    return created;
}

/** NodePublishVolume as the kubelet calls it (TopoLVM claims no staging), at `<pluginDir>/<name>/mount`; returns the target. */
async function publish(s: StorageUnderTest, v: { volumeId: string; volumeContext?: Record<string, string> }, name: string): Promise<string> {
    const g = guestOf(s);
    const at = `${pluginDir}/${name}/mount`;
    const context = Object.entries(v.volumeContext ?? {}).map(([k, val]) => `-context=${k}=${val}`);
    // the kubelet makes the target's parent, the plugin the target
    await g.check(`mkdir -p ${path.dirname(at)}`);
    await csiCall(g, onNode, "publish", [`-volume=${v.volumeId}`, `-target=${at}`, "-fs=xfs", ...context]);
    assert.equal((await g.check(`findmnt -n -o FSTYPE ${at}`)).trim(), "xfs");
    return at;
}

/** Unpublishes and deletes a volume; its LV and LogicalVolume are gone. */
async function removeVolume(s: StorageUnderTest, volumeId: string, at: string): Promise<void> {
    const g = guestOf(s);
    await csiCall(g, onNode, "unpublish", [`-volume=${volumeId}`, `-target=${at}`]);
    assert.notEqual((await g.run(`findmnt ${at}`)).code, 0);
    await csiCall(g, controllerOf(s), "delete", [`-volume=${volumeId}`]);
    assert.notEqual((await g.run(`lvs zcloud-${s.name}/${volumeId}`)).code, 0);
    assert.equal(logicalVolumes().filter((x) => x.status?.volumeID === volumeId).length, 0);
}

/** The container statuses of the storage namespace's pods on `node`, each named `<pod>/<container>`. */
function containerStatusesOn(node: string): { name: string; status: any }[] {
    return (cluster.json(`get pods -n ${NS} --field-selector spec.nodeName=${node}`).items as any[]).flatMap((p) =>
        ((p.status.containerStatuses ?? []) as any[]).map((c) => ({ name: `${p.metadata.name}/${c.name}`, status: c })),
    );
}

/** The plugins' own containers (not the sidecars that cannot start) on the storages' nodes, as the kubelet reports them. */
function pluginStatuses(on: StorageUnderTest[]): { name: string; status: any }[] {
    return on.flatMap((s) => containerStatusesOn(s.node).filter((c) => !(c.status.name in sidecarPrograms)));
}

/** Each container's restart count, by `pod/container`. */
function restartCounts(statuses: { name: string; status: any }[]): Record<string, number> {
    return Object.fromEntries(statuses.map((c) => [c.name, c.status.restartCount]));
}

/** The restart counts of the plugins' own containers on the storages' nodes. */
function pluginRestarts(on: StorageUnderTest[] = storages): Record<string, number> {
    return restartCounts(pluginStatuses(on));
}

/**
 * Until the storage's plugins serve again after a failed run: every plugin container Running, and
 * its node pod and controller pod answer CSI's Probe ready (topolvm-node's readiness, which also
 * reads the API server, is checked once a minute).
 */
async function pluginsServing(s: StorageUnderTest): Promise<void> {
    await waitFor(`the plugin containers on ${s.node} Running`, 300_000, async () => {
        const seen = containersSeen().filter((c) => c.node === s.node && !(c.container in sidecarPrograms));
        return seen.every((c) => c.running) ? true : undefined;
    }, 3000);
    for (const [plugin, endpoint] of [["node", onNode], ["controller", controllerOf(s)]] as const) {
        await waitFor(`${s.name}'s ${plugin} plugin ready (CSI Probe)`, 180_000, async () => {
            const r = await csiCall(guestOf(s), endpoint, "probe", []).catch(() => undefined);
            // an absent `ready` means ready (CSI spec)
            return r !== undefined && r.ready !== false ? true : undefined;
        }, 5000);
    }
}

/**
 * The mounts a failed spec left below csi-sanity's work directory (its NodeUnpublishVolume failed
 * with the plugin down), unmounted deepest first and their directories removed, as the kubelet
 * cleans up a pod's volume; returns them. Before removeLeftoverVolumes: a mounted LV is in use.
 */
async function leftoverMountsRemoved(g: Guest, work: string): Promise<string[]> {
    const mounts = (await g.check("findmnt -rn -o TARGET")).split("\n").filter((m) => m.startsWith(`${work}/`)).sort((a, b) => b.length - a.length);
    for (const m of mounts) await g.check(`umount ${shellQuote(m)} && rmdir ${shellQuote(m)}`);
    return mounts;
}

/** What a failed spec left (its cleanup failed with the plugin's call) in these storages, removed through their controllers. */
async function removeLeftoverVolumes(on: StorageUnderTest[]): Promise<void> {
    for (const s of on) {
        for (const lv of logicalVolumesOf(s)) {
            if (lv.status?.volumeID) await csiCall(guestOf(s), controllerOf(s), "delete", [`-volume=${lv.status.volumeID}`]);
        }
    }
}

/** How many times a failed spec runs again (each time only the specs that failed). */
const sanityRerunsAtMost = 3;

/**
 * csi-sanity's suite against the storage's node pod and its node's controller pod, less the
 * storage's skips. A spec that failed on a plugin's timeout or lost connection (transientCause)
 * runs again on its own, after the plugins serve again, at most `sanityRerunsAtMost` times; any
 * other failure fails at once. Each spec run again is printed with its cause and its message,
 * and any plugin restart with the kubelet's record of it. Returns the counts after the reruns.
 */
async function sanityOn(s: StorageUnderTest) {
    const g = guestOf(s);
    // in the kubelet's CSI plugin directory: the node plugin sees it (csi-sanity makes the targets' parents here)
    const work = `${pluginDir}/sanity`;
    const params = `${pluginDir}/sanity-params.yaml`;
    const report = `${work}/report.json`;
    await g.check(`mkdir -p ${work} && cat >${params}`, { stdin: yaml.dump({ "csi.storage.k8s.io/fstype": "xfs", "topolvm.io/device-class": s.name }) });
    const sanity = async (extra: string[]) => csiSanityCommand({ program: `${guestBin}/csi-sanity`, nodeSocket, controllerSocket: await controllerSocket(g), work, params, pathPrograms: `${guestBin}/${path.basename(sanityPathPrograms)}`, extra });
    // Each skip and focus names specs that exist (a renamed spec must not turn one into nothing).
    for (const { spec } of [...s.skips, ...(s.focus ?? [])]) {
        const dry = await g.run(await sanity(["--ginkgo.dry-run", `--ginkgo.focus='${spec}'`]));
        assert.ok(csiSanitySummary(dry.stdout).ran > 0, `${s.name}: ${spec} matches no spec`);
    }
    // the storage's specs: its focus less its skips
    const chosen = [
        ...(s.skips.length ? [`--ginkgo.skip=${shellQuote(s.skips.map((x) => x.spec).join("|"))}`] : []),
        ...(s.focus ? [`--ginkgo.focus=${shellQuote(s.focus.map((x) => x.spec).join("|"))}`] : []),
    ];
    // A dry run skips only what the patterns skip; the real run also skips the specs of
    // capabilities the driver does not claim (csi-sanity's own checks).
    const skippedHere = csiSanitySummary((await g.run(await sanity(["--ginkgo.dry-run", ...chosen]))).stdout).skipped;
    const run = async (extra: string[]) => {
        await g.check(`rm -f ${report}`);
        const r = await g.run(await sanity([`--ginkgo.json-report=${report}`, ...extra]), { timeoutMs: 1_800_000 });
        const output = `${r.stdout}${r.stderr}`;
        const json = await g.run(`cat ${report}`);
        assert.equal(json.code, 0, `csi-sanity ${s.name} wrote no report (exit ${r.code}):\n${output.slice(-20000)}`);
        const specs = sanitySpecs(json.stdout);
        assert.ok(r.code !== 0 || !specs.some(failedSpec), `csi-sanity ${s.name} exited 0 with failed specs:\n${output.slice(-20000)}`);
        assert.ok(r.code === 0 || specs.some(failedSpec), `csi-sanity ${s.name} exited ${r.code} with no failed spec:\n${output.slice(-20000)}`);
        return { specs, output };
    };
    const t = Date.now();
    const restartsBefore = pluginRestarts([s]);
    let { specs, output } = await run(chosen);
    for (let rerun = 1; ; rerun++) {
        const failed = specs.filter(failedSpec);
        if (failed.length === 0) break;
        const told = failed.map((x) => `${x.text} [${x.state} in ${x.failure?.in ?? "?"}]: ${transientCause(x) ?? "not a timeout or a lost connection"}\n${(x.failure?.message ?? "").replace(/^/gm, "    ")}`).join("\n");
        const restarted = restartsSince(restartsBefore, [s]);
        const restartsTold = restarted.map((x) => x.evidence).join("\n");
        // the specs last: CI's log keeps the end of a message
        assert.ok(failed.every((x) => transientCause(x) !== undefined), `csi-sanity ${s.name}: a spec failed, not on a timeout or a lost connection; its output's end:\n${output.slice(-8000)}\nthe failed specs:\n${told}\n${restartsTold}`);
        assert.ok(rerun <= sanityRerunsAtMost, `csi-sanity ${s.name}: specs still failing after ${sanityRerunsAtMost} runs again:\n${told}\n${restartsTold}`);
        console.log(`# csi-sanity ${s.name}: ${failed.length} spec(s) failed on a timeout or a lost connection, run again (${rerun}):\n${told.replace(/^/gm, "#   ")}`);
        if (restarted.length > 0) console.log(restarted.map((x) => x.evidence.replace(/^/gm, "# ")).join("\n"));
        figures.push(`csi-sanity on ${s.name}: run again (${rerun}): ${failed.map((x) => `"${x.text.replace(/^CSI Driver Test Suite /, "")}" (${transientCause(x)})`).join(", ")}${restarted.length > 0 ? `; restarted before: ${restarted.map((x) => `${x.container}${x.byLiveness ? " (killed for its liveness probe)" : ""}`).join(", ")}` : ""}`);
        await pluginsServing(s);
        const unmounted = await leftoverMountsRemoved(g, work);
        if (unmounted.length > 0) console.log(`# csi-sanity ${s.name}: unmounted what the failed specs left: ${unmounted.join(", ")}`);
        await removeLeftoverVolumes([s]);
        const again = await run([`--ginkgo.focus=${shellQuote(focusOn(failed.map((x) => x.text)))}`]);
        // the focus decided exactly the failed specs: each ran, or skipped itself (a capability check that had failed on the socket)
        assert.deepEqual(again.specs.filter(decidedSpec).map((x) => x.text).sort(), failed.map((x) => x.text).sort());
        const skippedNow = again.specs.filter(skippedAsItRan);
        if (skippedNow.length > 0) console.log(`# csi-sanity ${s.name}: skipped as they ran again (a capability the driver does not claim):\n${skippedNow.map((x) => `#   ${x.text}: ${x.failure!.message}`).join("\n")}`);
        specs = withRerun(specs, again.specs);
        output = again.output;
    }
    const counts = sanityCounts(specs);
    figures.push(`csi-sanity on ${s.name}'s pods: ${counts.total} specs, ${counts.passed} passed, ${counts.failed} failed, ${counts.pending} pending, ${skippedHere} skipped here, ${counts.skipped - skippedHere} skipped by csi-sanity (capability not claimed), ${((Date.now() - t) / 1000).toFixed(0)} s`);
    return { storage: s.name, ...counts, skippedHere };
}

/**
 * Each plugin container that restarted since `before`, or is not running now (ended, its restart
 * not yet counted): how its last run ended and its state now (the kubelet's record), whether the
 * kubelet killed it for its liveness probe (the pod's events), and the tail of its previous log.
 */
function restartsSince(before: Record<string, number>, on: StorageUnderTest[]): { container: string; byLiveness: boolean; evidence: string }[] {
    const statuses = pluginStatuses(on);
    const now = restartCounts(statuses);
    const down = new Set(statuses.filter((c) => c.status.state?.running === undefined).map((c) => c.name));
    return Object.keys(now).filter((k) => now[k] !== before[k] || down.has(k)).map((k) => {
        const [pod, container] = k.split("/");
        const status = statuses.find((c) => c.name === k)!.status;
        const events = (cluster.json(`get events -n ${NS} --field-selector involvedObject.name=${pod}`).items as any[]).map((e) => `${e.reason}: ${e.message}`);
        const byLiveness = events.some((e) => /Liveness probe failed|failed liveness probe/.test(e));
        const log = cluster.sh(`kubectl logs -n ${NS} ${pod} -c ${container} --previous --tail=30 2>&1 || true`);
        return { container: k, byLiveness, evidence: `${k}: restarts ${before[k]} -> ${now[k]}; state now ${JSON.stringify(status.state ?? {})}; last termination ${JSON.stringify(status.lastState?.terminated ?? {})}\nevents:\n${events.join("\n")}\nprevious log:\n${log}` };
    });
}

/**
 * csi-sanity's suite against the storage's pods: every spec but its skips passed, the specs that
 * failed on a timeout or a lost connection run again (sanityOn); no LogicalVolume of it left.
 */
async function sanitySuitePasses(s: StorageUnderTest): Promise<void> {
    const run = await sanityOn(s);
    assert.equal(run.failed, 0);
    assert.ok(run.passed >= s.sanityPassesAtLeast && (run.skippedHere > 0) === (s.skips.length > 0 || s.focus !== undefined), `${s.name}: ${JSON.stringify(run)}`);
    assert.deepEqual(logicalVolumesOf(s), [], "csi-sanity removed every volume it made");
}

/** The endpoints of a Service in the storage namespace (its EndpointSlices): pod IP, node, readiness, by port name. */
function serviceEndpoints(service: string): { ip: string; node: string; ready: boolean; ports: Record<string, number> }[] {
    const slices = cluster.json(`get endpointslices -n ${NS} -l kubernetes.io/service-name=${service}`).items as any[];
    return slices.flatMap((sl) => (sl.endpoints ?? []).map((e: any) => ({
        ip: e.addresses[0],
        node: e.nodeName,
        ready: e.conditions?.ready === true,
        ports: Object.fromEntries((sl.ports ?? []).map((p: any) => [p.name, p.port])),
    })));
}

/**
 * Every container `before` listed on `node` running again in a new container (the kubelet has
 * started it since; its status from before the reboot does not count), lvmd Ready.
 */
async function podsBackAnew(node: string, before: Record<string, string>): Promise<void> {
    await waitFor(`the pods on ${node} running again in new containers`, 300_000, () => {
        const now = runningContainers(node);
        const anew = Object.keys(before).every((name) => now[name] !== undefined && now[name].split(" ")[0] !== before[name].split(" ")[0]);
        const lvmd = containersSeen().filter((c) => c.node === node && c.container === "lvmd");
        return anew && lvmd.length === 1 && lvmd[0].ready ? true : undefined;
    }, 3000);
}

/** The containers of the storage namespace's pods on `node` that run: name -> container ID and restart count. */
function runningContainers(node: string): Record<string, string> {
    return Object.fromEntries(containerStatusesOn(node).filter((c) => c.status.state.running).map((c) => [c.name, `${c.status.containerID} restarts=${c.status.restartCount}`]));
}

/** Waits until the guest's kubelet answers its health check and its Node is Ready. */
async function kubeletHealthy(g: Guest): Promise<void> {
    await waitFor(`the kubelet of ${g.name} healthy, its Node Ready`, 120_000, async () => {
        // no curl in the guest: bash's /dev/tcp
        const health = `bash -c 'exec 3<>/dev/tcp/127.0.0.1/10248 && printf "GET /healthz HTTP/1.0\\r\\n\\r\\n" >&3 && grep -qx ok <&3'`;
        if ((await g.run(health)).code !== 0) return undefined;
        const ready = (cluster.json(`get node ${g.name}`).status.conditions as any[]).find((c) => c.type === "Ready");
        return ready?.status === "True" ? true : undefined;
    }, 2000);
}

/**
 * Each guest's load since its boot (guestLoad.ts) and its sidecars' restart count (the kubelet's,
 * one per failed start), into the figures: what the node's own daemons cost under TCG.
 */
async function recordGuestLoad(): Promise<void> {
    for (const g of vms!.guests) {
        const load = parseGuestLoad(await g.check(guestLoadCommand));
        const sidecarRestarts = containerStatusesOn(g.name).filter((c) => c.status.name in sidecarPrograms).reduce((n, c) => n + c.status.restartCount, 0);
        figures.push(`load before the restarts: ${describeGuestLoad(g.name, load)}; the sidecars that cannot start: restart count ${sidecarRestarts}`);
    }
}

/** A point one test waits for and another passes, whatever its result. */
function milestone(): { reached: Promise<void>; pass: () => void } {
    let pass: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (pass = resolve));
    return { reached, pass };
}
/**
 * The thin storage's suite over: the thick node's reboot (the heaviest load on this machine: a
 * guest booting under TCG) waits for it, so the suite's plugins are not starved into restarting.
 */
const thinSuiteOver = milestone();
/**
 * The thick storage's tests over: the monitoring test lists both nodes' topolvm-node, so it must
 * not overlap the thick node's reboot.
 */
const thickTestsOver = milestone();

// Each storage's tests one after the other on its own guest, the two guests' at once: one after
// the other, the idle guest still took close to a host core (its kubelet, containerd, shims), and
// the two suites' work overlaps (609-795 s for both at once against 864 s one after the other,
// test/nodes/README.md "tenth"). The thick guest's volume and restarts run beside the thin suite,
// its reboot once that suite is over (milestones above). Every test reads and removes only its
// own storage's volumes. The controller's long leader-election timings (the stack's
// leaderElection) keep its lease under that load. The plugins' calls to the API server still
// sometimes time out or lose their connection on these emulated guests (a DeleteVolume's Delete of
// its LogicalVolume, topolvm-node's readiness check), and the kubelet has killed lvmd and
// topolvm-node for their 3 s liveness probes (test/nodes/README.md): the specs that failed so run
// again (sanityOn, each storage's own).
describe("each storage's tests on its own guest, the two guests' at once", { concurrency: 2 }, () => {
    describe("the thick storage: csi-sanity, a volume, its node's kubelet and containerd restarted, its node rebooted", { concurrency: 1 }, () => {
        after(() => thickTestsOver.pass());

        test("csi-sanity's suite against the thick storage's pods (its node's topolvm-node socket and controller pod's), less snapshots and clones, which TopoLVM makes of thin volumes only; a spec failed on a plugin's timeout or lost connection run again on its own (at most three times), with its cause; any other failure fails", () => sanitySuitePasses(thick));

        test("a volume through the pods' CSI sockets: the controller pod creates it (a LogicalVolume, an LV on the node), the node pod publishes it with XFS; data written; expanded online (the LV by the controller, XFS by the node) with the data kept", async () => {
            const g = guestOf(thick);
            const nodeCaps = await csiCall(g, onNode, "node-caps", []);
            assert.deepEqual(nodeCaps.capabilities.map((c: any) => c.rpc.type).sort(), ["EXPAND_VOLUME", "GET_VOLUME_STATS", "VOLUME_CONDITION"], "no STAGE_UNSTAGE_VOLUME: the kubelet publishes directly");
            volume = await createVolume(thick, "nodes-tier-volume");
            target = await publish(thick, volume!, "nodes-tier-test");
            checksum = (await g.check(`head -c 33554432 /dev/urandom >${target}/data && sync && sha256sum ${target}/data | cut -d' ' -f1`)).trim();
            assert.match(checksum, /^[0-9a-f]{64}$/);

            const fsSize = async () => Number((await g.check(`df -B1 --output=size ${target} | tail -n1`)).trim());
            const sizeBefore = await fsSize();
            assert.ok(sizeBefore > 0.9 * GiB && sizeBefore <= GiB, `filesystem of ${sizeBefore} bytes`);
            const expanded = await csiCall(g, controllerOf(thick), "controller-expand", [`-volume=${volume!.volumeId}`, `-size=${2 * GiB}`]);
            assert.equal(expanded.capacityBytes, String(2 * GiB));
            assert.equal(expanded.nodeExpansionRequired, true);
            assert.equal(await lvSize(thick, volume!.volumeId), String(2 * GiB));
            await csiCall(g, onNode, "node-expand", [`-volume=${volume!.volumeId}`, `-target=${target}`, `-size=${2 * GiB}`]);
            const sizeAfter = await fsSize();
            assert.ok(sizeAfter > 1.9 * GiB && sizeAfter <= 2 * GiB, `filesystem of ${sizeAfter} bytes after expansion`);
            assert.match(await g.check(`xfs_info ${target}`), /data\s+=\s+bsize=4096\s+blocks=524288/);
            assert.equal((await g.check(`sha256sum ${target}/data | cut -d' ' -f1`)).trim(), checksum);
        });

        test("kubelet and containerd restarted on the volume's node (systemctl): every container runs on, the same (IDs, restart counts), the volume stays published with its data", async () => {
            assert.ok(volume && checksum, "the volume of the test before");
            await recordGuestLoad();
            const g = guestOf(thick);
            for (const daemon of ["kubelet", "containerd"]) {
                const before = runningContainers(thick.node);
                assert.ok(Object.keys(before).some((k) => k.endsWith("/lvmd")) && Object.keys(before).some((k) => k.endsWith("/topolvm-node")), JSON.stringify(before));
                const t = Date.now();
                const pid = (await g.check(`systemctl show -p MainPID --value ${daemon}`)).trim();
                await g.check(`systemctl restart ${daemon}`);
                assert.notEqual((await g.check(`systemctl show -p MainPID --value ${daemon}`)).trim(), pid, `${daemon} is a new process`);
                await kubeletHealthy(g);
                figures.push(`${daemon} restart on ${thick.node}: Ready again in ${((Date.now() - t) / 1000).toFixed(0)} s`);
                assert.deepEqual(runningContainers(thick.node), before, `${daemon} restarted`);
            }
            assert.equal((await g.check(`sha256sum ${target}/data | cut -d' ' -f1`)).trim(), checksum);
        });

        test("the volume's node rebooted: the Node Ready again, lvmd, topolvm-node and the controller as pods again, the VG and its LV kept, the volume publishes again with its data and the capacity is published again", async () => {
            assert.ok(volume && checksum, "the volume of the test before");
            const waited = Date.now();
            await thinSuiteOver.reached;
            figures.push(`the reboot waited ${((Date.now() - waited) / 1000).toFixed(0)} s for the thin storage's suite`);
            const g = guestOf(thick);
            const before = runningContainers(thick.node);
            const names = Object.keys(before).map((k) => k.split("/")[1]);
            assert.ok(names.includes("lvmd") && names.includes("topolvm-node"), names.join(", "));
            const rebootMs = await g.reboot();
            const t = Date.now();
            await kubeletHealthy(g);
            await podsBackAnew(thick.node, before);
            figures.push(`reboot of ${thick.node}: back over SSH in ${(rebootMs / 1000).toFixed(0)} s, its pods Running again ${((Date.now() - t) / 1000).toFixed(0)} s later`);
            // nothing of ours ran the disk command again: the VG and the LV are the node's own
            assert.equal((await g.check(`lvs --noheadings -o lv_name zcloud-${thick.name}/${volume!.volumeId}`)).trim(), volume!.volumeId);
            assert.notEqual((await g.run(`findmnt ${target}`)).code, 0, "a reboot leaves no mount");
            assert.equal(await publish(thick, volume!, "nodes-tier-test"), target);
            assert.equal((await g.check(`sha256sum ${target}/data | cut -d' ' -f1`)).trim(), checksum);
            const expected = await topolvmCapacity(g, `zcloud-${thick.name}`);
            assert.equal(String(cluster.json(`get node ${thick.node}`).metadata.annotations?.[`capacity.topolvm.io/${thick.name}`]), expected);
        });
    });

    describe("the thin storage: csi-sanity, a snapshot restored, monitoring", { concurrency: 1 }, () => {
        test("csi-sanity against the thin storage's pods (its node's topolvm-node socket and controller pod's): its snapshots and clones and the specs that reach a thin pool (capacity, a volume's life, expansion), the rest of the suite being the thick storage's; a spec failed on a plugin's timeout or lost connection run again on its own (at most three times), with its cause; any other failure fails", async () => {
            try {
                await sanitySuitePasses(thin);
            } finally {
                thinSuiteOver.pass();
            }
        });

        test("a thin volume written, snapshotted, overwritten; a volume from the snapshot holds the data of the snapshot", async () => {
            const g = guestOf(thin);
            const before = logicalVolumeNames(thin);
            const origin = await createVolume(thin, "pvc-origin");
            const originAt = await publish(thin, origin, "origin");
            const sum = (await g.check(`head -c 32M /dev/urandom >${originAt}/data && sync && sha256sum <${originAt}/data`)).trim();
            // A thin LV in the storage's pool, as the device class says.
            assert.equal((await g.check(`lvs --noheadings -o pool_lv zcloud-${thin.name}/${origin.volumeId}`)).trim(), "pool");
            // The external snapshotter freezes nothing: the kubelet's sync above is what a pod's fsync would be.
            const snapshot = (await csiCall(g, controllerOf(thin), "snapshot", [`-volume=${origin.volumeId}`, "-name=snap-origin"])).snapshot;
            assert.equal(snapshot.sourceVolumeId, origin.volumeId);
            assert.equal(snapshot.readyToUse, true);
            await g.check(`head -c 32M /dev/urandom >${originAt}/data && sync`);
            assert.notEqual((await g.check(`sha256sum <${originAt}/data`)).trim(), sum);
            const restored = await createVolume(thin, "pvc-restored", [`-snapshot=${snapshot.snapshotId}`]);
            assert.deepEqual(restored.contentSource, { snapshot: { snapshotId: snapshot.snapshotId } });
            const restoredAt = await publish(thin, restored, "restored");
            assert.equal((await g.check(`sha256sum <${restoredAt}/data`)).trim(), sum);
            await removeVolume(thin, restored.volumeId, restoredAt);
            await csiCall(g, controllerOf(thin), "delete-snapshot", [`-snapshot=${snapshot.snapshotId}`]);
            assert.notEqual((await g.run(`lvs zcloud-${thin.name}/${snapshot.snapshotId}`)).code, 0);
            await removeVolume(thin, origin.volumeId, originAt);
            assert.deepEqual(madeSince(thin, before), []);
        });

        test("monitoring: a real Prometheus scrapes topolvm-node and topolvm-controller through the rendered metrics Services, with the rule file the program put in its ConfigMap: the thin pool's data alert fires, then its metadata alert; every LVM dashboard query has series but the kubelet's volume stats", async () => {
            // The thick node's reboot over first (the dashboard lists both nodes' topolvm-node), and the
            // metrics Services' endpoints at their pods' addresses since (new sandboxes after the reboot).
            const waited = Date.now();
            await thickTestsOver.reached;
            figures.push(`the monitoring test waited ${((Date.now() - waited) / 1000).toFixed(0)} s for the thick storage's tests`);
            await waitFor("the metrics Services' endpoints at their pods' addresses", 120_000, () => {
                const podIps = new Set((cluster.json(`get pods -n ${NS}`).items as any[]).map((x) => x.status.podIP as string | undefined));
                const endpoints = [topolvmMetricsTarget.service, topolvmControllerMetricsTarget(true).service].flatMap(serviceEndpoints);
                return endpoints.length > 0 && endpoints.every((e) => podIps.has(e.ip)) ? true : undefined;
            }, 3000);
            // Only the leader runs the reconcilers whose metrics the test reads. A leader killed by the
            // reboot still holds the Lease until it expires (137 s after its last renewal), then a
            // replica takes it at its next retry (26 s): wait for a renewal, not a clock (the
            // holder's renewTime is the guest's time).
            const leaderWaited = Date.now();
            const seenRenewal = controllerLease()?.renewTime;
            await waitFor("topolvm-controller's Lease renewed by a live leader (after the reboot: once it expired and a replica took it)", 300_000, () => {
                const now = controllerLease()?.renewTime;
                return now !== undefined && now !== seenRenewal ? true : undefined;
            }, 2000);
            figures.push(`the monitoring test waited ${((Date.now() - leaderWaited) / 1000).toFixed(0)} s for a renewal of the controller's Lease`);
            const g = guestOf(thin);
            const vg = `zcloud-${thin.name}`;
            const lvsBefore = logicalVolumeNames(thin);
            const t0 = Date.now();
            const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
            const note = (line: string) => console.log(`# metrics: ${line}`);
            const pool = async () => {
                const [data, meta] = (await g.check(`lvs --noheadings --nosuffix -o data_percent,metadata_percent ${vg}/pool`)).trim().split(/\s+/).map(Number);
                return { data, meta };
            };
            const { thinPoolDataUsed: dataAt, thinPoolMetadataUsed: metaAt } = metricsThresholds;
            const before = await pool();

            // What the program applied: each LVM storage's rule file, the LVM dashboard, the metrics Services.
            const ruleMaps = (cluster.json(`get configmaps -n ${NS} -l app.kubernetes.io/component=alerts`).items as any[]).map((c) => c.metadata.name).sort();
            assert.ok(storages.every((s) => ruleMaps.includes(`zcloud-storage-rules-${s.name}`)), `the storages' rule ConfigMaps: ${ruleMaps.join(", ")}`);
            // each ConfigMap's rule file is `<its name>.yaml` (beside it, a driver's has its scrape file)
            const ruleFileOf = (name: string) => {
                const text = (cluster.json(`get configmap ${name} -n ${NS}`).data as Record<string, string>)[`${name}.yaml`];
                assert.ok(text, `${name} holds ${name}.yaml`);
                return text;
            };
            const ruleFiles = ruleMaps.map((name) => withFor(ruleFileOf(name), "4s"));
            const thinRules = [yaml.load(ruleFileOf(`zcloud-storage-rules-${thin.name}`)) as { groups: { rules: { alert?: string; expr: string }[] }[] }];
            const board = JSON.parse(Object.values(cluster.json(`get configmap zcloud-storage-dashboard-lvm -n ${NS}`).data as Record<string, string>)[0]);
            // The Services select the plugins' pods (not Ready: their sidecars cannot start; Prometheus's
            // Kubernetes discovery lists not-ready endpoints too, as a ServiceMonitor's scrape does).
            const nodeTargets = serviceEndpoints(topolvmMetricsTarget.service);
            assert.deepEqual(nodeTargets.map((e) => e.node).sort(), storages.map((s) => s.node).sort(), `${topolvmMetricsTarget.service}: one endpoint per node's topolvm-node pod`);
            const metricsPort = topolvmMetricsTarget.ports[0];
            // the controller's own port; its sidecars' ports have nothing behind them here
            const controllerTarget = topolvmControllerMetricsTarget(true);
            const controllerPort = controllerTarget.ports[0];
            const controllerTargets = serviceEndpoints(controllerTarget.service);
            assert.ok(controllerTargets.length > 0, `${controllerTarget.service} selects the controller pods`);
            const endpoint = (e: { ip: string; ports: Record<string, number> }, port: string) => {
                assert.ok(e.ports[port], `port ${port} in ${JSON.stringify(e.ports)}`);
                return `${e.ip}:${e.ports[port]}`;
            };
            assert.ok(nodeTargets.every((e) => e.ports[metricsPort.name] === metricsPort.port), `the node Service's ${metricsPort.name} port is ${metricsPort.port}`);
            prom = await startPrometheus({
                dir: path.join(cluster.dir, "prometheus"),
                // As the rendered targets scrape: their paths, TopoLVM's own `node` label kept (honor_labels).
                scrapeConfigs: [
                    { job_name: topolvmMetricsTarget.service, honor_labels: topolvmMetricsTarget.honorLabels, metrics_path: topolvmMetricsTarget.path, static_configs: [{ targets: nodeTargets.map((e) => endpoint(e, metricsPort.name)) }] },
                    { job_name: controllerTarget.service, metrics_path: controllerTarget.path, static_configs: [{ targets: controllerTargets.map((e) => endpoint(e, controllerPort.name)) }] },
                ],
                // Every `for` shortened: the promtool cases (test/monitoring/promtool.test.ts) prove the real ones.
                ruleFiles,
                interval: "2s",
                // A scrape of a starved guest can outlast 2 s; a failed one drops the node's series (and
                // its alerts) until the next.
                scrapeInterval: "5s",
            });
            const p = prom;
            const gauge = async (part: "data" | "metadata") => {
                const found = await p.query(thinPoolPercent(thin.name, part));
                return found.length === 1 ? Number(found[0].value[1]) : undefined;
            };
            await p.until(`${thinPoolPercent(thin.name, "data")} scraped from ${thin.node}'s topolvm-node pod`, 60_000, () => gauge("data"));
            await p.until("topolvm-controller's controller_runtime_reconcile_total scraped", 60_000, async () => ((await p.query(`controller_runtime_reconcile_total{job="${controllerTarget.service}"}`)).length > 0 ? true : undefined));
            const alertsOf = async (prefix: string) => (await p.alerts()).filter((a) => a.labels.alertname.startsWith(prefix) && a.labels.storage === thin.name);
            const firing = (name: string) => p.until(`${name} firing for ${thin.name} in ${p.url}/api/v1/alerts`, 90_000, async () => (await alertsOf(name)).find((a) => a.labels.alertname === name && a.state === "firing"));
            // An alert's labels less the target's (instance, job here; the Operator's scrape adds namespace, pod, service too).
            const alertLabels = (a: { labels: Record<string, string> }) => Object.fromEntries(Object.entries(a.labels).filter(([k]) => k !== "instance" && k !== "job"));
            const restartsBefore = pluginRestarts();
            // Each target's failed scrapes and longest scrape since Prometheus started, and the plugins
            // restarted since the test began: what makes series (and alerts with them) drop out here.
            const scrapeHealth = async () => {
                const per = async (expr: string) => Object.fromEntries((await p.query(expr)).map((r) => [r.metric.instance, Number(r.value[1])]));
                const failed = await per("count_over_time(up[1h]) - sum_over_time(up[1h])");
                const longest = await per("max_over_time(scrape_duration_seconds[1h])");
                const targets = Object.keys(longest).sort().map((i) => `${i} ${failed[i] ?? "?"} failed, longest ${longest[i].toFixed(2)} s`);
                const now = pluginRestarts();
                const restarted = Object.keys(now).filter((c) => now[c] !== restartsBefore[c]);
                return `scrapes: ${targets.join("; ")}; plugins restarted meanwhile: ${restarted.join(", ") || "none"}`;
            };
            // The thin pool alerts (less the forecasts, which may be pending: the shares rose fast) once they
            // come to `want`: a dropped scrape resolves an alert, which is pending again for its `for`.
            const thinAlertsSettle = async (want: string[], what: string) => {
                let got: string[] = [];
                await p.until(`${what}: ${JSON.stringify(want)}`, 60_000, async () => {
                    got = (await alertsOf("LvmThinPool")).map((a) => `${a.labels.alertname} ${a.state}`).filter((a) => !a.includes("FullSoon")).sort();
                    return JSON.stringify(got) === JSON.stringify(want) ? got : undefined;
                }).catch(() => undefined);
                assert.deepEqual(got, want, `${what} (${await scrapeHealth()})`);
            };
            note(`at start: lvs data ${before.data}%, metadata ${before.meta}%; gauges ${await gauge("data")}%, ${await gauge("metadata")}% (${at()})`);
            assert.ok(before.data < dataAt.warning && before.meta < metaAt.warning, `the pool starts below the test's thresholds: ${JSON.stringify(before)}`);
            assert.deepEqual(await alertsOf("LvmThinPool"), [], "no thin pool alert before anything is written");

            // What the test makes, removed in the end whatever fails.
            let volumeId: string | undefined;
            const snapshots: string[] = [];
            let steps = 0;
            try {
                const v = await createVolume(thin, "pvc-metrics");
                volumeId = v.volumeId;
                // dm-thin maps a chunk for every write, zeros too.
                const device = `/dev/${vg}/${v.volumeId}`;
                await g.check(`dd if=/dev/zero of=${device} bs=1M count=${metricsDataMiB} oflag=direct status=none`, { timeoutMs: 300_000 });
                const written = await pool();
                // lvmd sends topolvm-node the pool's figures only after a volume operation of its own (or on
                // its 10-minute tick): the gauge still says what it said before the writes.
                note(`${metricsDataMiB} MiB written (${at()}): lvs data ${written.data}%, metadata ${written.meta}%; gauges still ${await gauge("data")}%, ${await gauge("metadata")}%`);
                // Any volume operation on the node refreshes them: a snapshot of the volume, as a VolumeSnapshot would.
                snapshots.push((await csiCall(g, controllerOf(thin), "snapshot", [`-volume=${v.volumeId}`, "-name=snap-metrics-data"])).snapshot.snapshotId);
                const refreshedData = Date.now();
                const dataFilling = await firing("LvmThinPoolDataFilling");
                const afterData = await pool();
                figures.push(`LvmThinPoolDataFilling firing ${((Date.now() - refreshedData) / 1000).toFixed(1)} s after lvmd's refresh (lvs data ${afterData.data}%)`);
                assert.deepEqual(alertLabels(dataFilling), { alertname: "LvmThinPoolDataFilling", severity: "warning", storage: thin.name, device_class: thin.name, node: thin.node });
                assert.match(dataFilling.annotations.description, new RegExp(`thin pool data of ${thin.name} on ${thin.node} is \\d+\\.\\d% used`));
                assert.ok(afterData.data >= dataAt.warning && afterData.data < dataAt.critical, `data between the warning and the critical threshold: ${afterData.data}%`);
                assert.ok(afterData.meta < metaAt.warning, `filling the data alone keeps the metadata below ${metaAt.warning}%: ${afterData.meta}%`);
                await thinAlertsSettle(["LvmThinPoolDataFilling firing"], "the data warning alone: no metadata alert yet, no critical");

                // Metadata: thin snapshots of the volume, each followed by a 4 KiB write every 4 MiB of it:
                // each write un-shares a chunk (64 KiB of data) and copies its mapping's btree leaf (a 4 KiB
                // metadata block), so the metadata grows far faster than the data, as with many snapshots.
                const offsets = Array.from({ length: metricsDataMiB / 4 }, (_, i) => i * 4 * 1024 * 1024);
                let now = afterData;
                while (now.meta < metaAt.warning + 1) {
                    assert.ok(steps < 20, `metadata past ${metaAt.warning + 1}% within 20 snapshots: ${now.meta}%`);
                    steps++;
                    const writes = offsets.map((o) => `-c 'pwrite -q -S ${steps} ${o} 4096'`).join(" ");
                    await g.check(`lvcreate --quiet --snapshot --name zmeta${steps} ${vg}/${v.volumeId} >/dev/null && xfs_io -d ${writes} ${device}`, { timeoutMs: 120_000 });
                    now = await pool();
                }
                note(`${steps} snapshots with ${offsets.length} writes each (${at()}): lvs data ${now.data}%, metadata ${now.meta}%; gauges still ${await gauge("data")}%, ${await gauge("metadata")}%`);
                snapshots.push((await csiCall(g, controllerOf(thin), "snapshot", [`-volume=${v.volumeId}`, "-name=snap-metrics-metadata"])).snapshot.snapshotId);
                const refreshedMeta = Date.now();
                const metaFilling = await firing("LvmThinPoolMetadataFilling");
                const afterMeta = await pool();
                figures.push(`LvmThinPoolMetadataFilling firing ${((Date.now() - refreshedMeta) / 1000).toFixed(1)} s after lvmd's refresh (lvs metadata ${afterMeta.meta}%, ${steps} snapshots)`);
                assert.deepEqual(alertLabels(metaFilling), { alertname: "LvmThinPoolMetadataFilling", severity: "warning", storage: thin.name, device_class: thin.name, node: thin.node });
                assert.ok(Date.parse(metaFilling.activeAt) > Date.parse(dataFilling.activeAt), `the metadata alert (active at ${metaFilling.activeAt}) after the data alert (${dataFilling.activeAt})`);
                // The gauges come to lvs's figures once the refresh is through (nothing writes since). lvmd's
                // own 10-minute tick may have sent figures read between two fills first: waited for.
                await p.until(`the gauges at lvs's figures (data ${afterMeta.data}%, metadata ${afterMeta.meta}%)`, 30_000, async () => {
                    const got = { data: await gauge("data"), meta: await gauge("metadata") };
                    return got.data === afterMeta.data && got.meta === afterMeta.meta ? got : undefined;
                });
                assert.ok(afterMeta.data < dataAt.critical && afterMeta.meta < metaAt.critical);
                await thinAlertsSettle(["LvmThinPoolDataFilling firing", "LvmThinPoolMetadataFilling firing"], "the two warnings, no critical");

                // Every metric the storage's rules read from TopoLVM is served, with the labels they use.
                const servedNames = new Set((await p.query('count by (__name__) ({__name__=~"topolvm_.+"})')).map((x) => x.metric.__name__));
                const ruleMetrics = [...new Set(thinRules.flatMap((f) => f.groups).flatMap((gr) => gr.rules).flatMap((r) => metricNames(r.expr)))].sort();
                const fromTopolvm = ruleMetrics.filter((m) => m.startsWith("topolvm_"));
                note(`rule metrics from TopoLVM: ${fromTopolvm.join(", ")}; served: ${[...servedNames].sort().join(", ")}; not TopoLVM's: ${ruleMetrics.filter((m) => !m.startsWith("topolvm_")).join(", ")}`);
                assert.ok(fromTopolvm.length > 0);
                assert.deepEqual(fromTopolvm.filter((m) => !servedNames.has(m)), [], "a rule reads a TopoLVM metric that topolvm-node does not serve");
                for (const m of fromTopolvm) {
                    for (const series of await p.query(`${m}{device_class="${thin.name}"}`)) {
                        assert.equal(series.metric.node, thin.node, `${m} carries node`);
                    }
                }

                // The dashboard's storage variable lists both storages (every node's topolvm-node scraped),
                // and every query of the LVM dashboard the program applied has series for this storage.
                // Asked again (bounded): a scrape that outlasts its 2 s interval on these starved guests
                // marks that node's series stale until the next one (a cold CI run read the variable then).
                const variable = (board.templating.list as { name: string; query?: string }[]).find((x) => x.name === "storage")!.query!;
                const labelValues = /^label_values\((.+), (\w+)\)$/.exec(variable);
                assert.ok(labelValues, variable);
                const dashboardNow = async () => {
                    const listed = [...new Set((await p.query(labelValues[1])).map((r) => r.metric[labelValues[2]]))].sort();
                    const empty: string[] = [];
                    const counts: string[] = [];
                    for (const panel of board.panels as { title: string; targets?: { expr: string }[] }[]) {
                        for (const t of panel.targets ?? []) {
                            const series = await p.query(t.expr.replaceAll("$storage", thin.name));
                            counts.push(`dashboard "${panel.title}": ${series.length} series`);
                            if (series.length === 0) empty.push(panel.title);
                        }
                    }
                    return { listed, empty, counts };
                };
                const wanted = storages.map((x) => x.name).sort();
                // The kubelet's volume stats need a pod with a TopoLVM volume, which needs the registrar (not built here).
                const complete = (d: Awaited<ReturnType<typeof dashboardNow>>) => JSON.stringify(d.listed) === JSON.stringify(wanted) && JSON.stringify(d.empty) === JSON.stringify(["Volumes used"]);
                const dashboard = await p.until(`${variable} listing ${wanted.join(", ")} and every dashboard query but "Volumes used" with series`, 30_000, async () => {
                    const d = await dashboardNow();
                    return complete(d) ? d : undefined;
                }).catch(async () => dashboardNow());
                for (const line of dashboard.counts) note(line);
                note(await scrapeHealth());
                assert.deepEqual(dashboard.listed, wanted, variable);
                assert.deepEqual(dashboard.empty, ["Volumes used"], "every dashboard query but the kubelet's volume stats has series");
            } finally {
                await prom?.stop();
                prom = undefined;
                if (steps > 0) await g.run(`lvremove --quiet --yes ${Array.from({ length: steps }, (_, i) => `${vg}/zmeta${i + 1}`).join(" ")}`);
                for (const id of snapshots) {
                    await csiCall(g, controllerOf(thin), "delete-snapshot", [`-snapshot=${id}`]);
                }
                if (volumeId) await csiCall(g, controllerOf(thin), "delete", [`-volume=${volumeId}`]);
            }
            assert.notEqual((await g.run(`lvs ${vg}/${volumeId}`)).code, 0);
            assert.deepEqual(madeSince(thin, lvsBefore), []);
            figures.push(`metrics test ${at()}`);
        });
    });
});
