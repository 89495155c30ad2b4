/**
 * Nodes tier, CephFS as pods: a three-host CephFS storage planned by the program and applied as
 * `pulumi up` applies it (apply.ts) to real nodes (cluster.sh: four, the fourth joins later), one
 * loop device per node, images from the local registry through the stack's `imageRegistry`.
 * Every workload the program renders becomes real pods: the mons, managers, OSD prepare Jobs,
 * OSDs, mds, the admin DaemonSet and the filesystem Job Running or Succeeded, each gate passing
 * against them; only ceph-csi's pods cannot start (their images cannot be built here), and exactly
 * those. Then, on the cluster the pods made:
 * - the image holds every program docs/cephfs.md says an image of the release must hold;
 * - the monmap names the mon Services' ClusterIPs, `ceph -s` is HEALTH_OK, and a client pod mounts
 *   the filesystem with ceph-fuse as the CSI user (in its subvolume group, the only path that user
 *   may write), writes checksummed files and reads them back, leaving no session behind;
 * - the gated roll of every daemon to the image with quay.io's uid for the ceph user (the stack
 *   was made with a Debian-uid copy) under a writer pod, one daemon (one host's OSDs) at a time in
 *   the program's order, each gate between: mon stores handed over, no client evicted at the mds
 *   handover, every file read back;
 * - a node's containerd and kubelet restarted (same containers), then the node rebooted (its
 *   daemons back, the same OSD, HEALTH_OK, every file read back);
 * - a fourth host added (its OSD takes data, nothing else rolls) and removed through the
 *   program's removal path: drained, purged, zapped, unlabelled, every file read back.
 * Run: node --import tsx --test test/nodes/cephfs.test.ts (root; builds or reuses the tools).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { planYaml, PlanRun } from "../helpers/plan";
import { cephNames } from "../../components/naming";
import { cephRollSteps } from "../../components/cephfs/gates";
import { NodesCluster, registry, startCluster, waitFor } from "./cluster";
import { CephStorage, workloadOf } from "./cephStorage";
import { PlanApplier } from "./apply";
import { Change } from "../../tools/plan/diff";
import { documentedCephImagePrograms } from "../helpers/cephImage";

/** The storage's three hosts; zn4 joins it and leaves it again in the last test. */
const HOSTS = ["zn1", "zn2", "zn3"];
const NODES = [...HOSTS, "zn4"];
const FS = "nodes-fs";
const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";
const names = cephNames(FS);
/** ceph-csi's workloads: their images (quay.io/cephcsi/cephcsi, the CSI sidecars) cannot be built here. */
const CEPH_CSI = new Set(["ceph-csi-cephfs-nodeplugin", "ceph-csi-cephfs-provisioner"]);

let cluster: NodesCluster;
let cephfs: CephStorage;
let plan: PlanRun;
let applier: PlanApplier;
const devices: Record<string, string[]> = {};
/** The plan the cluster runs once the roll is done, and how many files the writer wrote then. */
let current: PlanRun | undefined;
let rollFiles = 0;
/** Set once the storage is up: the later tests need it. */
let applied = false;
const loops: string[] = [];

const nodeAddress = (node: string) => `10.250.0.${11 + NODES.indexOf(node)}`;
/** The storage's hosts and their devices: `devices` without the nodes not named. */
const hostDevices = (hosts: string[]) => Object.fromEntries(hosts.map((h) => [h, devices[h]]));

function stackYaml(hosts: Record<string, string[]>, imageRegistry: string): string {
    return yaml.dump({
        config: {
            "kubernetes:context": CONTEXT,
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:nodes-tier" } },
            "zcloud-storage:nodes": Object.fromEntries(Object.keys(hosts).map((n) => [n, { address: nodeAddress(n) }])),
            "zcloud-storage:imageRegistry": imageRegistry,
            // AES-256 for the CSI user: HEALTH_OK on Ceph 20 (docs/cephfs.md)
            "zcloud-storage:cephfs": [{ name: FS, hosts, csiKey: "aes256" }],
            // rule files and scrape configs in ConfigMaps: the cluster has no Prometheus Operator
            "zcloud-storage:monitoring": { prometheusOperator: false },
        },
    });
}

