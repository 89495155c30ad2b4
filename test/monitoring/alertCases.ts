/**
 * For each alert the program renders, the series that make it fire and the series that keep it
 * quiet, as `promtool test rules` input: a used-space alert gets its metric exactly at the
 * threshold (fires after its `for`) and half a percent below (silent); a state alert gets the bad
 * state and the good one. The expected labels and annotations are derived from the same inputs
 * (labels of the series the expression keeps, the annotation templates rendered with them), so a
 * changed expression, label or text fails here.
 */
import { AlertRule } from "../../components/monitoring/rules";

export interface InputSeries {
    series: string;
    values: string;
}

export interface AlertCase {
    /** The series in which the alert fires (at the threshold, or in the bad state). */
    fire: InputSeries[];
    /** The series in which it stays silent (just below, or the good state). */
    quiet: InputSeries[];
    /** Labels of each firing alert besides the rule's own (one entry per expected alert). */
    alerts: Array<{ labels: Record<string, string>; value: number }>;
}

/** What an alert's case needs to know of its storage. */
export interface CaseContext {
    namespace: string;
    storage: string;
    /** For a used-space alert: the threshold it fires at (percent). */
    threshold?: number;
    /** For a forecast alert: hours ahead. */
    forecastHours?: number;
    /** Names of the workloads a not-ready alert watches. */
    workloads?: string[];
    /** Number of mons (quorum alerts). */
    mons?: number;
}

const minutes = 100;
const steady = (v: number) => `${v}x${minutes}`;
export const labelText = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",");
const series = (metric: string, labels: Record<string, string>, values: string): InputSeries => ({ series: `${metric}{${labelText(labels)}}`, values });

/**
 * The largest value of f(x) = percent, for a metric value x found by nudging: Prometheus computes in
 * float64 like JS, so the value found here makes the expression land exactly at or above the
 * threshold, not a rounding below it.
 */
function atLeast(percentOf: (x: number) => number, threshold: number, start: number, step: number): number {
    let x = start;
    for (let i = 0; i < 1000 && percentOf(x) < threshold; i++) {
        x += step;
    }
    if (percentOf(x) < threshold) {
        throw new Error(`no value reaches ${threshold}`);
    }
    return x;
}

/** A growing used share for the forecast: 50% at the start, +0.1 per minute (6 per hour). */
const growth = { start: 50, perMinute: 0.1 };
const growingValues = (toMetric: (percent: number) => number) =>
    Array.from({ length: minutes + 1 }, (_, m) => toMetric(growth.start + growth.perMinute * m)).join(" ");

/** The forecast at minute `m`: the line's value `hours` later (predict_linear of a straight line). */
export function forecastAt(m: number, hours: number): number {
    return growth.start + growth.perMinute * (m + hours * 60);
}

interface UsedShape {
    /** Series for a used share in percent (fixed). */
    at(percent: number): InputSeries[];
    /** Series growing as `growth` (forecast). */
    growing(): InputSeries[];
    /** The used share the expression computes from a percent written by `at`. */
    computed(percent: number): number;
    /** Labels the expression keeps. */
    labels: Record<string, string>;
}

const size = 1e12;

export function volumeGroupShape(storage: string): UsedShape {
    const on = { device_class: storage, node: "node1" };
    const available = (p: number) => atLeast((a) => (1 - a / size) * 100, p, Math.round(size * (1 - p / 100)) + 1000, -1);
    return {
        at: (p) => [series("topolvm_volumegroup_available_bytes", on, steady(available(p))), series("topolvm_volumegroup_size_bytes", on, steady(size))],
        growing: () => [series("topolvm_volumegroup_available_bytes", on, growingValues((p) => Math.round(size * (1 - p / 100)))), series("topolvm_volumegroup_size_bytes", on, steady(size))],
        computed: (p) => (1 - available(p) / size) * 100,
        labels: on,
    };
}

export function thinPoolShape(storage: string, part: "data" | "metadata"): UsedShape {
    const on = { device_class: storage, node: "node1" };
    const metric = `topolvm_thinpool_${part}_percent`;
    return {
        at: (p) => [series(metric, on, steady(p))],
        growing: () => [series(metric, on, growingValues((p) => p))],
        computed: (p) => p,
        labels: on,
    };
}

