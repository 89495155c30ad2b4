/**
 * Every alert the program renders, proven with Prometheus's own rule engine (`promtool test rules`,
 * Debian's prometheus package): it fires at its threshold (or in its bad state) once its `for` has
 * passed, not before, and stays silent just below (or in the good state), with the exact labels and
 * annotations an operator gets. The rule file is `promtool check rules`-clean. The rules are those of
 * a stack with every storage type (LVM plain and thin, CephFS on three hosts and on one, NFS,
 * iSCSI) and thresholds set at the stack and per storage.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { parseStackConfig } from "../../components/config/parse";
import { StackModel } from "../../components/config/model";
import { AlertRule, RuleGroup } from "../../components/monitoring/rules";
import { ruleFile } from "../../components/monitoring/stackMonitoring";
import { TypeMonitoring } from "../../components/monitoring/typeMonitoring";
import { storageTypes } from "../../components/stack";
import { AlertCase, CaseContext, absentCase, cephPoolShape, presentSeries, expectedAnnotations, forMinutes, forecastAt, labelText, stateCase, thinPoolShape, usedCase, volumeGroupShape, volumeShape, workloadCase } from "./alertCases";
import { promtool } from "./tools";

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const nodes = Object.fromEntries(["n1", "n2", "n3", "n4", "n5", "n6", "n7"].map((n, i) => [n, { address: `10.0.0.${11 + i}` }]));
const config = {
    ssh: { privateKey: "k", hostKeys: Object.fromEntries(Object.keys(nodes).map((n) => [n, key])) },
    nodes,
    monitoring: { alerts: { volumeUsed: { warning: 80 }, fillForecastHours: 12 } },
    lvm: [
        { name: "fast", hosts: { n1: ["/dev/disk/by-id/wwn-0x1"] }, alerts: { volumeGroupUsed: { warning: 70, critical: 90 } } },
        { name: "thin", hosts: { n2: ["/dev/disk/by-id/wwn-0x2"] }, thin: {}, alerts: { thinPoolMetadataUsed: { warning: 57 } } },
    ],
    cephfs: [
        { name: "shared", hosts: { n3: ["/dev/disk/by-id/wwn-0x3"], n4: ["/dev/disk/by-id/wwn-0x4"], n5: ["/dev/disk/by-id/wwn-0x5"] } },
        { name: "solo", hosts: { n6: ["/dev/disk/by-id/wwn-0x6"] }, alerts: { cephUsed: { warning: 66.6, critical: 80 } } },
    ],
    nfs: [{ name: "nas", server: "10.0.0.60", path: "/exports/k8s" }],
    iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: ["n7"] }],
};

function stackMonitoring(model: StackModel): Record<string, TypeMonitoring> {
    const ctx = { namespace: model.namespace, ownsDriver: true };
    return Object.fromEntries(Object.entries(storageTypes).map(([type, def]) => [type, (def.monitoring as (s: unknown[], c: typeof ctx) => TypeMonitoring)(model[type as keyof typeof storageTypes], ctx)]));
}

const parsed = parseStackConfig(config);
assert.deepEqual(parsed.errors, []);
const model = parsed.model!;
const types = stackMonitoring(model);
const groups = Object.values(types).flatMap((t) => t.groups);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-promtool-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const rulesPath = path.join(dir, "rules.yaml");
fs.writeFileSync(rulesPath, ruleFile(types));

type Storage = { name: string; alerts?: { [k: string]: unknown } };
const storageOf = (name: string): Storage & { type: string; hosts?: Record<string, string[]> } => {
    for (const type of ["lvm", "cephfs", "iscsi", "nfs"] as const) {
        const s = (model[type] as Storage[]).find((x) => x.name === name);
        if (s) return { ...s, type };
    }
    throw new Error(`no storage ${name}`);
};

/** The names a not-ready rule watches, read from its matcher (their existence is the plan tier's test). */
const watched = (rule: AlertRule) => /=~"([^"]+)"/.exec(rule.expr)![1].split("|");