before(async () => {
    cluster = startCluster(NODES, "zcloud-nodes-cephfs-");
    cephfs = new CephStorage(cluster, { storage: FS, namespace: NS, adminNode: "zn1", image: `${registry}/ceph/ceph:v20.2.4`, notRunning: CEPH_CSI });
    for (const node of NODES) {
        const file = path.join(cluster.dir, `${node}-osd.img`);
        fs.writeFileSync(file, "");
        fs.truncateSync(file, 3072 * 1024 * 1024);
        const loop = execFileSync("losetup", ["--find", "--show", file], { encoding: "utf8" }).trim();
        loops.push(loop);
        devices[node] = [loop];
    }
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" udev "${cluster.dir}"`);
    plan = await planYaml(stackYaml(hostDevices(HOSTS), `${registry}/debian-uid`));
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
});

after(() => {
    if (cluster) cluster.stop();
    for (const loop of loops) execFileSync("losetup", ["-d", loop]);
});

test("the planned storage applied in the plan's order comes up as pods on three real nodes", async () => {
    applier = new PlanApplier(cluster, {
        context: CONTEXT,
        nodeByAddress: Object.fromEntries(NODES.map((n) => [nodeAddress(n), n])),
        notAwaited: CEPH_CSI,
        // the tier's OSDs are loop devices, which node scripts take only when the node says so
        nodeEnv: { ZCLOUD_ALLOW_LOOP: "1" },
        timeoutS: 420,
        log: (line) => console.log(`# ${line.slice(0, 300)}`),
    });
    const began = Date.now();
    const resources = await applier.apply(plan);
    const seconds = (Date.now() - began) / 1000;
    console.log(`# applied ${resources.length} resources in ${seconds.toFixed(1)} s`);
    for (const a of resources.filter((x) => /Deployment|Job|DaemonSet|command:local/.test(x.type)).sort((x, y) => x.done - y.done)) {
        console.log(`#   ${a.done.toFixed(1).padStart(6)} s  ${a.name} (${(a.done - a.started).toFixed(1)} s)`);
    }
    const pods = cluster.json(`get pods -n ${NS}`).items as any[];
    const notUp = pods.filter((p) => !(p.status.phase === "Succeeded" || (p.status.phase === "Running" && p.status.containerStatuses?.every((c: any) => c.ready))));
    assert.deepEqual([...new Set(notUp.map(workloadOf))].sort(), [...CEPH_CSI].sort(), "the pods not Running/Succeeded are exactly ceph-csi's");
    for (const p of notUp) {
        const reasons = (p.status.containerStatuses ?? []).map((c: any) => c.state?.waiting?.reason).filter(Boolean);
        assert.ok(reasons.length > 0 && reasons.every((r: string) => /ImagePull|ErrImagePull/.test(r)), `${p.metadata.name}: ${JSON.stringify(reasons)}`);
    }
    const up = new Set(pods.filter((p) => !notUp.includes(p)).map(workloadOf));
    for (const workload of [
        names.mon("a"),
        names.mon("b"),
        names.mon("c"),
        names.mgr("a"),
        names.mgr("b"),
        names.mds("a"),
        names.mds("b"),
        names.admin,
        names.filesystem,
        ...HOSTS.map((n) => names.osd(n, devices[n][0])),
        ...HOSTS.map((n) => names.osdPrepare(n, devices[n][0])),
    ]) {
        assert.ok(up.has(workload), `${workload} has no Running/Succeeded pod: ${[...up].join(", ")}`);
    }
    applied = true;
});

