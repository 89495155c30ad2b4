/**
 * Nodes tier, CephFS as pods: a three-host CephFS storage planned by the program and applied as
 * `pulumi up` applies it (apply.ts) to three real nodes (cluster.sh), one loop device per node,
 * images from the local registry through the stack's `imageRegistry`. Every workload the program
 * renders becomes real pods: the mons, managers, OSD prepare Jobs, OSDs, mds, the admin DaemonSet
 * and the filesystem Job Running or Succeeded, each gate passing against them; only ceph-csi's
 * pods cannot start (their images cannot be built here), and exactly those. Then the cluster as
 * the pods made it: the monmap names the mon Services' ClusterIPs, `ceph -s` is HEALTH_OK, and a
 * client pod mounts the filesystem with ceph-fuse as the CSI user (in its subvolume group, the
 * only path that user may write), writes checksummed files and reads them back.
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
import { NodesCluster, registry, startCluster, waitFor } from "./cluster";
import { PlanApplier } from "./apply";

const NODES = ["zn1", "zn2", "zn3"];
const FS = "nodes-fs";
const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";
const names = cephNames(FS);
/** ceph-csi's workloads: their images (quay.io/cephcsi/cephcsi, the CSI sidecars) cannot be built here. */
const CEPH_CSI = new Set(["ceph-csi-cephfs-nodeplugin", "ceph-csi-cephfs-provisioner"]);

let cluster: NodesCluster;
let plan: PlanRun;
let applier: PlanApplier;
const devices: Record<string, string[]> = {};
/** Set once the storage is up: the later tests need it. */
let applied = false;
const loops: string[] = [];

function stackYaml(devices: Record<string, string[]>, imageRegistry: string): string {
    return yaml.dump({
        config: {
            "kubernetes:context": CONTEXT,
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:nodes-tier" } },
            "zcloud-storage:nodes": Object.fromEntries(NODES.map((n, i) => [n, { address: `10.250.0.${11 + i}` }])),
            "zcloud-storage:imageRegistry": imageRegistry,
            // AES-256 for the CSI user: HEALTH_OK on Ceph 20 (docs/cephfs.md)
            "zcloud-storage:cephfs": [{ name: FS, hosts: devices, csiKey: "aes256" }],
        },
    });
}

/** `ceph <args>` in the storage's admin pod on zn1 (as status and the gates reach the cluster). */
function ceph(args: string): string {
    const pod = cluster.sh(`kubectl -n ${NS} get pods -l app.kubernetes.io/component=ceph-admin --field-selector spec.nodeName=zn1 -o jsonpath='{.items[0].metadata.name}'`).trim();
    // client.admin with the key file the Secret mounts, as the storage's scripts call ceph there
    return cluster.sh(`kubectl -n ${NS} exec ${pod} -- sh -c 'exec ceph --name client.admin --keyfile "$ZCLOUD_CEPH_KEYS/admin" "$@"' ceph ${args}`, 120_000);
}

before(async () => {
    cluster = startCluster(NODES, "zcloud-nodes-cephfs-");
    for (const node of NODES) {
        const file = path.join(cluster.dir, `${node}-osd.img`);
        fs.writeFileSync(file, "");
        fs.truncateSync(file, 3072 * 1024 * 1024);
        const loop = execFileSync("losetup", ["--find", "--show", file], { encoding: "utf8" }).trim();
        loops.push(loop);
        devices[node] = [loop];
    }
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" udev "${cluster.dir}"`);
    plan = await planYaml(stackYaml(devices, `${registry}/debian-uid`));
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
});

after(() => {
    if (cluster) cluster.stop();
    for (const loop of loops) execFileSync("losetup", ["-d", loop]);
});