/** The case of one rule: which shape and which state make it fire, by its name. */
function caseOf(rule: AlertRule): AlertCase {
    const owner = "storage" in rule.labels ? rule.labels.storage : undefined;
    const ctx: CaseContext = { namespace: model.namespace, storage: owner ?? "" };
    const s = owner ? storageOf(owner) : undefined;
    const t = s?.alerts as Record<string, { warning: number; critical: number } | number> | undefined;
    const level = (name: string) => {
        const pair = t![name] as { warning: number; critical: number };
        return rule.alert.endsWith("Full") ? pair.critical : pair.warning;
    };
    const used = (shape: Parameters<typeof usedCase>[0], threshold: string): AlertCase =>
        rule.alert.endsWith("FullSoon") ? usedCase(shape, "forecast", ctx) : usedCase(shape, "threshold", { ...ctx, threshold: level(threshold) });
    const storage = ctx.storage;
    const m = /^(LvmVolumeGroup|LvmThinPoolData|LvmThinPoolMetadata|CephPool|StorageVolume)(Filling|Full|FullSoon)$/.exec(rule.alert);
    if (m) {
        switch (m[1]) {
            case "LvmVolumeGroup": return used(volumeGroupShape(storage), "volumeGroupUsed");
            case "LvmThinPoolData": return used(thinPoolShape(storage, "data"), "thinPoolDataUsed");
            case "LvmThinPoolMetadata": return used(thinPoolShape(storage, "metadata"), "thinPoolMetadataUsed");
            case "CephPool": return used(cephPoolShape(storage), "cephUsed");
            default: return used(volumeShape(storage), "volumeUsed");
        }
    }
    if (rule.alert.endsWith("NodePodsNotReady")) return workloadCase("kube_daemonset_status_number_unavailable", "daemonset", { ...ctx, workloads: watched(rule) });
    if (rule.alert.endsWith("PodsNotReady")) return workloadCase("kube_deployment_status_replicas_unavailable", "deployment", { ...ctx, workloads: watched(rule) });
    const on = { storage };
    const detail = (name: string) => stateCase("ceph_health_detail", { ...on, name, severity: "HEALTH_WARN" }, 1, 0);
    switch (rule.alert) {
        case "LvmMetricsAbsent": {
            const metric = (name: string) => (model.lvm.find((x) => x.name === name)!.thin ? "topolvm_thinpool_data_percent" : "topolvm_volumegroup_size_bytes");
            const others = model.lvm.filter((x) => x.name !== storage).map((x) => presentSeries(metric(x.name), { device_class: x.name, node: "node1" }));
            return absentCase(metric(storage), { device_class: storage }, others);
        }
        case "CephMetricsAbsent":
            return absentCase("ceph_health_status", on, model.cephfs.filter((x) => x.name !== storage).map((x) => presentSeries("ceph_health_status", { storage: x.name })));
        case "CephHealthError": return stateCase("ceph_health_status", on, 2, 1);
        case "CephHealthWarning": return stateCase("ceph_health_status", on, 1, 0);
        case "CephMonOutOfQuorum": return stateCase("ceph_mon_quorum_status", { ...on, ceph_daemon: "mon.c" }, 0, 1);
        case "CephOsdDown": return stateCase("ceph_osd_up", { ...on, ceph_daemon: "osd.0" }, 0, 1);
        case "CephOsdOut": return stateCase("ceph_osd_in", { ...on, ceph_daemon: "osd.0" }, 0, 1);
        case "CephMdsNoStandby": return detail("MDS_INSUFFICIENT_STANDBY");
        case "CephSlowOps": return detail("SLOW_OPS");
        case "CephDaemonCrashed": return detail("RECENT_CRASH");
        case "TopolvmCsiOperationsFailing": {
            // CreateVolume failing 6 times a minute (0.1/s); silent: only OK calls count up, and an old failure stays flat.
            const call = { namespace: model.namespace, service: "topolvm-controller-metrics", driver_name: "topolvm.io", method_name: "/csi.v1.Controller/CreateVolume" };
            const counter = (code: string, values: string) => ({ series: `csi_sidecar_operations_seconds_count{${labelText({ ...call, grpc_status_code: code })}}`, values });
            const kept = { namespace: call.namespace, method_name: call.method_name, grpc_status_code: "ResourceExhausted" };
            return { fire: [counter("OK", "0+6x100"), counter("ResourceExhausted", "0+6x100")], quiet: [counter("OK", "0+6x100"), counter("ResourceExhausted", "3x100")], alerts: [{ labels: kept, value: 0.1 }] };
        }
        case "CephMonQuorumAtRisk": {
            const mons = ["a", "b", "c"];
            const metadata = mons.map((id) => ({ series: `ceph_mon_metadata{${labelText({ ...on, ceph_daemon: `mon.${id}` })}}`, values: "1x100" }));
            const quorum = (last: number) => mons.map((id, i) => ({ series: `ceph_mon_quorum_status{${labelText({ ...on, ceph_daemon: `mon.${id}` })}}`, values: `${i === 2 ? last : 1}x100` }));
            return { fire: [...metadata, ...quorum(0)], quiet: [...metadata, ...quorum(1)], alerts: [{ labels: {}, value: 2 }] };
        }
        case "CephPgsInactive": {
            const pg = (active: number) => [
                { series: `ceph_pg_total{${labelText({ ...on, pool_id: "2" })}}`, values: "64x100" },
                { series: `ceph_pg_active{${labelText({ ...on, pool_id: "2" })}}`, values: `${active}x100` },
            ];
            return { fire: pg(63), quiet: pg(64), alerts: [{ labels: {}, value: 1 }] };
        }
        case "CephPgsDegraded": {
            const pg = (degraded: number) => [
                { series: `ceph_pg_degraded{${labelText({ ...on, pool_id: "2" })}}`, values: `${degraded}x100` },
                { series: `ceph_pg_undersized{${labelText({ ...on, pool_id: "2" })}}`, values: "0x100" },
            ];
            return { fire: pg(1), quiet: pg(0), alerts: [{ labels: {}, value: 1 }] };
        }
    }
    throw new Error(`no case for alert ${rule.alert}: add one to test/monitoring/promtool.test.ts`);
}

