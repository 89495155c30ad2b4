import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";
import { MonitoringConfig } from "../config/monitoring";
import { commonLabels } from "../naming";
import { metricsPortName, metricsServiceLabels, scrapeConfig, serviceMonitorSpec } from "./scrape";
import { ScrapeTarget } from "./targets";
import { TypeMonitoring } from "./typeMonitoring";

export interface StackMonitoringArgs {
    /** The storage namespace (its Output, so every object waits for the Namespace). */
    namespace: pulumi.Output<string>;
    /** The namespace's name as configured: scrape configs and ServiceMonitors name it. */
    namespaceName: string;
    config: MonitoringConfig;
    /** Storage type -> what monitoring watches of it (only types with storages or a driver here). */
    types: Record<string, TypeMonitoring>;
}

/** Names of the monitoring objects: fixed, so a user's Prometheus and Grafana can find them. */
export const monitoringNames = {
    prometheusRule: (type: string) => `zcloud-storage-${type}`,
    dashboard: (type: string) => `zcloud-storage-dashboard-${type}`,
    /** Without the Prometheus Operator: the rule file and scrape configs, for a Prometheus set up by hand. */
    prometheusFiles: "zcloud-storage-prometheus",
    rulesFile: "zcloud-storage-rules.yaml",
    scrapeFile: "zcloud-storage-scrape.yaml",
    dashboardFile: (type: string) => `zcloud-storage-${type}.json`,
};

const monitoringApi = "monitoring.coreos.com/v1";

/** The whole rule file of a stack (every type's groups), as Prometheus loads it. */
export function ruleFile(types: Record<string, TypeMonitoring>): string {
    return yaml.dump({ groups: Object.values(types).flatMap((t) => t.groups) }, { lineWidth: -1, noRefs: true });
}

/** The `scrape_configs` of a stack, for a Prometheus without the Operator. */
export function scrapeFile(types: Record<string, TypeMonitoring>, namespace: string): string {
    const configs = Object.values(types).flatMap((t) => t.targets.map((target) => scrapeConfig(target, namespace)));
    return yaml.dump({ scrape_configs: configs }, { lineWidth: -1, noRefs: true });
}

/**
 * Monitoring of a stack's storages (zcloud-storage:monitoring): a metrics Service per endpoint,
 * then either ServiceMonitor and PrometheusRule objects (Prometheus Operator) or one ConfigMap
 * with a rule file and scrape configs; and a Grafana dashboard ConfigMap per storage type.
 * Nothing here touches a daemon: turning monitoring on or off leaves every storage as it is.
 */
export class StackMonitoring extends pulumi.ComponentResource {
    readonly services: k8s.core.v1.Service[];

    constructor(name: string, args: StackMonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:Monitoring", name, {}, opts);
        const child = { parent: this };
        const { namespace, config } = args;
        const labels = (component: string) => commonLabels(component);
        const targets = Object.values(args.types).flatMap((t) => t.targets);
        this.services = targets.map((t) => this.metricsService(t, namespace, child));

        if (config.prometheusOperator) {
            targets.forEach((t, i) => {
                new k8s.apiextensions.CustomResource(
                    `${t.service}-servicemonitor`,
                    {
                        apiVersion: monitoringApi,
                        kind: "ServiceMonitor",
                        metadata: { name: t.service, namespace, labels: { ...labels("servicemonitor"), ...config.labels } },
                        spec: serviceMonitorSpec(t, args.namespaceName),
                    },
                    { ...child, dependsOn: [this.services[i]] },
                );
            });
            for (const [type, t] of Object.entries(args.types)) {
                new k8s.apiextensions.CustomResource(
                    `${type}-prometheusrule`,
                    {
                        apiVersion: monitoringApi,
                        kind: "PrometheusRule",
                        metadata: { name: monitoringNames.prometheusRule(type), namespace, labels: { ...labels("alerts"), ...config.labels } },
                        spec: { groups: t.groups },
                    },
                    child,
                );
            }
        } else {
            new k8s.core.v1.ConfigMap(
                "prometheus-files",
                {
                    metadata: { name: monitoringNames.prometheusFiles, namespace, labels: labels("alerts") },
                    data: {
                        [monitoringNames.rulesFile]: ruleFile(args.types),
                        [monitoringNames.scrapeFile]: scrapeFile(args.types, args.namespaceName),
                    },
                },
                child,
            );
        }

        if (config.dashboards) {
            for (const [type, t] of Object.entries(args.types)) {
                new k8s.core.v1.ConfigMap(
                    `${type}-dashboard`,
                    {
                        metadata: { name: monitoringNames.dashboard(type), namespace, labels: { ...labels("dashboard"), ...config.dashboards.labels } },
                        data: { [monitoringNames.dashboardFile(type)]: JSON.stringify(t.dashboard, null, 1) },
                    },
                    child,
                );
            }
        }
        this.registerOutputs({ services: this.services.map((s) => s.metadata.name) });
    }

    private metricsService(t: ScrapeTarget, namespace: pulumi.Output<string>, opts: pulumi.CustomResourceOptions): k8s.core.v1.Service {
        return new k8s.core.v1.Service(
            t.service,
            {
                metadata: { name: t.service, namespace, labels: { ...commonLabels("metrics", t.storage), ...metricsServiceLabels(t) } },
                spec: {
                    selector: t.podSelector,
                    ports: [{ name: metricsPortName, port: t.port, targetPort: t.port, protocol: "TCP" }],
                },
            },
            opts,
        );
    }
}
