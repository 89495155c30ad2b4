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
    const devices: Record<string, string[]> = {};
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
    const applier = new PlanApplier(cluster, {
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
    const health = await waitFor("HEALTH_OK", 180_000, () => {
        const s = JSON.parse(ceph("status -f json"));
        if (s.health.status !== "HEALTH_OK") {
            throw new Error(`${s.health.status}: ${Object.entries(s.health.checks ?? {}).map(([k, v]: [string, any]) => `${k} ${v.summary?.message}`).join("; ")}`);
        }
        return s;
    });
    assert.equal(health.osdmap.num_up_osds, 3);
    assert.equal(health.osdmap.num_in_osds, 3);
    assert.equal(health.fsmap.up, 1);
});

test("a client pod mounts the filesystem with ceph-fuse, writes checksummed files and reads them back", async () => {
    assert.ok(applied, "the storage was not applied (the first test failed)");
    const client = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "cephfs-client", namespace: NS },
        spec: {
            nodeName: "zn2",
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
                        [
                            "set -eu",
                            'printf "[client.csi]\\n\\tkey = %s\\n" "$KEY" > /tmp/keyring',
                            "mkdir -p /mnt/fs",
                            `ceph-fuse -c /etc/ceph/ceph.conf -n client.csi -k /tmp/keyring --client_fs ${FS} -r /volumes/csi /mnt/fs`,
                            "mkdir -p /mnt/fs/check",
                            "for i in $(seq 1 20); do head -c 1048576 /dev/urandom > /mnt/fs/check/f$i; done",
                            "(cd /mnt/fs/check && sha256sum f* > /tmp/written.sum)",
                            "sync",
                            "umount /mnt/fs",
                            `ceph-fuse -c /etc/ceph/ceph.conf -n client.csi -k /tmp/keyring --client_fs ${FS} -r /volumes/csi /mnt/fs`,
                            "(cd /mnt/fs/check && sha256sum -c /tmp/written.sum) | tail -n 3",
                            "echo files: $(ls /mnt/fs/check | wc -l)",
                            "umount /mnt/fs",
                        ].join("\n"),
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
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify(client)}\nEOF`);
    const phase = await waitFor("the client pod finished", 240_000, () => {
        const p = cluster.json(`get pod cephfs-client -n ${NS}`).status.phase;
        return p === "Succeeded" || p === "Failed" ? p : undefined;
    });
    const logs = cluster.sh(`kubectl -n ${NS} logs cephfs-client`);
    console.log(logs.split("\n").map((l) => `# ${l}`).join("\n"));
    assert.equal(phase, "Succeeded", logs);
    assert.match(logs, /f9: OK/);
    assert.match(logs, /^files: 20$/m);
    assert.doesNotMatch(logs, /FAILED/);
});
