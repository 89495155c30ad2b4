// zcloud-storage:monitoring and each storage's `alerts` (docs/monitoring.md): the model they give
// (defaults, stack, storage, merged pair by pair) and every refusal word for word.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { formatIssue } from "../../components/config/errors";
import { defaultAlertThresholds, mergeThresholds } from "../../components/config/monitoring";
import { parseStackConfig } from "../../components/config/parse";

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJx";
const base = { ssh: { privateKey: "k", hostKeys: { node1: key, node2: key } }, nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" } } };
const errorsOf = (values: Record<string, unknown>) => parseStackConfig(values).errors.map(formatIssue);
const lvm = (extra: object = {}) => ({ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] }, ...extra });
const nfs = (extra: object = {}) => ({ name: "shared", server: "10.0.0.60", path: "/exports/k8s", ...extra });

describe("config: monitoring", () => {
    test("absent: the model has no monitoring and no storage carries alerts (as before the key existed)", () => {
        const model = parseStackConfig({ ...base, lvm: [lvm()], nfs: [nfs()] }).model!;
        assert.equal(Object.hasOwn(model, "monitoring"), false);
        assert.equal(Object.hasOwn(model.lvm[0], "alerts"), false);
        assert.equal(Object.hasOwn(model.nfs[0], "alerts"), false);
    });

    test("an empty map turns it on with the defaults: operator objects, dashboards for the Grafana sidecar", () => {
        const model = parseStackConfig({ ...base, lvm: [lvm()], monitoring: {} }).model!;
        assert.deepEqual(model.monitoring, { prometheusOperator: true, labels: {}, dashboards: { labels: { grafana_dashboard: "1" } }, alerts: defaultAlertThresholds });
        assert.deepEqual(model.lvm[0].alerts, defaultAlertThresholds);
    });

    test("thresholds: defaults, then the stack's, then the storage's, pair by pair", () => {
        const model = parseStackConfig({
            ...base,
            lvm: [lvm({ thin: {}, alerts: { thinPoolMetadataUsed: { warning: 60 } } }), { ...lvm(), name: "bulk", hosts: { node2: ["/dev/disk/by-id/wwn-0x2"] } }],
            monitoring: { alerts: { thinPoolMetadataUsed: { critical: 75 }, fillForecastHours: 12 }, labels: { release: "kube-prometheus-stack" }, dashboards: { labels: { dashboards: "storage" } }, runbookBaseUrl: "https://docs.example.com/storage/monitoring" },
        }).model!;
        assert.deepEqual(model.lvm[0].alerts!.thinPoolMetadataUsed, { warning: 60, critical: 75 });
        assert.deepEqual(model.lvm[1].alerts!.thinPoolMetadataUsed, { warning: 70, critical: 75 });
        assert.equal(model.lvm[0].alerts!.fillForecastHours, 12);
        assert.deepEqual(model.lvm[0].alerts!.volumeGroupUsed, defaultAlertThresholds.volumeGroupUsed);
        assert.deepEqual(model.monitoring!.labels, { release: "kube-prometheus-stack" });
        assert.deepEqual(model.monitoring!.dashboards, { labels: { dashboards: "storage" } });
        assert.equal(model.monitoring!.runbookBaseUrl, "https://docs.example.com/storage/monitoring");
        const off = parseStackConfig({ ...base, lvm: [lvm()], monitoring: { prometheusOperator: false, dashboards: false } }).model!;
        assert.deepEqual([off.monitoring!.prometheusOperator, off.monitoring!.dashboards], [false, false]);
    });

    test("refusals, all reported together, each with its key path", () => {
        assert.deepEqual(
            errorsOf({
                ...base,
                lvm: [lvm({ alerts: { thinPoolDataUsed: { warning: 70 }, cephUsed: { warning: 50 }, volumeGroupUsed: { warning: 96 } } })],
                nfs: [nfs({ alerts: { volumeUsed: {} } })],
                monitoring: {
                    prometheusOperater: true,
                    labels: { "bad key!": "x", release: "not a value" },
                    dashboards: "yes",
                    alerts: { volumeUsed: { warning: 0, critical: 101 }, fillForecastHours: 1.5, thinPoolMetadataUsed: { warning: 90 } },
                    runbookBaseUrl: "docs.example.com",
                },
            }),
            [
                "nfs[0].alerts.volumeUsed: must set warning, critical or both, e.g. { warning: 80, critical: 90 }",
                `monitoring.labels.release: "not a value" is not a Kubernetes label value: at most 63 characters of a-z, A-Z, 0-9, '-', '_' and '.', starting and ending with a letter or digit`,
                'monitoring.labels.bad key!: "bad key!" is not a Kubernetes label key, e.g. release or example.com/team',
                'monitoring.dashboards: "yes" is not true, false or { labels: { grafana_dashboard: "1" } }',
                "monitoring.alerts.volumeUsed.warning: 0 is not a percentage above 0 and at most 100",
                "monitoring.alerts.volumeUsed.critical: 101 is not a percentage above 0 and at most 100",
                "monitoring.alerts.fillForecastHours: must be a whole number of hours (0 turns the fill forecasts off), not number 1.5",
                'monitoring.runbookBaseUrl: "docs.example.com" is not an http(s) URL of the page docs/monitoring.md is published at, e.g. https://docs.example.com/zcloud-storage/monitoring',
                'monitoring.prometheusOperater: unknown key; did you mean "prometheusOperator"? (known keys: prometheusOperator, labels, dashboards, alerts, runbookBaseUrl)',
            ],
        );
    });

    test("cross-key refusals: alerts without monitoring, thresholds a type does not read, warning not below critical", () => {
        assert.deepEqual(errorsOf({ ...base, nfs: [nfs({ alerts: { volumeUsed: { warning: 70 } } })] }), [
            "nfs[0].alerts: sets alert thresholds, but monitoring is off: turn it on with zcloud-storage:monitoring (docs/monitoring.md), or remove alerts",
        ]);
        assert.deepEqual(
            errorsOf({
                ...base,
                monitoring: { alerts: { thinPoolMetadataUsed: { warning: 90 } } },
                lvm: [lvm({ alerts: { thinPoolDataUsed: { warning: 70 }, cephUsed: { warning: 50 }, volumeGroupUsed: { warning: 96 } } })],
                nfs: [nfs({ alerts: { volumeUsed: { warning: 90, critical: 90 } } })],
            }),
            [
                "monitoring.alerts.thinPoolMetadataUsed: warning (90%) must be below critical (85%) (the other one is inherited; set both)",
                "lvm[0].alerts.cephUsed: is not read by lvm storages' alerts (they read volumeGroupUsed, thinPoolDataUsed, thinPoolMetadataUsed, volumeUsed, fillForecastHours)",
                "lvm[0].alerts.thinPoolDataUsed: is read only by a storage with a thin pool (thin: {...}); this storage has none",
                "lvm[0].alerts.volumeGroupUsed: warning (96%) must be below critical (95%) (the other one is inherited; set both)",
                "nfs[0].alerts.volumeUsed: warning (90%) must be below critical (90%)",
            ],
        );
        assert.deepEqual(errorsOf({ ...base, monitoring: {}, lvm: [lvm({ thin: {}, alerts: { volumeGroupUsed: { warning: 50 } } })] }), [
            "lvm[0].alerts.volumeGroupUsed: is read only by a storage without a thin pool (a thin storage's volume group holds its pool: thinPoolDataUsed and thinPoolMetadataUsed watch it)",
        ]);
    });

    test("property: a merge keeps every pair the storage leaves out and takes every value it sets", () => {
        const pct = fc.integer({ min: 1, max: 100 });
        const pair = fc.record({ warning: pct, critical: pct }, { requiredKeys: [] });
        const names = ["volumeGroupUsed", "thinPoolDataUsed", "thinPoolMetadataUsed", "cephUsed", "volumeUsed"] as const;
        fc.assert(
            fc.property(fc.record(Object.fromEntries(names.map((n) => [n, pair])), { requiredKeys: [] }), (over) => {
                const merged = mergeThresholds(defaultAlertThresholds, over);
                for (const n of names) {
                    const written = (over as Record<string, { warning?: number; critical?: number } | undefined>)[n];
                    assert.equal(merged[n].warning, written?.warning ?? defaultAlertThresholds[n].warning);
                    assert.equal(merged[n].critical, written?.critical ?? defaultAlertThresholds[n].critical);
                }
                assert.equal(merged.fillForecastHours, defaultAlertThresholds.fillForecastHours);
            }),
        );
    });
});