/** First minute the expression can be true: a forecast needs two points of its 5m subquery. */
const firstTrue = (rule: AlertRule) => (rule.alert.endsWith("FullSoon") ? 5 : 0);

function promtoolTests(group: RuleGroup) {
    return group.rules.flatMap((rule) => {
        const c = caseOf(rule);
        const forM = forMinutes(rule);
        const fireAt = firstTrue(rule) + forM + 1;
        const expected = c.alerts.map((a) => {
            const labels = { ...a.labels, ...rule.labels };
            const value = Number.isNaN(a.value) ? forecastAt(fireAt, storageOf((rule.labels as { storage: string }).storage).alerts!.fillForecastHours as number) : a.value;
            return { exp_labels: labels, exp_annotations: expectedAnnotations(rule, { ...a.labels, ...rule.labels }, value) };
        });
        const evalAt = (minute: number, alerts: unknown[]) => ({ eval_time: `${minute}m`, alertname: rule.alert, exp_alerts: alerts });
        return [
            // Fires once its `for` has passed, not a minute before.
            { name: `${rule.alert} fires`, interval: "1m", input_series: c.fire, alert_rule_test: [evalAt(fireAt - 2, []), evalAt(fireAt, expected)] },
            // Silent just below the threshold (or in the good state), long after its `for`.
            { name: `${rule.alert} stays silent`, interval: "1m", input_series: c.quiet, alert_rule_test: [evalAt(fireAt + 30, [])] },
        ];
    });
}

describe("alert rules under promtool", () => {
    test("promtool check rules: the stack's rule file is valid", () => {
        const out = execFileSync(promtool(), ["check", "rules", rulesPath], { encoding: "utf8" });
        assert.match(out, new RegExp(`SUCCESS: ${groups.reduce((n, g) => n + g.rules.length, 0)} rules found`));
    });

    test("every storage type's alerts are in the file (what the cases below cover)", () => {
        const names = new Set(groups.flatMap((g) => g.rules.map((r) => r.alert)));
        for (const alert of ["LvmVolumeGroupFull", "LvmThinPoolMetadataFilling", "CephMonQuorumAtRisk", "CephOsdDown", "CephPgsInactive", "CephPoolFullSoon", "StorageVolumeFilling", "CsiDriverNfsNodePodsNotReady", "CsiSanlockLvmPodsNotReady", "TopolvmNodePodsNotReady", "CephCsiPodsNotReady"]) {
            assert.ok(names.has(alert), alert);
        }
        // One mon has no quorum to lose: no quorum alert for the one-host storage.
        const solo = groups.find((g) => g.name === "zcloud-storage.cephfs.solo")!;
        assert.equal(solo.rules.some((r) => r.alert === "CephMonQuorumAtRisk"), false);
    });

    for (const group of groups) {
        test(`promtool test rules: ${group.name} (${group.rules.length} alerts: fire after their for, silent below)`, () => {
            const testsPath = path.join(dir, `${group.name}.test.yaml`);
            fs.writeFileSync(testsPath, yaml.dump({ rule_files: [rulesPath], evaluation_interval: "1m", tests: promtoolTests(group) }, { lineWidth: -1, noRefs: true }));
            let out = "";
            try {
                out = execFileSync(promtool(), ["test", "rules", testsPath], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
            } catch (e) {
                const err = e as { stdout?: string; stderr?: string };
                assert.fail(`promtool test rules failed for ${group.name}:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
            }
            assert.match(out, /SUCCESS/);
        });
    }
});
