/**
 * Nodes tier, LVM on real nodes: TopoLVM as the program renders it, run by real kubelets and
 * containerd in two QEMU guests (TCG) of the VM tier, which have the device-mapper this machine's
 * kernel lacks. The control plane and the registry run here (cluster.sh, no namespace node); each
 * guest joins the cluster as a node (cluster.sh guests: a tap on the bridge, a pod /24, containerd,
 * kubelet and kube-proxy as enabled systemd units, their programs over a read-only 9p share).
 * A stack with a thick storage on one guest and a thin one on the other is planned with
 * `imageRegistry` at the local registry, where images.sh pushed the TopoLVM image built here, and
 * applied as `pulumi up` applies it (apply.ts): the disk commands over SSH, the objects to the API
 * server. The kubelets pull the image and run lvmd, topolvm-node and topolvm-controller as pods.
 * The CSI sidecars cannot be built here (the module proxy does not serve them): the containers that
 * run them cannot start, and exactly those are asserted. A volume is created and published through
 * the pods' CSI sockets by our CSI client (test/drivers/csi-call), as the sidecars and the kubelet
 * would; then the node's kubelet and containerd are restarted and the node is rebooted.
 * Run: node --import tsx --test test/nodes/lvm.test.ts (root; builds or reuses the tools, images
 * and the VM image).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { planYaml, PlanRun } from "../helpers/plan";
import { bootGuests, Guest, GuestSet } from "../vm/harness";
import { copyIntoGuest, csiSanityCommand, csiSanitySummary, GuestLvmStorage, guestLvmStackYaml, topolvmCapacity } from "../drivers/guestFiles";
import { csiCallProgram, csiSanityProgram } from "../drivers/programs";
import { NodesCluster, startCluster, waitFor } from "./cluster";
import { GuestShell, PlanApplier } from "./apply";

const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";

interface StorageUnderTest extends GuestLvmStorage {
    reboots?: boolean;
}

const storages: StorageUnderTest[] = [
    { name: "lthick", node: "topolvm-a", disk: "nl-thick", reboots: true },
    { name: "lthin", node: "topolvm-b", disk: "nl-thin", thin: { overprovisionRatio: 4, snapshots: true } },
];

let cluster: NodesCluster;
let vms: GuestSet | undefined;
let plan: PlanRun;
const figures: string[] = [];
const began = Date.now();
const since = () => `${((Date.now() - began) / 1000).toFixed(0)} s`;

const guestOf = (s: StorageUnderTest): Guest => vms!.get(s.node);

const stackYaml = (): string =>
    guestLvmStackYaml(storages, guestOf, "v1:nodes-tier", { "kubernetes:context": CONTEXT, "zcloud-storage:imageRegistry": "10.250.0.1:5000" });

before(async () => {
    cluster = startCluster([], "zcloud-nodes-lvm-");
    figures.push(`cluster (control plane, registry, pushes) up at ${since()}`);
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" guests "${cluster.dir}" ${storages.map((s) => s.node).join(" ")}`);
    const tapOf = (node: string) => `zcn0-t${fs.readFileSync(path.join(cluster.dir, "nodes", node, "index"), "utf8").trim()}`;
    vms = await bootGuests(
        storages.map((s) => ({
            name: s.node,
            disks: [{ serial: s.disk, sizeMiB: 2048 }],
            memoryMiB: 2048,
            rebootable: s.reboots === true,
            taps: [tapOf(s.node)],
            shares: [
                { tag: "zcnbin", path: path.join(cluster.dir, "guest-bin") },
                { tag: "zcnconf", path: path.join(cluster.dir, "nodes", s.node, "guest") },
            ],
        })),
    );
    figures.push(`guests booted at ${since()} (${vms.guests.map((g) => `${g.name} ${(g.bootMs / 1000).toFixed(0)} s`).join(", ")})`);
    const install = fs.readFileSync(path.join(__dirname, "guest-node.sh"), "utf8");
    await Promise.all(storages.map((s) => guestOf(s).check("sh -s", { stdin: install })));
    for (const s of storages) {
        await waitFor(`node ${s.node} Ready`, 300_000, () => {
            const node = cluster.json(`get node ${s.node}`);
            return node.status.conditions.find((c: any) => c.type === "Ready")?.status === "True" ? true : undefined;
        }, 2000);
    }
    figures.push(`both guest nodes Ready at ${since()}`);
    plan = await planYaml(stackYaml());
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
});

after(async () => {
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
/** Where csi-call (our CSI client, test/drivers/csi-call) is copied in each guest. */
const guestBin = "/opt/zcloud-test";
const [thick, thin] = storages;
/** The node plugin's socket, as the rendered DaemonSet puts it on the node. */
const nodeSocket = "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock";
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