test("the monmap names the mon Services' ClusterIPs and the cluster is HEALTH_OK", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const services = Object.fromEntries(
        ["a", "b", "c"].map((id) => [id, cluster.sh(`kubectl -n ${NS} get service ${names.mon(id)} -o jsonpath='{.spec.clusterIP}'`).trim()]),
    );
    const monmap = JSON.parse(cephfs.ceph("mon dump -f json"));
    const addrs = Object.fromEntries(monmap.mons.map((m: any) => [m.name, m.public_addrs.addrvec.map((a: any) => a.addr.split(":")[0])]));
    for (const [id, ip] of Object.entries(services)) {
        assert.ok(addrs[id]?.every((a: string) => a === ip), `mon ${id}: ${JSON.stringify(addrs[id])} vs Service ${ip}`);
    }
    const health = await cephfs.healthOk("the new storage");
    assert.equal(health.osdmap.num_up_osds, 3);
    assert.equal(health.osdmap.num_in_osds, 3);
    assert.equal(health.fsmap.up, 1);
});

test("monitoring on: the active manager serves the cluster's metrics on 9283, both managers behind the storage's metrics Service there; the standby's answer recorded", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const pods = cluster.json(`get pods -n ${NS} -l app.kubernetes.io/component=ceph-mgr`).items as any[];
    assert.equal(pods.length, 2);
    const admin = cephfs.adminPod();
    const get = (ip: string) =>
        cluster.sh(
            `kubectl -n ${NS} exec ${admin} -- python3 -c 'import sys, urllib.request\ntry:\n r = urllib.request.urlopen("http://%s:9283/metrics" % sys.argv[1], timeout=10); b = r.read().decode(); print(r.status, len(b), "ceph_health_status" in b)\nexcept Exception as e:\n print("error", type(e).__name__, e)' ${ip}`,
        ).trim();
    const byId = Object.fromEntries(pods.map((p) => [p.metadata.labels["storage.zcloud.io/ceph-mgr"], p.status.podIP]));
    const answers = await waitFor("the active manager serving its metrics on 9283", 120_000, () => {
        const active = JSON.parse(cephfs.ceph("mgr stat -f json")).active_name as string;
        const standby = Object.keys(byId).find((id) => id !== active)!;
        const a = get(byId[active]);
        if (!/^200 \d+ True$/.test(a)) throw new Error(`active ${active}: ${a}`);
        return { active, standby, a, b: get(byId[standby]) };
    });
    // Ceph's StandbyModule answers an empty 200 on a standby; the ceph-mgr of the image built here
    // (Debian's 20.2.4 on Python 3.14) does not start it (test/nodes/README.md), so that one is printed.
    console.log(`# mgr ${answers.active} (active): ${answers.a}; mgr ${answers.standby} (standby): ${answers.b}`);
    // the storage's metrics Service (what the scrape configs name) has both managers behind it on that port
    const slices = cluster.json(`get endpointslices -n ${NS} -l kubernetes.io/service-name=${names.metrics}`).items as any[];
    const endpoints = slices.flatMap((e) => e.endpoints.flatMap((x: any) => x.addresses.map((ip: string) => `${ip}:${e.ports[0].port}`)));
    assert.deepEqual(endpoints.sort(), Object.values(byId).map((ip) => `${ip}:9283`).sort());
});

test("the Ceph image the pods run holds every program docs/cephfs.md says an image must hold", () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const programs = documentedCephImagePrograms();
    const pod = cephfs.adminPod();
    const missing = cluster.sh(`kubectl -n ${NS} exec ${pod} -- sh -c 'for p; do command -v "$p" >/dev/null 2>&1 || echo "$p"; done' sh ${programs.join(" ")}`).trim();
    assert.equal(missing, "", `missing in the image: ${missing}`);
    assert.ok(programs.length > 30, programs.join(" "));
});