test("the planned storage applied in the plan's order comes up as pods on three real nodes", async () => {
    applier = new PlanApplier(cluster, {
        context: CONTEXT,
        nodeByAddress: Object.fromEntries(NODES.map((n, i) => [`10.250.0.${11 + i}`, n])),
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
    const owner = (p: any): string => {
        const ref = p.metadata.ownerReferences?.[0];
        return ref?.kind === "ReplicaSet" ? ref.name.replace(/-[a-z0-9]+$/, "") : (ref?.name ?? p.metadata.name);
    };
    const notUp = pods.filter((p) => !(p.status.phase === "Succeeded" || (p.status.phase === "Running" && p.status.containerStatuses?.every((c: any) => c.ready))));
    assert.deepEqual([...new Set(notUp.map(owner))].sort(), [...CEPH_CSI].sort(), "the pods not Running/Succeeded are exactly ceph-csi's");
    for (const p of notUp) {
        const reasons = (p.status.containerStatuses ?? []).map((c: any) => c.state?.waiting?.reason).filter(Boolean);
        assert.ok(reasons.length > 0 && reasons.every((r: string) => /ImagePull|ErrImagePull/.test(r)), `${p.metadata.name}: ${JSON.stringify(reasons)}`);
    }
    const up = new Set(pods.filter((p) => !notUp.includes(p)).map(owner));
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
        ...NODES.map((n, i) => names.osd(n, loops[i])),
        ...NODES.map((n, i) => names.osdPrepare(n, loops[i])),
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
    const monmap = JSON.parse(ceph("mon dump -f json"));
    const addrs = Object.fromEntries(monmap.mons.map((m: any) => [m.name, m.public_addrs.addrvec.map((a: any) => a.addr.split(":")[0])]));
    for (const [id, ip] of Object.entries(services)) {
        assert.ok(addrs[id]?.every((a: string) => a === ip), `mon ${id}: ${JSON.stringify(addrs[id])} vs Service ${ip}`);
    }
    // The mons' stores sit on this machine's one disk: below Ceph's mon_data_avail_warn (30 % free)
    // MON_DISK_LOW is the truth about that disk, the only check then allowed.
    const disk = fs.statfsSync(cluster.dir);
    const freePercent = (disk.bavail / disk.blocks) * 100;
    const allowed = freePercent < 30 ? ["MON_DISK_LOW"] : [];
    console.log(`# this machine's disk: ${freePercent.toFixed(1)} % free; checks allowed besides HEALTH_OK: ${allowed.join(", ") || "none"}`);
    const health = await waitFor("HEALTH_OK", 180_000, () => {
        const s = JSON.parse(ceph("status -f json"));
        const checks = Object.keys(s.health.checks ?? {});
        if (s.health.status !== "HEALTH_OK" && !(checks.length > 0 && checks.every((c) => allowed.includes(c)))) {
            throw new Error(`${s.health.status}: ${Object.entries(s.health.checks ?? {}).map(([k, v]: [string, any]) => `${k} ${v.summary?.message}`).join("; ")}`);
        }
        return s;
    });
    assert.equal(health.osdmap.num_up_osds, 3);
    assert.equal(health.osdmap.num_in_osds, 3);
    assert.equal(health.fsmap.up, 1);
});

/**
 * A pod of the Ceph image on `node` that mounts the filesystem with ceph-fuse as the CSI user, in
 * its subvolume group (the only path that user may write), at /mnt/fs, runs `script`, unmounts.
 */
function cephClientPod(name: string, node: string, script: string[]): object {
    const mount = `ceph-fuse -c /etc/ceph/ceph.conf -n client.csi -k /tmp/keyring --client_fs ${FS} -r /volumes/csi /mnt/fs`;
    return {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: NS },
        spec: {
            nodeName: node,
            restartPolicy: "Never",
            containers: [
                {
                    name: "client",
                    image: `${registry}/ceph/ceph:v20.2.4`,
                    securityContext: { privileged: true },
                    env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: names.csiSecret, key: "userKey" } } }],
                    command: [
                        "bash",
                        "-c",
                        ["set -eu", 'printf "[client.csi]\\n\\tkey = %s\\n" "$KEY" > /tmp/keyring', "mkdir -p /mnt/fs", `mount_fs() { ${mount}; }`, "mount_fs", ...script, "umount /mnt/fs"].join("\n"),
                    ],
                    volumeMounts: [
                        { name: "conf", mountPath: "/etc/ceph" },
                        { name: "fuse", mountPath: "/dev/fuse" },
                    ],
                },
            ],
            volumes: [
                { name: "conf", configMap: { name: names.conf } },
                { name: "fuse", hostPath: { path: "/dev/fuse", type: "CharDevice" } },
            ],
        },
    };
}

