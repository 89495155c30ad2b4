import { test } from "node:test";
import * as assert from "node:assert/strict";
import { StackModel } from "../../components/config/model";
import { cephNames } from "../../components/cephfs/cluster";
import { NodeReport } from "../../tools/discover/inventory";
import { CephHealth, ClusterFacts, ClusterPod, clusterFacts, parseCephStatus } from "../../tools/status/cluster";
import { StatusFacts, evaluateStatus, exitCodeOf, problemLine } from "../../tools/status/evaluate";
import { renderStatus } from "../../tools/status/render";

const model: StackModel = {
    namespace: "zcloud-storage",
    ssh: { user: "root", port: 22, privateKey: "offline", hostKeys: {} },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
    lvm: [{ name: "fast", default: true, wipe: false, thin: { overprovisionRatio: 4, poolPercent: 90, snapshots: false }, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/sdb", "/dev/sdc"] } }],
    cephfs: [{ name: "shared", default: false, wipe: false, replicas: 1, hosts: { node3: ["/dev/sdb"] } }],
    iscsi: [],
    nfs: [{ name: "nfs", default: false, server: "10.0.0.60", path: "/k8s", onDelete: "delete", mountOptions: [] }],
};

const pod = (name: string, node: string | undefined, labels: Record<string, string>, ready = true): ClusterPod => ({ name, node, labels, phase: "Running", ready });
const driver = (name: string, component: string) => ({ "app.kubernetes.io/name": name, "app.kubernetes.io/component": component });
const own = (storage: string, component: string) => ({ "storage.zcloud.io/storage": storage, "app.kubernetes.io/component": component });

function healthyCluster(): ClusterFacts {
    return {
        nodes: [
            { name: "node1", labels: { "storage.zcloud.io/lvm": "fast" }, ready: true },
            { name: "node2", labels: { "storage.zcloud.io/lvm": "fast" }, ready: true },
            { name: "node3", labels: { "storage.zcloud.io/cephfs": "shared" }, ready: true },
        ],
        storageClasses: [
            { name: "fast", provisioner: "topolvm.io", isDefault: true },
            { name: "shared", provisioner: "cephfs.csi.ceph.com", isDefault: false },
            { name: "nfs", provisioner: "nfs.csi.k8s.io", isDefault: false },
        ],
        pods: [
            pod("topolvm-controller-a", "node1", driver("topolvm", "controller")),
            pod("topolvm-node-1", "node1", driver("topolvm", "node")),
            pod("topolvm-node-2", "node2", driver("topolvm", "node")),
            pod("lvmd-fast-1", "node1", own("fast", "lvmd")),
            pod("lvmd-fast-2", "node2", own("fast", "lvmd")),
            pod("csi-nfs-controller-a", "node1", driver("csi-driver-nfs", "controller")),
            pod("csi-nfs-node-1", "node1", driver("csi-driver-nfs", "node")),
            pod("ceph-csi-provisioner-a", "node3", driver("ceph-csi-cephfs", "provisioner")),
            pod("ceph-csi-nodeplugin-3", "node3", driver("ceph-csi-cephfs", "nodeplugin")),
            pod("ceph-shared-mon-a-x", "node3", own("shared", "ceph-mon")),
            pod("ceph-shared-osd-x", "node3", { ...own("shared", "ceph-osd"), "storage.zcloud.io/ceph-osd": cephNames("shared").osd("node3", "/dev/sdb") }),
        ],
    };
}

function report(declared: Record<string, string | null>, pvs: Array<[string, string]>, poolPercent?: number): NodeReport {
    return {
        devices: [],
        guards: new Map(),
        stable: new Map(),
        byId: new Map(),
        declared: new Map(Object.entries(declared)),
        pvs: pvs.map(([pv, vg]) => ({ pv, vg, vgSize: 20 * 1024 ** 3, vgFree: 2 * 1024 ** 3, lvCount: 3 })),
        lvs: poolPercent === undefined ? [] : [{ vg: "zcloud-fast", lv: "pool", attr: "twi-a-tz--", dataPercent: poolPercent }],
    };
}

const cephOk: CephHealth = { status: "HEALTH_OK", osds: 1, up: 1, in: 1, bytesUsed: 1024 ** 3, bytesTotal: 10 * 1024 ** 3 };

function facts(over: Partial<StatusFacts> = {}): StatusFacts {
    return {
        model,
        cluster: healthyCluster(),
        nodes: new Map<string, NodeReport | { error: string }>([
            ["node1", report({ "/dev/disk/by-id/wwn-0x1": "/dev/sdb" }, [["/dev/sdb", "zcloud-fast"]], 40)],
            ["node2", report({ "/dev/sdb": "/dev/sdb", "/dev/sdc": "/dev/sdc" }, [["/dev/sdb", "zcloud-fast"], ["/dev/sdc", "zcloud-fast"]], 10)],
            ["node3", report({ "/dev/sdb": "/dev/sdb" }, [])],
        ]),
        ceph: new Map([["shared", cephOk]]),
        ...over,
    };
}

/** Every problem as its one-line text. */
const lines = (f: StatusFacts) => evaluateStatus(f).flatMap((s) => s.problems.map((p) => `${p.kind}: ${problemLine(s.name, p)}`));

test("healthy: no problems, exit 0, VG capacity and thin pool usage per node", () => {
    const result = evaluateStatus(facts());
    assert.deepEqual(lines(facts()), []);
    assert.equal(exitCodeOf(result), 0);
    assert.deepEqual(result.map((s) => [s.name, s.type, s.healthy]), [["fast", "lvm", true], ["shared", "cephfs", true], ["nfs", "nfs", true]]);
    assert.deepEqual(result[0].nodes.node2, {
        ready: true,
        label: true,
        daemonsReady: true,
        devices: { "/dev/sdb": "/dev/sdb", "/dev/sdc": "/dev/sdc" },
        vg: { name: "zcloud-fast", size: 20 * 1024 ** 3, free: 2 * 1024 ** 3, lvCount: 3, thinPoolPercent: 10, devices: ["/dev/sdb", "/dev/sdc"] },
    });
    assert.deepEqual(result[0].storageClass, { present: true, default: true });
    const table = renderStatus(result);
    assert.ok(table.includes("fast (lvm): healthy; StorageClass fast (default)"), table);
    assert.match(table, /node2 +yes +yes +yes +20 GiB +2 GiB +3 +10% +\/dev\/sdb \/dev\/sdc/);
    assert.ok(table.includes("ceph HEALTH_OK, OSDs 1 up / 1 in / 1, used 1 GiB of 10 GiB"), table);
});

test("a node label removed by hand, a PV added outside the config, a daemon not Ready: each with its node, exit 1", () => {
    const cluster = healthyCluster();
    cluster.nodes[0].labels = {};
    cluster.pods.find((p) => p.name === "lvmd-fast-2")!.ready = false;
    const f = facts({ cluster });
    f.nodes.set("node2", report({ "/dev/sdb": "/dev/sdb", "/dev/sdc": "/dev/sdc" }, [["/dev/sdb", "zcloud-fast"], ["/dev/sdc", "zcloud-fast"], ["/dev/sdd", "zcloud-fast"]], 10));
    assert.deepEqual(lines(f), [
        "drift: fast: node1: label storage.zcloud.io/lvm: missing (expected fast)",
        "degraded: fast: node2: pod lvmd-fast-2: lvmd pod is not Ready (phase Running)",
        "drift: fast: node2: /dev/sdd: in VG zcloud-fast but not declared",
    ]);
    assert.equal(exitCodeOf(evaluateStatus(f)), 1);
});

test("drift the other way: declared devices missing or not in the VG, the VG gone, no thin pool", () => {
    const f = facts();
    f.nodes.set("node1", report({ "/dev/disk/by-id/wwn-0x1": null }, []));
    f.nodes.set("node2", report({ "/dev/sdb": "/dev/sdb", "/dev/sdc": "/dev/sdc" }, [["/dev/sdb", "zcloud-fast"]]));
    assert.deepEqual(lines(f), [
        "drift: fast: node1: /dev/disk/by-id/wwn-0x1: declared but does not exist on the node",
        "drift: fast: node1: VG zcloud-fast: does not exist on the node",
        "drift: fast: node2: /dev/sdc: declared but not in VG zcloud-fast",
        "drift: fast: node2: VG zcloud-fast: has no thin pool, the config declares thin",
    ]);
});

test("StorageClass missing or default flag drifted; controller, node and plugin problems", () => {
    const cluster = healthyCluster();
    cluster.storageClasses = cluster.storageClasses.filter((s) => s.name !== "nfs").map((s) => ({ ...s, isDefault: s.name === "shared" }));
    cluster.nodes[2].ready = false;
    cluster.pods = cluster.pods.filter((p) => p.name !== "topolvm-controller-a" && p.name !== "topolvm-node-1");
    cluster.pods.find((p) => p.name === "csi-nfs-node-1")!.ready = false;
    cluster.pods.find((p) => p.name === "ceph-shared-mon-a-x")!.ready = false;
    assert.deepEqual(lines(facts({ cluster })), [
        "drift: fast: StorageClass fast: is not the default StorageClass, the config says default: true",
        "degraded: fast: topolvm controller pod: none found",
        "degraded: fast: node1: topolvm node pod: none on the node",
        "drift: shared: StorageClass shared: is the default StorageClass, the config does not say so",
        "degraded: shared: node3: node node3: is not Ready",
        "degraded: shared: node3: pod ceph-shared-mon-a-x: ceph-mon pod is not Ready (phase Running)",
        "drift: nfs: StorageClass nfs: missing",
        "degraded: nfs: node1: pod csi-nfs-node-1: csi-driver-nfs node pod is not Ready (phase Running)",
    ]);
});

test("thin pool nearly full, Ceph not healthy and OSDs down", () => {
    const f = facts({ ceph: new Map([["shared", { ...cephOk, status: "HEALTH_WARN", up: 0 }]]) });
    f.nodes.set("node1", report({ "/dev/disk/by-id/wwn-0x1": "/dev/sdb" }, [["/dev/sdb", "zcloud-fast"]], 95.5));
    assert.deepEqual(lines(f), [
        "degraded: fast: node1: LV zcloud-fast/pool: thin pool 95.5% full",
        "degraded: shared: ceph health: HEALTH_WARN",
        "degraded: shared: OSDs: 0 up and 1 in of 1 declared devices",
    ]);
});

test("unreachable cluster or node: exit 2, every storage says so", () => {
    const f = facts({ cluster: { error: "The connection to the server 127.0.0.1:6443 was refused" }, ceph: new Map([["shared", { error: "cluster not reached" }]]) });
    f.nodes.set("node2", { error: "unreachable: ssh: connect to host 10.0.0.12 port 22: No route to host" });
    assert.deepEqual(lines(f), [
        "unreachable: fast: cluster: The connection to the server 127.0.0.1:6443 was refused",
        "unreachable: fast: node2: ssh: unreachable: ssh: connect to host 10.0.0.12 port 22: No route to host",
        "unreachable: shared: cluster: The connection to the server 127.0.0.1:6443 was refused",
        "unreachable: shared: ceph status: cluster not reached",
        "unreachable: nfs: cluster: The connection to the server 127.0.0.1:6443 was refused",
    ]);
    assert.equal(exitCodeOf(evaluateStatus(f)), 2);
});

test("kubectl JSON lists become facts; ceph status JSON of Ceph 16 and 19 layouts", () => {
    const f = clusterFacts(
        {
            items: [
                { kind: "Node", metadata: { name: "n1", labels: { a: "b" } }, status: { conditions: [{ type: "Ready", status: "True" }] } },
                { kind: "StorageClass", metadata: { name: "fast", annotations: { "storageclass.kubernetes.io/is-default-class": "true" } }, provisioner: "topolvm.io" },
            ],
        },
        { items: [{ kind: "Pod", metadata: { name: "p" }, spec: { nodeName: "n1" }, status: { phase: "Pending", conditions: [{ type: "Ready", status: "False" }] } }] },
    );
    assert.deepEqual(f, {
        nodes: [{ name: "n1", labels: { a: "b" }, ready: true }],
        storageClasses: [{ name: "fast", provisioner: "topolvm.io", isDefault: true }],
        pods: [{ name: "p", node: "n1", labels: {}, phase: "Pending", ready: false }],
    });
    const flat = { health: { status: "HEALTH_OK" }, osdmap: { num_osds: 3, num_up_osds: 3, num_in_osds: 2 }, pgmap: { bytes_used: 5, bytes_total: 50 } };
    assert.deepEqual(parseCephStatus(JSON.stringify(flat)), { status: "HEALTH_OK", osds: 3, up: 3, in: 2, bytesUsed: 5, bytesTotal: 50 });
    assert.deepEqual(parseCephStatus(JSON.stringify({ ...flat, osdmap: { osdmap: flat.osdmap } })).in, 2);
});