test("a client pod mounts the filesystem with ceph-fuse, writes checksummed files and reads them back", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const logs = await cephfs.runClient("cephfs-client", "zn2", [
        "mkdir -p /mnt/fs/check",
        "for i in $(seq 1 20); do head -c 1048576 /dev/urandom > /mnt/fs/check/f$i; done",
        "(cd /mnt/fs/check && sha256sum f* > /tmp/written.sum)",
        "sync",
        "unmount_fs",
        "mount_fs",
        "(cd /mnt/fs/check && sha256sum -c /tmp/written.sum) | tail -n 3",
        "echo files: $(ls /mnt/fs/check | wc -l)",
    ]);
    console.log(logs.split("\n").filter((l) => !/^20\d\d-/.test(l)).map((l) => `# ${l}`).join("\n"));
    assert.match(logs, /f9: OK/);
    assert.match(logs, /^files: 20$/m);
    assert.doesNotMatch(logs, /FAILED/);
    // both mounts closed their sessions: the MDS holds none of this client's
    const sessions = JSON.parse(cephfs.ceph(`tell mds.${FS}:0 session ls -f json`)) as any[];
    assert.deepEqual(sessions.filter((x) => x.client_metadata?.hostname === "cephfs-client").map((x) => `${x.id} ${x.state}`), []);
});

test("every daemon rolls to quay.io's uid for the ceph user through the gates, as pods, under a client's writes: the mon stores handed over, no client evicted, nothing lost", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    // The same Ceph build as quay.io's image, its ceph user uid 167 where the running one's is
    // Debian's 64045: every daemon's image changes, and the mon stores change hands.
    const rolled = await planYaml(stackYaml(hostDevices(HOSTS), registry));
    assert.equal(rolled.error, undefined, JSON.stringify(rolled.error));
    cephfs.startClient("cephfs-writer", "zn3", [
        "mkdir -p /mnt/fs/roll",
        "i=0",
        "while [ ! -e /mnt/fs/roll/stop ]; do",
        "  i=$((i + 1))",
        "  head -c 65536 /dev/urandom > /mnt/fs/roll/w$i",
        "  (cd /mnt/fs/roll && sha256sum w$i >> sums)",
        "  echo wrote $i $(date +%s.%N)",
        "  sleep 0.2",
        "done",
    ]);
    await waitFor("the writer writing", 120_000, () => (/^wrote 3 /m.test(cluster.sh(`kubectl -n ${NS} logs cephfs-writer`)) ? true : undefined));
    const began = Date.now();
    const { applied: steps, changes } = await applier.update(plan, rolled);
    console.log(`# the roll: ${changes.length} changes applied in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    for (const a of steps.filter((x) => /Deployment|DaemonSet|Job|command:local/.test(x.type)).sort((x, y) => x.done - y.done)) {
        console.log(`#   ${a.done.toFixed(1).padStart(6)} s  ${a.name} (${(a.done - a.started).toFixed(1)} s)`);
    }
    // one daemon (or one host's OSDs) at a time, in the program's order (cephRollSteps): each
    // restart (its Deployment updated and rolled out) and each gate starts only once the step
    // before it has ended
    const rollSteps = cephRollSteps({ storage: FS, fsid: "", hosts: hostDevices(HOSTS), timeoutSeconds: 600 });
    let stepEnded = 0;
    for (const step of rollSteps) {
        const members = (step.kind === "gate" ? [step.name] : step.workloads).map((n) => steps.find((a) => a.name === n && !a.deleted));
        for (const [k, a] of members.entries()) {
            assert.ok(a, `${step.kind === "gate" ? step.name : step.workloads[k]} not applied in the roll`);
            assert.ok(a.started >= stepEnded, `${a.name} started at ${a.started.toFixed(1)} s, before the step before it ended (${stepEnded.toFixed(1)} s)`);
        }
        stepEnded = Math.max(...members.map((a) => a!.done));
    }
    // every daemon Deployment runs the new image now, each with one Ready pod
    const deployments = cluster.json(`get deployments -n ${NS} -l storage.zcloud.io/storage=${FS}`).items as any[];
    assert.ok(deployments.length >= 10, `${deployments.length} daemon Deployments`);
    for (const d of deployments) {
        assert.equal(d.spec.template.spec.containers[0].image, `${registry}/ceph/ceph:v20.2.4`, d.metadata.name);
        assert.equal(d.status.readyReplicas, 1, d.metadata.name);
    }
    // each mon's store, written by the ceph user of uid 64045, handed to the new image's (167)
    for (const id of ["a", "b", "c"]) {
        const init = cluster.sh(`kubectl -n ${NS} logs deploy/${names.mon(id)} -c mon-init`);
        assert.match(init, new RegExp(`^zcloud: mon\\.${id}: store at /var/lib/ceph/mon/ceph-${id} was owned by 64045:64045, not by this image's ceph user \\(167:167\\): handed to it$`, "m"), init);
    }
    cluster.sh(`kubectl -n ${NS} exec cephfs-writer -- touch /mnt/fs/roll/stop`);
    await waitFor("the writer stopped", 120_000, () => (cluster.json(`get pod cephfs-writer -n ${NS}`).status.phase === "Succeeded" ? true : undefined));
    const writes = [...cluster.sh(`kubectl -n ${NS} logs cephfs-writer`).matchAll(/^wrote (\d+) ([\d.]+)$/gm)].map((m) => ({ n: Number(m[1]), at: Number(m[2]) }));
    const stall = Math.max(...writes.slice(1).map((w, k) => w.at - writes[k].at));
    console.log(`# the writer: ${writes.length} files during the roll, longest stall ${stall.toFixed(1)} s`);
    // every client reconnected to the mds that took over: none left a session behind that the new
    // active had to wait out (mds_reconnect_timeout, 45 s) and evict
    const evicted = cephfs.ceph("log last 10000 warn cluster").split("\n").filter((l) => /evicting unresponsive client/.test(l));
    assert.deepEqual(evicted, []);
    assert.deepEqual(await cephfs.readBack("cephfs-reader", "zn1", "roll"), { ok: writes.length, listed: writes.length });
    current = rolled;
    rollFiles = writes.length;
});