/** Runs a client pod to its end; returns its log (the pod must succeed). */
async function runClient(name: string, node: string, script: string[], timeoutMs = 240_000): Promise<string> {
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify(cephClientPod(name, node, script))}\nEOF`);
    const phase = await waitFor(`the client pod ${name} finished`, timeoutMs, () => {
        const p = cluster.json(`get pod ${name} -n ${NS}`).status.phase;
        return p === "Succeeded" || p === "Failed" ? p : undefined;
    });
    const logs = cluster.sh(`kubectl -n ${NS} logs ${name}`);
    assert.equal(phase, "Succeeded", logs);
    return logs;
}

test("a client pod mounts the filesystem with ceph-fuse, writes checksummed files and reads them back", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const logs = await runClient("cephfs-client", "zn2", [
        "mkdir -p /mnt/fs/check",
        "for i in $(seq 1 20); do head -c 1048576 /dev/urandom > /mnt/fs/check/f$i; done",
        "(cd /mnt/fs/check && sha256sum f* > /tmp/written.sum)",
        "sync",
        "umount /mnt/fs",
        "mount_fs",
        "(cd /mnt/fs/check && sha256sum -c /tmp/written.sum) | tail -n 3",
        "echo files: $(ls /mnt/fs/check | wc -l)",
    ]);
    console.log(logs.split("\n").filter((l) => !/^20\d\d-/.test(l)).map((l) => `# ${l}`).join("\n"));
    assert.match(logs, /f9: OK/);
    assert.match(logs, /^files: 20$/m);
    assert.doesNotMatch(logs, /FAILED/);
});

test("every daemon rolls to a new image through the gates, as pods, under a client's writes: nothing lost", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    // the same image under another path of the registry: every daemon's image reference changes
    cluster.sh(`crane copy --insecure ${registry}/debian-uid/ceph/ceph:v20.2.4 ${registry}/debian-rolled/ceph/ceph:v20.2.4 2>/dev/null`);
    const rolled = await planYaml(stackYaml(devices, `${registry}/debian-rolled`));
    assert.equal(rolled.error, undefined, JSON.stringify(rolled.error));
    const writer = cephClientPod("cephfs-writer", "zn3", [
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
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify(writer)}\nEOF`);
    await waitFor("the writer writing", 120_000, () => (/^wrote 3 /m.test(cluster.sh(`kubectl -n ${NS} logs cephfs-writer`)) ? true : undefined));
    const began = Date.now();
    const { applied: steps, changes } = await applier.update(plan, rolled);
    console.log(`# the roll: ${changes.length} changes applied in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    for (const a of steps.filter((x) => /Deployment|DaemonSet|Job|command:local/.test(x.type)).sort((x, y) => x.done - y.done)) {
        console.log(`#   ${a.done.toFixed(1).padStart(6)} s  ${a.name} (${(a.done - a.started).toFixed(1)} s)`);
    }
    // every daemon Deployment runs the new image now, each with one Ready pod
    const deployments = cluster.json(`get deployments -n ${NS} -l storage.zcloud.io/storage=${FS}`).items as any[];
    assert.ok(deployments.length >= 10, `${deployments.length} daemon Deployments`);
    for (const d of deployments) {
        assert.match(d.spec.template.spec.containers[0].image, /\/debian-rolled\/ceph\/ceph:v20\.2\.4$/, d.metadata.name);
        assert.equal(d.status.readyReplicas, 1, d.metadata.name);
    }
    cluster.sh(`kubectl -n ${NS} exec cephfs-writer -- touch /mnt/fs/roll/stop`);
    await waitFor("the writer stopped", 120_000, () => (cluster.json(`get pod cephfs-writer -n ${NS}`).status.phase === "Succeeded" ? true : undefined));
    const writes = [...cluster.sh(`kubectl -n ${NS} logs cephfs-writer`).matchAll(/^wrote (\d+) ([\d.]+)$/gm)].map((m) => ({ n: Number(m[1]), at: Number(m[2]) }));
    const stall = Math.max(...writes.slice(1).map((w, k) => w.at - writes[k].at));
    console.log(`# the writer: ${writes.length} files during the roll, longest stall ${stall.toFixed(1)} s`);
    const check = await runClient("cephfs-reader", "zn1", ["cd /mnt/fs/roll", "echo checked: $(sha256sum -c sums | grep -c ': OK$') of $(wc -l < sums)", "cd /"]);
    const m = /^checked: (\d+) of (\d+)$/m.exec(check);
    assert.ok(m, check);
    assert.equal(Number(m[1]), writes.length, check);
    assert.equal(Number(m[2]), writes.length, check);
});
