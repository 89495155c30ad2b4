import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";
import { MonitoringConfig } from "../config/monitoring";
import { commonLabels } from "../naming";
import { metricsServiceLabels, scrapeConfig, serviceMonitorSpec } from "./scrape";
import { Owner, RuleGroup } from "./rules";
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

/**
 * Names of the monitoring objects: fixed, and per storage or driver, so that stacks sharing the
 * storage namespace (docs/splitting-stacks.md) never make one object twice. Storage names are
 * StorageClass names, unique in the cluster; the prefixes keep a storage from taking a driver's.
 */
export const monitoringNames = {
    prometheusRule: (o: Owner) => ("storage" in o ? `zcloud-storage-alerts-${o.storage}` : `zcloud-storage-driver-${o.driver}`),
    /** Without the Prometheus Operator: a rule file (and scrape configs) per storage or driver, for a Prometheus set up by hand. */
    prometheusFiles: (o: Owner) => ("storage" in o ? `zcloud-storage-rules-${o.storage}` : `zcloud-storage-driver-rules-${o.driver}`),
    rulesFile: (o: Owner) => `${monitoringNames.prometheusFiles(o)}.yaml`,
    scrapeFile: (o: Owner) => ("storage" in o ? `zcloud-storage-scrape-${o.storage}.yaml` : `zcloud-storage-driver-scrape-${o.driver}.yaml`),
    /** Made by the stack that deploys the type's driver: its storage list comes from the metrics. */
    dashboard: (type: string) => `zcloud-storage-dashboard-${type}`,
    dashboardFile: (type: string) => `zcloud-storage-${type}.json`,
};

const monitoringApi = "monitoring.coreos.com/v1";

/** Whose alerts, rules and scrape targets these are: one storage's or one driver's. */
export interface MonitoringUnit {
    owner: Owner;
    group: RuleGroup;
    targets: ScrapeTarget[];
}

/** A group's owner: its rules' storage or driver label (a group holds one owner's rules). */
function ownerOf(group: RuleGroup): Owner {
    const labels = group.rules[0]?.labels as Partial<{ storage: string; driver: string }> | undefined;
    if (labels?.storage !== undefined) return { storage: labels.storage };
    if (labels?.driver !== undefined) return { driver: labels.driver };
    throw new Error(`rule group ${group.name} has no rule with a storage or driver label`);
}

/** Every type's groups and targets by owner: a storage's target goes with its storage, a driver's with the type's driver. */
export function monitoringUnits(types: Record<string, TypeMonitoring>): MonitoringUnit[] {
    return Object.values(types).flatMap((t) => {
        const units = t.groups.map((group) => ({ owner: ownerOf(group), group, targets: [] as ScrapeTarget[] }));
        for (const target of t.targets) {
            const unit = units.find((u) => (target.storage === undefined ? "driver" in u.owner : "storage" in u.owner && u.owner.storage === target.storage));
            if (!unit) {
                throw new Error(`metrics Service ${target.service} belongs to no storage or driver of its type`);
            }
            unit.targets.push(target);
        }
        return units;
    });
}

/** A rule file of groups, as Prometheus loads it. */
export function groupsFile(groups: RuleGroup[]): string {
    return yaml.dump({ groups }, { lineWidth: -1, noRefs: true });
}

/** The whole rule file of a stack: every type's groups. */
export function ruleFile(types: Record<string, TypeMonitoring>): string {
    return groupsFile(Object.values(types).flatMap((t) => t.groups));
}

/** `scrape_configs` of targets, for a Prometheus without the Operator. */
export function scrapeFile(targets: ScrapeTarget[], namespace: string): string {
    return yaml.dump({ scrape_configs: targets.map((target) => scrapeConfig(target, namespace)) }, { lineWidth: -1, noRefs: true });
}

/**
 * Monitoring of a stack's storages (zcloud-storage:monitoring): a metrics Service per endpoint,
 * then either ServiceMonitors and a PrometheusRule per storage and driver (Prometheus Operator) or
 * a ConfigMap per storage and driver with its rule file and scrape configs; and, where the stack
 * deploys a type's driver, a Grafana dashboard ConfigMap for the type.
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

        const units = monitoringUnits(args.types);
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
            for (const u of units) {
                const name = monitoringNames.prometheusRule(u.owner);
                new k8s.apiextensions.CustomResource(
                    name,
                    {
                        apiVersion: monitoringApi,
                        kind: "PrometheusRule",
                        metadata: { name, namespace, labels: { ...labels("alerts"), ...config.labels } },
                        spec: { groups: [u.group] },
                    },
                    child,
                );
            }
        } else {
            for (const u of units) {
                const name = monitoringNames.prometheusFiles(u.owner);
                new k8s.core.v1.ConfigMap(
                    name,
                    {
                        metadata: { name, namespace, labels: labels("alerts") },
                        data: {
                            [monitoringNames.rulesFile(u.owner)]: groupsFile([u.group]),
                            ...(u.targets.length ? { [monitoringNames.scrapeFile(u.owner)]: scrapeFile(u.targets, args.namespaceName) } : {}),
                        },
                    },
                    child,
                );
            }
        }

        if (config.dashboards) {
            for (const [type, t] of Object.entries(args.types).filter(([, t]) => t.dashboard !== undefined)) {
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
                    ports: t.ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.port, protocol: "TCP" })),
                },
            },
            opts,
        );
    }
}
