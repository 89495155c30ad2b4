import { AlertThresholds, UsedThreshold } from "../config/monitoring";
import { WatchedWorkload } from "./targets";

/**
 * Prometheus alerting rules as plain data (the `groups` of a rule file and of a PrometheusRule's
 * spec): pure builders, so each rule's expression and threshold are tested without a cluster.
 */

export type Severity = "warning" | "critical";

export interface AlertRule {
    alert: string;
    expr: string;
    for: string;
    labels: { severity: Severity } & Owner;
    annotations: { summary: string; description: string; runbook: string; runbook_url?: string };
}

/** Whose an alert is: one storage's, or a driver's that the type's storages share. */
export type Owner = { storage: string } | { driver: string };

export interface RuleGroup {
    name: string;
    rules: AlertRule[];
}

/** An alert's runbook: its section of docs/monitoring.md (a heading named after the alert). */
export function runbookAnchor(alert: string): string {
    return alert.toLowerCase();
}

export interface AlertSpec {
    alert: string;
    expr: string;
    for: string;
    severity: Severity;
    summary: string;
    description: string;
}

/**
 * One rule of one storage or driver: its label tells Alertmanager routes and silences whose it is.
 * `runbook` names the section in this project's docs; `runbook_url` is that section where the
 * site publishes the docs (monitoring.runbookBaseUrl), when it does.
 */
export function alertRule(owner: Owner, a: AlertSpec, runbookBaseUrl?: string): AlertRule {
    const anchor = runbookAnchor(a.alert);
    return {
        alert: a.alert,
        expr: a.expr,
        for: a.for,
        labels: { severity: a.severity, ...owner },
        annotations: {
            summary: a.summary,
            description: a.description,
            runbook: `docs/monitoring.md#${anchor}`,
            ...(runbookBaseUrl ? { runbook_url: `${runbookBaseUrl.replace(/\/+$/, "")}#${anchor}` } : {}),
        },
    };
}

/** A PromQL string literal: label values from the config are quoted, never pasted. */
export function promString(value: string): string {
    return JSON.stringify(value);
}

/** `name{k="v",...}` with every value quoted; a value starting with `~` matches as a regex, with `!` is excluded. */
export function selector(metric: string, matchers: Record<string, string>): string {
    const matcher = (k: string, v: string) => (v.startsWith("~") ? `${k}=~${promString(v.slice(1))}` : v.startsWith("!") ? `${k}!=${promString(v.slice(1))}` : `${k}=${promString(v)}`);
    return `${metric}{${Object.entries(matchers).map(([k, v]) => matcher(k, v)).join(",")}}`;
}

export interface UsedAlertsArgs {
    /** Alert name stem, e.g. LvmVolumeGroup: gives LvmVolumeGroupFilling and LvmVolumeGroupFull. */
    stem: string;
    /** PromQL of the used share in percent (0-100), one series per thing that fills. */
    usedPercent: string;
    threshold: UsedThreshold;
    /** What fills, for the texts, e.g. "volume group {{ $labels.device_class }} on {{ $labels.node }}". */
    what: string;
    forecastHours: number;
    /** How long the share must stay past the threshold. */
    for?: string;
}

const round = (n: number) => String(Number(n.toFixed(2)));

/**
 * The three rules of a thing that fills: warning and critical past their thresholds, and a
 * forecast (predict_linear of the last 6 hours) that it is full within `forecastHours`, which
 * fires only while the share is already past half of the warning: an empty pool growing fast
 * is not yet news.
 */
export function usedAlerts(a: UsedAlertsArgs): AlertSpec[] {
    const holds = a.for ?? "5m";
    const specs: AlertSpec[] = [
        {
            alert: `${a.stem}Filling`,
            expr: `${a.usedPercent} >= ${round(a.threshold.warning)}`,
            for: holds,
            severity: "warning",
            summary: `${a.what} is ${round(a.threshold.warning)}% used or more`,
            description: `${a.what} is {{ $value | printf "%.1f" }}% used (warning at ${round(a.threshold.warning)}%, critical at ${round(a.threshold.critical)}%).`,
        },
        {
            alert: `${a.stem}Full`,
            expr: `${a.usedPercent} >= ${round(a.threshold.critical)}`,
            for: holds,
            severity: "critical",
            summary: `${a.what} is ${round(a.threshold.critical)}% used or more`,
            description: `${a.what} is {{ $value | printf "%.1f" }}% used (critical at ${round(a.threshold.critical)}%): writes fail when it is full.`,
        },
    ];
    if (a.forecastHours > 0) {
        specs.push({
            alert: `${a.stem}FullSoon`,
            expr: `(predict_linear((${a.usedPercent})[6h:5m], ${a.forecastHours * 3600}) >= 100) and (${a.usedPercent} >= ${round(a.threshold.warning / 2)})`,
            for: "1h",
            severity: "warning",
            summary: `${a.what} is forecast to be full within ${a.forecastHours} hours`,
            description: `${a.what} is {{ $value | printf "%.1f" }}% forecast in ${a.forecastHours} hours at the rate of the last 6 hours.`,
        });
    }
    return specs;
}

