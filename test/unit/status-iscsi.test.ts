import { test } from "node:test";
import * as assert from "node:assert/strict";
import { StackModel } from "../../components/config/model";
import { iscsiStatusCommand } from "../../components/iscsi/commands";
import { ClusterFacts, ClusterPod } from "../../tools/status/cluster";
import { StatusFacts, evaluateStatus, exitCodeOf, problemLine } from "../../tools/status/evaluate";
import { IscsiNodeFacts, parseIscsiFacts } from "../../tools/status/iscsi";
import { renderStatus } from "../../tools/status/render";

const IQN = "iqn.2026-11.io.example:san";
const P1 = "10.0.0.50:3260";
const P2 = "10.0.1.50:3260";

const model: StackModel = {
    namespace: "zcloud-storage",
    ssh: { user: "root", port: 22, privateKey: "offline", agent: false, hostKeys: {} },
    nodes: { node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" } },
    lvm: [],
    cephfs: [],
    iscsi: [{ name: "san", default: false, portals: [P1, P2], iqn: IQN, lun: 1, initiators: ["node4", "node5"], wipe: false }],
    nfs: [],
};

const pod = (name: string, node: string | undefined, component: string, ready = true): ClusterPod => ({
    name,
    node,
    labels: { "app.kubernetes.io/name": "csi-sanlock-lvm", "app.kubernetes.io/component": component },
    phase: "Running",
    ready,
});

function cluster(): ClusterFacts {
    return {
        nodes: ["node4", "node5"].map((name) => ({ name, labels: { "storage.zcloud.io/iscsi": "san" }, ready: true })),
        storageClasses: [{ name: "san", provisioner: "csi-sanlock-lvm.csi.vleo.net", isDefault: false }],
        pods: [pod("csi-sanlock-lvm-controller-a", "node4", "controller"), pod("csi-sanlock-lvm-node-4", "node4", "node"), pod("csi-sanlock-lvm-node-5", "node5", "node")],
    };
}

/** What iscsi-status.sh prints on a healthy initiator of `san` (an unrelated session included). */
const healthyAnswer = [
    `zcloud-iscsi-session: ${P1} ${IQN}`,
    `zcloud-iscsi-session: ${P2} ${IQN}`,
    "zcloud-iscsi-session: 10.0.9.9:3260 iqn.2026-11.io.example:other",
    "zcloud-iscsi-multipath: 36001405abc /dev/disk/by-id/dm-uuid-mpath-36001405abc",
    "zcloud-iscsi-shared-vg: zcloud-san present",
    "zcloud-iscsi-lockspace: zcloud-san started",
    "",
].join("\n");

function facts(node5: IscsiNodeFacts | { error: string } = parseIscsiFacts(healthyAnswer), c: ClusterFacts = cluster()): StatusFacts {
    return { model, cluster: c, nodes: new Map(), ceph: new Map(), iscsi: new Map([["san", new Map([["node4", parseIscsiFacts(healthyAnswer)], ["node5", node5]])]]) };
}

const lines = (f: StatusFacts) => evaluateStatus(f).flatMap((s) => s.problems.map((p) => `${p.kind}: ${problemLine(s.name, p)}`));

test("the iSCSI probe's command ships lib.sh, iscsi-lib.sh and iscsi-status.sh with the target's options, no secret", () => {
    const cmd = iscsiStatusCommand({ storage: "san", portals: [P1, P2], iqn: IQN, lun: 1 }, true);
    assert.match(cmd, /^sudo -n sh -c '.*zi_status_lockspace\n' iscsi-status --storage san --vg zcloud-san --target iqn\.2026-11\.io\.example:san --lun 1 --portal 10\.0\.0\.50:3260 --portal 10\.0\.1\.50:3260 --wait \d+$/s);
});

test("parses the probe's facts; an answer without its VG or lockspace fact is refused", () => {
    assert.deepEqual(parseIscsiFacts(healthyAnswer), {
        sessions: [
            { portal: P1, iqn: IQN },
            { portal: P2, iqn: IQN },
            { portal: "10.0.9.9:3260", iqn: "iqn.2026-11.io.example:other" },
        ],
        multipath: "/dev/disk/by-id/dm-uuid-mpath-36001405abc",
        vgPresent: true,
        lockspace: "started",
    });
    assert.deepEqual(parseIscsiFacts("zcloud-iscsi-shared-vg: zcloud-san missing\nzcloud-iscsi-lockspace: zcloud-san no-daemon\n"), { sessions: [], vgPresent: false, lockspace: "no-daemon" });
    assert.throws(() => parseIscsiFacts("zcloud-iscsi-session: a b\n"), /no VG or lockspace fact in the answer/);
});

test("iSCSI healthy: sessions on both portals, multipath, VG, lockspace, label, node plugin; exit 0", () => {
    const result = evaluateStatus(facts());
    assert.deepEqual(lines(facts()), []);
    assert.equal(exitCodeOf(result), 0);
    assert.deepEqual(result[0].nodes.node5, { ready: true, label: true, daemonsReady: true, devices: {}, iscsi: parseIscsiFacts(healthyAnswer) });
    const table = renderStatus(result);
    assert.ok(table.includes("san (iscsi): healthy; StorageClass san"), table);
    assert.match(table, /node5 +yes +yes +yes +10\.0\.0\.50:3260 10\.0\.1\.50:3260 10\.0\.9\.9:3260 +\/dev\/disk\/by-id\/dm-uuid-mpath-36001405abc +yes +started/);
});

test("a portal logged out, no multipath device, the VG not visible, the lockspace not started: each names the node; exit 1", () => {
    const f = facts({ sessions: [{ portal: P1, iqn: IQN }, { portal: P2, iqn: "iqn.2026-11.io.example:other" }], multipath: null, vgPresent: false, lockspace: "stopped" });
    assert.deepEqual(lines(f), [
        `degraded: san: node5: portal ${P2}: no iSCSI session to ${IQN}`,
        "degraded: san: node5: multipath: no multipath device for the LUN of 2 portals",
        "degraded: san: node5: VG zcloud-san: not visible on the node",
        "degraded: san: node5: lockspace lvm_zcloud-san: not started (sanlock runs, the VG's lockspace is not in it)",
    ]);
    assert.equal(exitCodeOf(evaluateStatus(f)), 1);
    const joining = parseIscsiFacts(healthyAnswer.replace("zcloud-san started", "zcloud-san joining"));
    assert.deepEqual(lines(facts(joining)), ["degraded: san: node5: lockspace lvm_zcloud-san: still joining"]);
    const noDaemon = parseIscsiFacts(healthyAnswer.replace("zcloud-san started", "zcloud-san no-daemon"));
    assert.deepEqual(lines(facts(noDaemon)), ["degraded: san: node5: lockspace lvm_zcloud-san: not started (no sanlock daemon on the node)"]);
});

test("iSCSI cluster side: label removed, node plugin not Ready, controller missing; an initiator not reached is exit 2", () => {
    const c = cluster();
    c.nodes[0].labels = {};
    c.pods = c.pods.filter((p) => p.labels["app.kubernetes.io/component"] !== "controller");
    c.pods.find((p) => p.name === "csi-sanlock-lvm-node-5")!.ready = false;
    const f = facts({ error: "ssh: connect to host 10.0.0.15 port 22: No route to host" }, c);
    assert.deepEqual(lines(f), [
        "degraded: san: csi-sanlock-lvm controller pod: none found",
        "drift: san: node4: label storage.zcloud.io/iscsi: missing (expected san)",
        "degraded: san: node5: pod csi-sanlock-lvm-node-5: csi-sanlock-lvm node pod is not Ready (phase Running)",
        "unreachable: san: node5: ssh: ssh: connect to host 10.0.0.15 port 22: No route to host",
    ]);
    assert.equal(exitCodeOf(evaluateStatus(f)), 2);
});
