import { ScrapeTarget } from "./targets";

/**
 * How Prometheus finds a ScrapeTarget: as a ServiceMonitor's spec (Prometheus Operator) and as a
 * plain `scrape_configs` entry (kubernetes_sd_configs over the Service's endpoints). Both keep only
 * the target's Service and its metrics ports, and add the same labels, so rules and dashboards
 * read the same series either way.
 */

/** The port name of a target whose pods serve one metrics endpoint. */
export const metricsPortName = "metrics";

/** The label that tells a metrics Service apart: its value is the Service's name. */
export const metricsServiceLabel = "storage.zcloud.io/metrics";

export function metricsServiceLabels(t: ScrapeTarget): Record<string, string> {
    return { [metricsServiceLabel]: t.service };
}
export const scrapeInterval = "30s";

/** The labels both ways add: namespace, service, pod, and storage for a storage's own target. */
export function serviceMonitorSpec(t: ScrapeTarget, namespace: string): Record<string, unknown> {
    return {
        selector: { matchLabels: metricsServiceLabels(t) },
        namespaceSelector: { matchNames: [namespace] },
        endpoints: t.ports.map((p) => ({
            port: p.name,
            path: t.path,
            interval: scrapeInterval,
            honorLabels: t.honorLabels,
            ...(t.storage ? { relabelings: [{ targetLabel: "storage", replacement: t.storage, action: "replace" }] } : {}),
        })),
    };
}

export function scrapeConfig(t: ScrapeTarget, namespace: string): Record<string, unknown> {
    return {
        job_name: `${namespace}/${t.service}`,
        scrape_interval: scrapeInterval,
        metrics_path: t.path,
        honor_labels: t.honorLabels,
        kubernetes_sd_configs: [{ role: "endpoints", namespaces: { names: [namespace] } }],
        relabel_configs: [
            { source_labels: ["__meta_kubernetes_service_name"], regex: t.service, action: "keep" },
            { source_labels: ["__meta_kubernetes_endpoint_port_name"], regex: t.ports.map((p) => p.name).join("|"), action: "keep" },
            { source_labels: ["__meta_kubernetes_namespace"], target_label: "namespace" },
            { source_labels: ["__meta_kubernetes_service_name"], target_label: "service" },
            { source_labels: ["__meta_kubernetes_pod_name"], target_label: "pod" },
            ...(t.storage ? [{ target_label: "storage", replacement: t.storage }] : []),
        ],
    };
}