test("csi-sanity's full suite against the thin storage's pods (topolvm-node's socket and its node's controller pod's), snapshots and clones included; no plugin container restarted meanwhile", async () => {
    const g = guestOf(thin);
    await copyIntoGuest(g, path.dirname(csiSanityProgram()), ["csi-sanity"], guestBin);
    // in the kubelet's CSI plugin directory: the node plugin sees it (csi-sanity makes the targets' parents here)
    const work = "/var/lib/kubelet/plugins/kubernetes.io/csi/topolvm.io/sanity";
    const params = "/var/lib/kubelet/plugins/kubernetes.io/csi/topolvm.io/sanity-params.yaml";
    await g.check(`mkdir -p ${work} && cat >${params}`, { stdin: yaml.dump({ "csi.storage.k8s.io/fstype": "xfs", "topolvm.io/device-class": thin.name }) });
    const restarts = () => Object.fromEntries((cluster.json(`get pods -n ${NS} --field-selector spec.nodeName=${thin.node}`).items as any[]).flatMap((p) => (p.status.containerStatuses ?? []).filter((c: any) => !(c.name in sidecarPrograms)).map((c: any) => [`${p.metadata.name}/${c.name}`, c.restartCount])));
    const before = restarts();
    const t = Date.now();
    const command = csiSanityCommand({ program: `${guestBin}/csi-sanity`, nodeSocket, controllerSocket: await controllerSocket(g), work, params });
    const r = await g.run(command, { timeoutMs: 1_800_000 });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.code, 0, `csi-sanity failed:\n${out.slice(-20000)}`);
    const { total, passed, failed, pending, skipped } = csiSanitySummary(out);
    figures.push(`csi-sanity on ${thin.name}'s pods: ${total} specs, ${passed} passed, ${failed} failed, ${pending} pending, ${skipped} skipped by csi-sanity (capability not claimed), ${((Date.now() - t) / 1000).toFixed(0)} s`);
    assert.equal(failed, 0);
    assert.ok(passed >= 50, `${passed} specs passed (52 in the drivers tier's run)`);
    assert.deepEqual(restarts(), before, "no container of the plugins restarted during the run (the probes are answered)");
});

test("a volume through the pods' CSI sockets: the controller pod creates it (a LogicalVolume, an LV on the node), the node pod publishes it with XFS; data written", async () => {
    const g = guestOf(thick);
    await copyIntoGuest(g, path.dirname(csiCallProgram()), ["csi-call"], guestBin);
    const created = await csiCall(g, () => controllerSocket(g), "create", [
        "-name=nodes-tier-volume",
        `-size=${GiB}`,
        `-param=topolvm.io/device-class=${thick.name}`,
        "-param=csi.storage.k8s.io/fstype=xfs",
    ]);
    volume = created.volume;
    assert.equal(created.volume.capacityBytes, String(GiB));
    assert.deepEqual(created.volume.accessibleTopology, [{ segments: { "topology.topolvm.io/node": thick.node } }]);
    const lv = (cluster.json("get logicalvolumes.topolvm.io").items as any[]).find((x) => x.status?.volumeID === volume!.volumeId);
    assert.equal(lv?.spec.nodeName, thick.node);
    assert.equal((await g.check(`lvs --noheadings --units b --nosuffix -o lv_size zcloud-${thick.name}/${volume!.volumeId}`)).trim(), String(GiB));
    // The kubelet would publish in a pod's volume directory; without the registrar no pod gets the
    // volume, and the kubelet removes a pod directory it does not know. The node plugin sees the
    // kubelet's CSI plugin directory too (mounted as rendered, Bidirectional): published there.
    target = "/var/lib/kubelet/plugins/kubernetes.io/csi/topolvm.io/nodes-tier-test/mount";
    await publish(g);
    checksum = (await g.check(`head -c 33554432 /dev/urandom >${target}/data && sync && sha256sum ${target}/data | cut -d' ' -f1`)).trim();
    assert.match(checksum, /^[0-9a-f]{64}$/);
});

/** NodePublishVolume of the test's volume at `target`, as the kubelet calls it (TopoLVM claims no staging). */
async function publish(g: Guest): Promise<void> {
    const context = Object.entries(volume!.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
    // the kubelet makes the target's parent, the plugin the target
    await g.check(`mkdir -p ${path.dirname(target)}`);
    await csiCall(g, onNode, "publish", [`-volume=${volume!.volumeId}`, `-target=${target}`, "-fs=xfs", ...context]);
    assert.equal((await g.check(`findmnt -n -o FSTYPE ${target}`)).trim(), "xfs");
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
    const pods = cluster.json(`get pods -n ${NS} --field-selector spec.nodeName=${node}`).items as any[];
    return Object.fromEntries(
        pods.flatMap((p) => (p.status.containerStatuses ?? []).filter((c: any) => c.state.running).map((c: any) => [`${p.metadata.name}/${c.name}`, `${c.containerID} restarts=${c.restartCount}`])),
    );
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

test("kubelet and containerd restarted on the volume's node (systemctl): every container runs on, the same (IDs, restart counts), the volume stays published with its data", async () => {
    assert.ok(volume && checksum, "the volume of the test before");
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
    await publish(g);
    assert.equal((await g.check(`sha256sum ${target}/data | cut -d' ' -f1`)).trim(), checksum);
    const expected = await topolvmCapacity(g, `zcloud-${thick.name}`);
    assert.equal(String(cluster.json(`get node ${thick.node}`).metadata.annotations?.[`capacity.topolvm.io/${thick.name}`]), expected);
});