/** How kube-state-metrics tells each kind of workload's unready pods, and what the alert says. */
const unready = {
    DaemonSet: { suffix: "NodePodsNotReady", metric: "kube_daemonset_status_number_unavailable", label: "daemonset", counted: "pod(s)", effect: (what: string) => `: the nodes they should run on cannot serve ${what}.` },
    Deployment: { suffix: "PodsNotReady", metric: "kube_deployment_status_replicas_unavailable", label: "deployment", counted: "replica(s)", effect: () => "." },
} as const;

/** Alerts on workloads whose pods stay not ready (kube-state-metrics' series): one per kind watched. */
export function workloadAlerts(stem: string, what: string, namespace: string, workloads: WatchedWorkload[]): AlertSpec[] {
    return (["DaemonSet", "Deployment"] as const).flatMap((kind) => {
        const names = workloads.filter((w) => w.kind === kind).map((w) => w.name).sort();
        if (names.length === 0) {
            return [];
        }
        const k = unready[kind];
        return [
            {
                alert: `${stem}${k.suffix}`,
                expr: `${selector(k.metric, { namespace, [k.label]: `~${names.join("|")}` })} > 0`,
                for: "10m",
                severity: "warning" as const,
                summary: `${what}: pods of ${kind} {{ $labels.${k.label} }} are not ready`,
                description: `{{ $value }} ${k.counted} of ${kind} {{ $labels.namespace }}/{{ $labels.${k.label} }} have not been ready for 10 minutes${k.effect(what)}`,
            },
        ];
    });
}

/**
 * CSI calls that keep failing, as a driver's controller sidecars count them (csi-lib-utils'
 * csi_sidecar_operations_seconds, by method and gRPC status, scraped through `service`): claims
 * that stay Pending, expansions or deletions that never finish.
 */
export function csiOperationAlerts(stem: string, what: string, namespace: string, service: string): AlertSpec[] {
    const failed = selector("csi_sidecar_operations_seconds_count", { namespace, service, grpc_status_code: "!OK" });
    return [
        {
            alert: `${stem}CsiOperationsFailing`,
            expr: `sum by (namespace, method_name, grpc_status_code) (rate(${failed}[10m])) > 0`,
            for: "15m",
            severity: "warning",
            summary: `${what}: CSI {{ $labels.method_name }} calls keep failing with {{ $labels.grpc_status_code }}`,
            description: `The controller's CSI sidecars have seen {{ $labels.method_name }} fail with {{ $labels.grpc_status_code }} for 15 minutes ({{ $value | printf "%.3f" }} per second): volumes of ${what} are not created, expanded or deleted as asked.`,
        },
    ];
}

/**
 * The used share of each persistent volume of a StorageClass, in percent, from the kubelets'
 * volume stats (one series per claim: the fullest where several nodes mount it).
 */
export function volumeUsedPercent(storageClass: string): string {
    return `max by (namespace, persistentvolumeclaim) (kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes * 100 * on (namespace, persistentvolumeclaim) group_left () ${selector("kube_persistentvolumeclaim_info", { storageclass: storageClass })})`;
}

/** The volume alerts every storage type shares: its claims filling (kubelet volume stats). */
export function volumeAlerts(storageClass: string, t: AlertThresholds): AlertSpec[] {
    return usedAlerts({
        stem: "StorageVolume",
        usedPercent: volumeUsedPercent(storageClass),
        threshold: t.volumeUsed,
        what: `volume {{ $labels.namespace }}/{{ $labels.persistentvolumeclaim }} (StorageClass ${storageClass})`,
        forecastHours: t.fillForecastHours,
    });
}