test("a Ceph node's containerd and kubelet restarted keep its daemons running; the node rebooted runs them again, its OSD with its data", async () => {
    assert.ok(current, "the roll did not complete");
    const script = path.join(__dirname, "cluster.sh");
    const before = cephfs.runningOn("zn2");
    const osd = names.osd("zn2", devices.zn2[0]);
    assert.ok(Object.keys(before).some((n) => n.startsWith(`${osd}-`)), `no OSD pod on zn2: ${Object.keys(before).join(", ")}`);
    const osds = cephfs.hostOsds("zn2");
    assert.equal(osds.length, 1, JSON.stringify(osds));
    cluster.sh(`bash "${script}" restart "${cluster.dir}" zn2 containerd`);
    const restartedAt = Date.now();
    cluster.sh(`bash "${script}" restart "${cluster.dir}" zn2 kubelet`);
    await waitFor("zn2's node lease renewed by the new kubelet", 60_000, () => {
        const lease = cluster.json("get lease zn2 -n kube-node-lease");
        return Date.parse(lease.spec.renewTime) > restartedAt ? true : undefined;
    });
    const restarted = await waitFor("zn2's pods Ready after the restarts", 60_000, () => {
        const now = cephfs.runningOn("zn2");
        return Object.values(now).every((p) => p.ready) ? now : undefined;
    });
    // the same containers: none was restarted or made again
    assert.deepEqual(restarted, before);

    const began = Date.now();
    cluster.sh(`bash "${script}" reboot "${cluster.dir}" zn2`);
    await waitFor("zn2's pods running again after the reboot, in new containers", 300_000, () => {
        const now = cephfs.runningOn("zn2");
        const back = Object.keys(before).every((n) => now[n]?.ready && now[n].containers !== before[n].containers);
        return back ? true : undefined;
    });
    const podsBack = (Date.now() - began) / 1000;
    // The mons learn of the killed OSD only from its peers or from its new instance's boot: until
    // then the map still says the old one is up (and HEALTH_OK), so wait for the new boot's epoch.
    const rebooted = await waitFor("zn2's OSD booted again after the reboot (up, in, a later up_from)", 300_000, () => {
        const now = cephfs.hostOsds("zn2");
        return now.every((o, i) => o.up && o.in && o.upFrom > osds[i].upFrom) ? now : undefined;
    });
    const osdBack = (Date.now() - began) / 1000;
    await cephfs.healthOk("zn2 rebooted", 300_000);
    console.log(`# zn2 rebooted: its ${Object.keys(before).length} pods Ready again in ${podsBack.toFixed(1)} s, its OSD booted again in ${osdBack.toFixed(1)} s, HEALTH_OK after ${((Date.now() - began) / 1000).toFixed(1)} s`);
    // the same OSD (its bluestore's uuid) up and in: its data kept, not made again
    assert.deepEqual(
        rebooted.map(({ upFrom: _, ...o }) => o),
        osds.map(({ upFrom: _, ...o }) => ({ ...o, up: true, in: true })),
    );
    assert.deepEqual(await cephfs.readBack("cephfs-reader-reboot", "zn1", "roll"), { ok: rollFiles, listed: rollFiles });
});

