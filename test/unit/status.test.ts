import { test } from "node:test";
import * as assert from "node:assert/strict";
import { StackModel } from "../../components/config/model";
import { cephNames } from "../../components/cephfs/cluster";
import { NodeReport } from "../../tools/discover/inventory";
import { CephHealth, ClusterFacts, ClusterPod, cephExecArgv, clusterFacts, osdmapFlags, parseCephOsds, parseCephStatus } from "../../tools/status/cluster";
import { StatusFacts, cephOsdProblems, evaluateStatus, exitCodeOf, expectedCephWarning, osdFlagAdvice, problemLine } from "../../tools/status/evaluate";

/** The summaries Ceph 20.2.4 gives the AES-128 key checks (seen on the Ceph tier, test/ceph/keys.test.ts). */
const AES_CLIENT_SUMMARY = "1 auth client entities with insecure key types";
const AES_ALLOWED_SUMMARY = "Monitors are configured to allow auth using insecure key types";
const AES_CREATABLE_SUMMARY = "Monitors are configured to allow creation of insecure key types";
import { renderStatus } from "../../tools/status/render";

const model: StackModel = {
    namespace: "zcloud-storage",
    ssh: { user: "root", port: 22, privateKey: "offline", agent: false, hostKeys: {} },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13" } },
    lvm: [{ name: "fast", default: true, wipe: false, thin: { overprovisionRatio: 4, poolPercent: 90, snapshots: false }, hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/sdb", "/dev/sdc"] } }],
    cephfs: [{ name: "shared", default: false, wipe: false, replicas: 1, replicasConfigured: true, hosts: { node3: ["/dev/sdb"] } }],
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

test("noout and norebalance set (a roll that stopped midway): each a problem saying what to do", () => {
    // ceph status -f json's health as Ceph 20.2.4 reports two flags (the Ceph tier asserts it on a real cluster)
    const status = { health: { status: "HEALTH_WARN", checks: { OSDMAP_FLAGS: { severity: "HEALTH_WARN", summary: { message: "noout,norebalance flag(s) set", count: 2 }, muted: false } } }, osdmap: { num_osds: 1, num_up_osds: 1, num_in_osds: 1 }, pgmap: { bytes_used: 1, bytes_total: 2 } };
    const health = parseCephStatus(JSON.stringify(status));
    assert.deepEqual(health.flags, ["noout", "norebalance"]);
    const f = facts({ ceph: new Map([["shared", health]]) });
    assert.deepEqual(lines(f), [
        "degraded: shared: ceph health: HEALTH_WARN",
        "degraded: shared: OSD flag noout: set: a stopped OSD is never marked out, so its data is not copied elsewhere. A Ceph roll that stopped before its noout-unset gate leaves it set: fix what stopped it and run pulumi up again (the roll clears it), or, once every OSD is up, run `ceph osd unset noout` in an admin pod",
        "degraded: shared: OSD flag norebalance: set: data is not moved between OSDs (no rebalancing after a change of OSDs); the program never sets it: once what it was set for is done, run `ceph osd unset norebalance` in an admin pod",
    ]);
    assert.equal(exitCodeOf(evaluateStatus(f)), 1);
    assert.deepEqual(osdmapFlags("nodown flag(s) set"), ["nodown"]);
    assert.deepEqual(osdmapFlags("1 osds down"), []);
    assert.deepEqual(osdmapFlags(undefined), []);
    assert.equal(osdFlagAdvice("nodown"), "set (a cluster-wide OSD flag the program never sets): once it is no longer wanted, run `ceph osd unset nodown` in an admin pod");
});

test("Ceph 20's checks of the CSI user's AES-128 key alone: healthy, the warning said to be expected; a second AES-128 client or any other check: a problem", () => {
    // ceph status -f json's health on Ceph 20.2.4 with the program's default keys (test/ceph/keys.test.ts)
    const check = (message: string) => ({ severity: "HEALTH_WARN", summary: { message, count: 1 }, muted: false });
    const aesChecks = {
        AUTH_INSECURE_CLIENT_KEY_TYPE: check(AES_CLIENT_SUMMARY),
        AUTH_INSECURE_KEYS_ALLOWED: check(AES_ALLOWED_SUMMARY),
        AUTH_INSECURE_KEYS_CREATABLE: check(AES_CREATABLE_SUMMARY),
    };
    const status = (checks: Record<string, unknown>) => ({ health: { status: "HEALTH_WARN", checks }, osdmap: { num_osds: 1, num_up_osds: 1, num_in_osds: 1 }, pgmap: { bytes_used: 1, bytes_total: 2 } });
    const expected = 'expected: the CSI user\'s AES-128 key, which every kernel client reads (docs/cephfs.md "Keys on Ceph 20")';
    const health = parseCephStatus(JSON.stringify(status(aesChecks)));
    assert.equal(expectedCephWarning(health), expected);
    const f = facts({ ceph: new Map([["shared", health]]) });
    assert.deepEqual(lines(f).filter((l) => l.includes("shared")), []);
    const out = renderStatus(evaluateStatus(f));
    assert.ok(out.includes(`  ceph HEALTH_WARN (${expected}), OSDs 1 up / 1 in / 1`), out);
    // each alone (a mute lifted, a check cleared) is still only the key's
    assert.equal(expectedCephWarning(parseCephStatus(JSON.stringify(status({ AUTH_INSECURE_KEYS_ALLOWED: aesChecks.AUTH_INSECURE_KEYS_ALLOWED })))), expected);
    // a second client with an AES-128 key: a problem
    const two = parseCephStatus(JSON.stringify(status({ ...aesChecks, AUTH_INSECURE_CLIENT_KEY_TYPE: check(AES_CLIENT_SUMMARY.replace(/^1 /, "2 ")) })));
    assert.equal(expectedCephWarning(two), undefined);
    assert.deepEqual(lines(facts({ ceph: new Map([["shared", two]]) })).filter((l) => l.includes("shared")), ["degraded: shared: ceph health: HEALTH_WARN"]);
    // an AES-128 service key (an upgraded cluster not rotated), or any other check: a problem
    for (const other of ["AUTH_INSECURE_SERVICE_KEY_TYPE", "MON_DOWN"]) {
        const h = parseCephStatus(JSON.stringify(status({ ...aesChecks, [other]: check("x") })));
        assert.equal(expectedCephWarning(h), undefined, other);
    }
    assert.equal(expectedCephWarning({ status: "HEALTH_ERR", checks: { AUTH_INSECURE_KEYS_ALLOWED: "x" } }), undefined);
    assert.equal(expectedCephWarning({ status: "HEALTH_WARN", checks: {} }), undefined);
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
    assert.deepEqual(parseCephStatus(JSON.stringify(flat)), { status: "HEALTH_OK", osds: 3, up: 3, in: 2, bytesUsed: 5, bytesTotal: 50, flags: [], checks: {} });
    assert.deepEqual(parseCephStatus(JSON.stringify({ ...flat, osdmap: { osdmap: flat.osdmap } })).in, 2);
});

// `ceph osd tree -f json` and `ceph osd metadata -f json` as Ceph 20.2.4 answers them (the Ceph
// tier's three-host cluster, osd.1 stopped; fields status does not read left out).
const osdTree = {
    nodes: [
        { id: -1, name: "default", type: "root", type_id: 11, children: [-7, -5, -3] },
        { id: -3, name: "node1", type: "host", type_id: 1, pool_weights: {}, children: [0] },
        { id: 0, device_class: "hdd", name: "osd.0", type: "osd", type_id: 0, crush_weight: 0.0029, depth: 2, pool_weights: {}, exists: 1, status: "up", reweight: 1, primary_affinity: 1 },
        { id: -5, name: "node2", type: "host", type_id: 1, pool_weights: {}, children: [1] },
        { id: 1, device_class: "hdd", name: "osd.1", type: "osd", type_id: 0, crush_weight: 0.0029, depth: 2, pool_weights: {}, exists: 1, status: "down", reweight: 1, primary_affinity: 1 },
        { id: -7, name: "node3", type: "host", type_id: 1, pool_weights: {}, children: [2] },
        { id: 2, device_class: "hdd", name: "osd.2", type: "osd", type_id: 0, crush_weight: 0.0029, depth: 2, pool_weights: {}, exists: 1, status: "up", reweight: 0, primary_affinity: 1 },
    ],
    stray: [],
};
// `hostname` is the OSD process's host name (in the tier the one test machine for every node),
// not the CRUSH host: status takes the node from the tree.
const osdMetadata = [
    { id: 0, hostname: "vm", devices: "sdb", bluestore_bdev_devices: "sdb", bluestore_bdev_dev_node: "/dev/sdb", device_ids: "", osd_objectstore: "bluestore" },
    { id: 1, hostname: "vm", devices: "sdb", bluestore_bdev_devices: "sdb", bluestore_bdev_dev_node: "/dev/sdb", device_ids: "", osd_objectstore: "bluestore" },
    { id: 2, hostname: "vm", devices: "sdc", bluestore_bdev_devices: "sdc", bluestore_bdev_dev_node: "/dev/sdc", device_ids: "", osd_objectstore: "bluestore" },
];

test("Ceph's osd tree and metadata become one entry per OSD: its host, up/in, devices", () => {
    assert.deepEqual(parseCephOsds(JSON.stringify(osdTree), JSON.stringify(osdMetadata)), [
        { id: 0, host: "node1", up: true, in: true, devices: ["sdb"] },
        { id: 1, host: "node2", up: false, in: true, devices: ["sdb"] },
        { id: 2, host: "node3", up: true, in: false, devices: ["sdc"] },
    ]);
    // no metadata for an OSD (never started): no devices
    assert.deepEqual(parseCephOsds(JSON.stringify(osdTree), "[]")[1].devices, []);
});

test("a down or out OSD is reported on its node, by the declared device it sits on when the node maps it", () => {
    const osds = parseCephOsds(JSON.stringify(osdTree), JSON.stringify(osdMetadata));
    assert.deepEqual(cephOsdProblems(osds), [
        { kind: "degraded", node: "node2", object: "osd.1 (sdb)", message: "down, in" },
        { kind: "degraded", node: "node3", object: "osd.2 (sdc)", message: "up, out" },
    ]);
    assert.deepEqual(cephOsdProblems(osds, { node2: { "/dev/disk/by-id/wwn-0x2": "/dev/sdb", "/dev/sdc": "/dev/sdc" }, node3: { "/dev/sdc": null } }).map((p) => p.object), ["osd.1 /dev/disk/by-id/wwn-0x2", "osd.2 (sdc)"]);
    // through status: the storage's node3 OSD down, named by its declared path
    const down = facts({ cephOsds: new Map([["shared", [{ id: 0, host: "node3", up: false, in: true, devices: ["sdb"] }]]]) });
    assert.deepEqual(lines(down), ["degraded: shared: node3: osd.0 /dev/sdb: down, in"]);
    assert.equal(exitCodeOf(evaluateStatus(down)), 1);
    // an unreadable osd tree adds nothing beyond what ceph status says
    assert.deepEqual(lines(facts({ cephOsds: new Map([["shared", { error: "kubectl: timeout" }]]) })), []);
});

test("ceph runs in the admin pod with client.admin's key file from the pod's key directory (no default keyring there); no key in argv", () => {
    assert.deepEqual(cephExecArgv("zcloud-storage", "ceph-shared-admin-x1", ["osd", "tree"]), [
        "exec", "-n", "zcloud-storage", "ceph-shared-admin-x1", "--",
        "sh", "-c", 'exec ceph --name client.admin --keyfile "$ZCLOUD_CEPH_KEYS/admin" "$@"', "ceph", "osd", "tree", "--format", "json",
    ]);
});
