import { z } from "zod";
import { ConfigIssue } from "./errors";
import * as f from "./formats";

/**
 * `zcloud-storage:monitoring`: opt-in metrics, alerts and dashboards for every storage of the stack
 * (docs/monitoring.md). Absent: the stack deploys nothing for monitoring. Alert thresholds have
 * defaults here, can be set for the whole stack (`monitoring.alerts`) and per storage (`alerts`).
 */

/** A used-space threshold pair in percent: warning first, critical at or after it. */
export interface UsedThreshold {
    warning: number;
    critical: number;
}

/** Every threshold a storage's alerts read, resolved (defaults, then stack, then storage). */
export interface AlertThresholds {
    /** LVM: share of the volume group's space given to volumes (or the thin pool). */
    volumeGroupUsed: UsedThreshold;
    /** LVM thin: share of the thin pool's data space in use. */
    thinPoolDataUsed: UsedThreshold;
    /** LVM thin: share of the thin pool's metadata space in use, on its own (it fills apart from data). */
    thinPoolMetadataUsed: UsedThreshold;
    /** CephFS: share of a pool's usable space in use (Ceph's own nearfull is 85% of an OSD). */
    cephUsed: UsedThreshold;
    /** Every type: share of a persistent volume's space in use (kubelet volume stats). */
    volumeUsed: UsedThreshold;
    /** Hours ahead the fill forecasts look (predict_linear over the last 6 hours); 0 turns them off. */
    fillForecastHours: number;
}

export type ThresholdName = Exclude<keyof AlertThresholds, "fillForecastHours">;

export const defaultAlertThresholds: AlertThresholds = {
    volumeGroupUsed: { warning: 85, critical: 95 },
    thinPoolDataUsed: { warning: 80, critical: 90 },
    thinPoolMetadataUsed: { warning: 70, critical: 85 },
    cephUsed: { warning: 75, critical: 85 },
    volumeUsed: { warning: 85, critical: 95 },
    fillForecastHours: 24,
};

/** Which thresholds each storage type's alerts read: a storage may set only these. */
export const thresholdsOfType = {
    lvm: ["volumeGroupUsed", "thinPoolDataUsed", "thinPoolMetadataUsed", "volumeUsed", "fillForecastHours"],
    cephfs: ["cephUsed", "volumeUsed", "fillForecastHours"],
    iscsi: ["volumeUsed", "fillForecastHours"],
    nfs: ["volumeUsed", "fillForecastHours"],
} as const satisfies Record<string, readonly (keyof AlertThresholds)[]>;

export interface MonitoringConfig {
    /**
     * true (default): ServiceMonitor and PrometheusRule objects for the Prometheus Operator. false:
     * only the metrics Services and dashboards; `npm run plan -- --out` writes rule files and scrape
     * configs for a Prometheus configured by hand.
     */
    prometheusOperator: boolean;
    /** Labels on every ServiceMonitor and PrometheusRule, for the Prometheus's selectors. */
    labels: Record<string, string>;
    /** Grafana dashboards as ConfigMaps with these labels (the Grafana sidecar's); false: none. */
    dashboards: false | { labels: Record<string, string> };
    /** The stack's thresholds (defaults where it sets none). */
    alerts: AlertThresholds;
    /** Where the site publishes docs/monitoring.md: alerts link their runbook section there. */
    runbookBaseUrl?: string;
}

const percent = z
    .number()
    .gt(0, { message: "must be a percentage above 0 and at most 100" })
    .max(100, { message: "must be a percentage above 0 and at most 100" });

const usedThreshold = z
    .strictObject({ warning: percent.optional(), critical: percent.optional() })
    .refine((t) => Object.keys(t).length > 0, { message: "must set warning, critical or both, e.g. { warning: 80, critical: 90 }" });

const forecastHours = z
    .number()
    .int({ message: "must be a whole number of hours (0 turns the fill forecasts off)" })
    .min(0, { message: "must be from 0 (no forecast) to 720 hours" })
    .max(720, { message: "must be from 0 (no forecast) to 720 hours" });

/** Thresholds as written: any subset, each pair partial; merged over the level above. */
export const alertsSchema = z.strictObject({
    volumeGroupUsed: usedThreshold.optional(),
    thinPoolDataUsed: usedThreshold.optional(),
    thinPoolMetadataUsed: usedThreshold.optional(),
    cephUsed: usedThreshold.optional(),
    volumeUsed: usedThreshold.optional(),
    fillForecastHours: forecastHours.optional(),
});
export type AlertsInput = z.output<typeof alertsSchema>;

const labelValue = z.string().refine(f.isLabelValue, {
    message: "must be a Kubernetes label value: at most 63 characters of a-z, A-Z, 0-9, '-', '_' and '.', starting and ending with a letter or digit",
});

const labels = z.record(z.string(), labelValue).superRefine((record, ctx) => {
    for (const key of Object.keys(record).filter((k) => !f.isLabelKey(k))) {
        ctx.addIssue({ code: "custom", path: [key], message: `${JSON.stringify(key)} is not a Kubernetes label key, e.g. release or example.com/team` });
    }
});

/** The Grafana sidecar of kube-prometheus-stack loads ConfigMaps labelled so. */
export const defaultDashboardLabels = { grafana_dashboard: "1" };