test("a fourth host joins the storage and takes data; removed again, its OSD is drained, purged and its disk zapped: nothing lost", async () => {
    assert.ok(current, "the roll did not complete");
    const grown = await planYaml(stackYaml(hostDevices(NODES), registry));
    assert.equal(grown.error, undefined, JSON.stringify(grown.error));
    const summary = (changes: Change[]) => changes.map((c) => `${c.kind} ${c.resource.name}`).sort();

    let began = Date.now();
    const joined = await applier.update(current, grown);
    console.log(`# zn4 joined: ${joined.changes.length} changes in ${((Date.now() - began) / 1000).toFixed(1)} s: ${summary(joined.changes).join(", ")}`);
    // adding a host rolls nothing: no daemon of the other hosts is updated or replaced
    const touched = joined.changes.filter((c) => c.kind !== "create" && /Deployment|DaemonSet/.test(c.resource.type));
    assert.deepEqual(summary(touched), []);
    const added = cephfs.hostOsds("zn4");
    assert.equal(added.length, 1, JSON.stringify(added));
    assert.ok(added[0].up && added[0].in, JSON.stringify(added));
    await cephfs.healthOk("zn4 joined", 300_000);
    const used = JSON.parse(cephfs.ceph("osd df -f json")).nodes.find((n: any) => n.id === added[0].id);
    console.log(`# osd.${added[0].id} on zn4: ${used.pgs} placement groups, ${(used.kb_used_data / 1024).toFixed(1)} MiB of data`);
    assert.ok(used.pgs > 0, `osd.${added[0].id} holds no placement group`);

    began = Date.now();
    const left = await applier.update(grown, current);
    console.log(`# zn4 removed: ${left.changes.length} changes in ${((Date.now() - began) / 1000).toFixed(1)} s: ${summary(left.changes).join(", ")}`);
    for (const a of left.applied.filter((x) => x.deleted).sort((x, y) => x.done - y.done)) {
        console.log(`#   ${a.done.toFixed(1).padStart(6)} s  deleted ${a.name} (${(a.done - a.started).toFixed(1)} s)`);
    }
    const gone = left.changes.filter((c) => c.kind === "delete").map((c) => c.resource.name);
    assert.ok(gone.includes(`${FS}-zn4-label`), gone.join(", "));
    assert.deepEqual(cephfs.hostOsds("zn4"), []);
    assert.ok(!JSON.parse(cephfs.ceph("osd ls -f json")).includes(added[0].id), `osd.${added[0].id} still in the osdmap`);
    // zapped: no bluestore label left at the start of zn4's device
    const head = fs.readFileSync(devices.zn4[0]).subarray(0, 4096);
    assert.ok(!head.toString("latin1").includes("bluestore"), `zn4's device still starts with a bluestore label`);
    const labels = cluster.json("get node zn4").metadata.labels ?? {};
    assert.equal(labels["storage.zcloud.io/cephfs"], undefined, JSON.stringify(labels));
    await waitFor("no pod of the storage left on zn4", 120_000, () => (Object.keys(cephfs.runningOn("zn4")).length === 0 ? true : undefined));
    await cephfs.healthOk("zn4 removed", 300_000);
    assert.deepEqual(await cephfs.readBack("cephfs-reader-shrunk", "zn1", "roll"), { ok: rollFiles, listed: rollFiles });
});