export function cephPoolShape(storage: string): UsedShape {
    const pool = { storage, pool_id: "2" };
    const ratio = (p: number) => atLeast((r) => r * 100 * 1, p, p / 100, 1e-15);
    const metadata = series("ceph_pool_metadata", { ...pool, name: `${storage}-data` }, steady(1));
    return {
        at: (p) => [series("ceph_pool_percent_used", pool, steady(ratio(p))), metadata],
        growing: () => [series("ceph_pool_percent_used", pool, growingValues((p) => p / 100)), metadata],
        computed: (p) => ratio(p) * 100 * 1,
        labels: { ...pool, name: `${storage}-data` },
    };
}

export function volumeShape(storageClass: string): UsedShape {
    const claim = { namespace: "apps", persistentvolumeclaim: "data-0" };
    const used = (p: number) => atLeast((u) => (u / size) * 100 * 1, p, Math.round((size * p) / 100) - 1000, 1);
    const info = series("kube_persistentvolumeclaim_info", { ...claim, storageclass: storageClass, volumename: "pvc-1" }, steady(1));
    return {
        at: (p) => [series("kubelet_volume_stats_used_bytes", { ...claim, node: "node1" }, steady(used(p))), series("kubelet_volume_stats_capacity_bytes", { ...claim, node: "node1" }, steady(size)), info],
        growing: () => [
            series("kubelet_volume_stats_used_bytes", { ...claim, node: "node1" }, growingValues((p) => Math.round((size * p) / 100))),
            series("kubelet_volume_stats_capacity_bytes", { ...claim, node: "node1" }, steady(size)),
            info,
        ],
        computed: (p) => (used(p) / size) * 100 * 1,
        labels: claim,
    };
}

/** Filling (warning), Full (critical) and FullSoon (forecast) cases of one used-space shape. */
export function usedCase(shape: UsedShape, kind: "threshold" | "forecast", ctx: CaseContext): AlertCase {
    if (kind === "forecast") {
        return { fire: shape.growing(), quiet: shape.at(growth.start + 6), alerts: [{ labels: shape.labels, value: NaN }] };
    }
    const t = ctx.threshold!;
    return { fire: shape.at(t), quiet: shape.at(t - 0.5), alerts: [{ labels: shape.labels, value: shape.computed(t) }] };
}

export function workloadCase(metric: string, label: "daemonset" | "deployment", ctx: CaseContext): AlertCase {
    const names = [...ctx.workloads!].sort();
    const of = (v: number) => names.map((name) => series(metric, { namespace: ctx.namespace, [label]: name }, steady(v)));
    return { fire: of(1), quiet: of(0), alerts: names.map((name) => ({ labels: { namespace: ctx.namespace, [label]: name }, value: 1 })) };
}

/** A series that is there in the bad state with value `bad` and in the good one with `good`. */
export function stateCase(metric: string, labels: Record<string, string>, bad: number, good: number, kept: Record<string, string> = labels, value = bad): AlertCase {
    return { fire: [series(metric, labels, steady(bad))], quiet: [series(metric, labels, steady(good))], alerts: [{ labels: kept, value }] };
}

/**
 * The series is missing (fires) or there (silent). Every other storage's series of its kind is
 * there all along: the alert names this storage alone, not whatever else lacks data.
 */
export function absentCase(metric: string, labels: Record<string, string>, others: InputSeries[]): AlertCase {
    return { fire: others, quiet: [...others, series(metric, labels, steady(1))], alerts: [{ labels, value: 1 }] };
}

export function presentSeries(metric: string, labels: Record<string, string>): InputSeries {
    return series(metric, labels, steady(1));
}

/**
 * A rule's annotation rendered as Prometheus renders it for one alert: `{{ $labels.x }}`,
 * `{{ $value }}` (Go's shortest float form) and `{{ $value | printf "%.<n>f" }}`.
 */
export function renderTemplate(text: string, labels: Record<string, string>, value: number): string {
    return text
        .replace(/\{\{ \$value \| printf "%\.(\d)f" \}\}/g, (_, digits: string) => value.toFixed(Number(digits)))
        .replace(/\{\{ \$value \}\}/g, () => String(value))
        .replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, name: string) => labels[name] ?? "");
}

/** The annotations promtool must see on one alert of `rule`. */
export function expectedAnnotations(rule: AlertRule, labels: Record<string, string>, value: number): Record<string, string> {
    return Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, renderTemplate(v as string, labels, value)]));
}

/** Go's time.Duration text of a rule's `for` in minutes. */
export function forMinutes(rule: AlertRule): number {
    const m = /^(\d+)([mh])$/.exec(rule.for);
    if (!m) {
        throw new Error(`unexpected for: ${rule.for}`);
    }
    return Number(m[1]) * (m[2] === "h" ? 60 : 1);
}