export const monitoringSchema = z.strictObject({
    prometheusOperator: z.boolean({ error: "must be true (ServiceMonitor and PrometheusRule objects) or false (rule files from npm run plan -- --out)" }).default(true),
    labels: labels.default({}),
    dashboards: z
        .union([z.boolean(), z.strictObject({ labels })], {
            error: (issue) => (issue.code === "invalid_union" ? 'must be true, false or { labels: { grafana_dashboard: "1" } }' : undefined),
        })
        .default(true),
    alerts: alertsSchema.default({}),
    runbookBaseUrl: z
        .string()
        .refine((v) => /^https?:\/\/[^\s"'<>]+$/.test(v), { message: "must be an http(s) URL of the page docs/monitoring.md is published at, e.g. https://docs.example.com/zcloud-storage/monitoring" })
        .optional(),
});
export type MonitoringInput = z.output<typeof monitoringSchema>;

/** `over` laid on `base`, pair by pair (a storage may set only a pair's warning). */
export function mergeThresholds(base: AlertThresholds, over: AlertsInput | undefined): AlertThresholds {
    if (!over) {
        return base;
    }
    const out = { ...base };
    for (const name of Object.keys(over) as (keyof AlertsInput)[]) {
        if (name === "fillForecastHours") {
            out.fillForecastHours = over.fillForecastHours ?? base.fillForecastHours;
        } else if (over[name]) {
            out[name] = { ...base[name], ...over[name] };
        }
    }
    return out;
}

export function monitoringModel(input: MonitoringInput): MonitoringConfig {
    const dashboards = input.dashboards === false ? false : { labels: input.dashboards === true ? defaultDashboardLabels : input.dashboards.labels };
    return {
        prometheusOperator: input.prometheusOperator,
        labels: input.labels,
        dashboards,
        alerts: mergeThresholds(defaultAlertThresholds, input.alerts),
        ...(input.runbookBaseUrl === undefined ? {} : { runbookBaseUrl: input.runbookBaseUrl }),
    };
}

interface AlertsView {
    monitoring?: MonitoringInput;
    lvm: Array<{ alerts?: AlertsInput; thin?: unknown } | undefined>;
    cephfs: Array<{ alerts?: AlertsInput } | undefined>;
    iscsi: Array<{ alerts?: AlertsInput } | undefined>;
    nfs: Array<{ alerts?: AlertsInput } | undefined>;
}

function orderIssues(path: string, t: AlertThresholds, written: AlertsInput | undefined): ConfigIssue[] {
    const names = Object.keys(written ?? {}).filter((n): n is ThresholdName => n !== "fillForecastHours");
    return names
        .filter((name) => t[name].warning >= t[name].critical)
        .map((name) => ({
            path: `${path}.${name}`,
            message: `warning (${t[name].warning}%) must be below critical (${t[name].critical}%)${written?.[name]?.warning === undefined || written?.[name]?.critical === undefined ? " (the other one is inherited; set both)" : ""}`,
        }));
}

/** An LVM storage reads the thin pool's thresholds or the volume group's, never both. */
function thinIssues(path: string, alerts: AlertsInput, thin: boolean): ConfigIssue[] {
    if (thin) {
        return alerts.volumeGroupUsed
            ? [{ path: `${path}.volumeGroupUsed`, message: "is read only by a storage without a thin pool (a thin storage's volume group holds its pool: thinPoolDataUsed and thinPoolMetadataUsed watch it)" }]
            : [];
    }
    return (["thinPoolDataUsed", "thinPoolMetadataUsed"] as const)
        .filter((name) => alerts[name])
        .map((name) => ({ path: `${path}.${name}`, message: "is read only by a storage with a thin pool (thin: {...}); this storage has none" }));
}

/**
 * Refusals across keys: a storage's `alerts` without monitoring turned on, thresholds its type does
 * not read, and a warning at or above its critical after merging.
 */
export function monitoringIssues(c: AlertsView, monitoringWritten: boolean): ConfigIssue[] {
    const issues: ConfigIssue[] = [];
    if (monitoringWritten && !c.monitoring) {
        // The key is there but invalid: its own errors are reported; the storages' thresholds wait for it.
        return issues;
    }
    const stackAlerts = c.monitoring ? mergeThresholds(defaultAlertThresholds, c.monitoring.alerts) : defaultAlertThresholds;
    if (c.monitoring) {
        issues.push(...orderIssues("monitoring.alerts", stackAlerts, c.monitoring.alerts));
    }
    for (const type of ["lvm", "cephfs", "iscsi", "nfs"] as const) {
        c[type].forEach((s, i) => {
            if (!s?.alerts) {
                return;
            }
            const path = `${type}[${i}].alerts`;
            if (!c.monitoring) {
                issues.push({ path, message: "sets alert thresholds, but monitoring is off: turn it on with zcloud-storage:monitoring (docs/monitoring.md), or remove alerts" });
                return;
            }
            const allowed: readonly string[] = thresholdsOfType[type];
            for (const name of Object.keys(s.alerts)) {
                if (!allowed.includes(name)) {
                    issues.push({ path: `${path}.${name}`, message: `is not read by ${type} storages' alerts (they read ${allowed.join(", ")})` });
                }
            }
            if (type === "lvm") {
                issues.push(...thinIssues(path, s.alerts, (s as { thin?: unknown }).thin !== undefined));
            }
            issues.push(...orderIssues(path, mergeThresholds(stackAlerts, s.alerts), s.alerts));
        });
    }
    return issues;
}
