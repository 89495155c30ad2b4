import { dig, Finding, listText, obj, PlannedResource, PolicyParams, str } from "../model";
import { STORAGE_CLASS_TYPE } from "./single-default-class";

export const PROMETHEUS_RULE_TYPE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule";
const CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap";

/** The first pattern that matches the whole stack name, or undefined. */
export function productionPattern(stack: string, patterns: readonly string[]): string | undefined {
    return patterns.find((p) => {
        const re = new RegExp(`^${p.split("*").map((part) => part.replace(/[.]/g, "\\.")).join(".*")}$`);
        return re.test(stack);
    });
}

/** The stack a URN belongs to: `urn:pulumi:<stack>::<project>::...`. */
export function stackOfUrn(urn: string): string | undefined {
    const m = /^urn:pulumi:([^:]+)::/.exec(urn);
    return m ? m[1] : undefined;
}

/** Alert rules of the program: PrometheusRule objects, or the rule-file ConfigMaps without the Operator. */
function isAlertRules(r: PlannedResource): boolean {
    if (r.type === PROMETHEUS_RULE_TYPE) {
        return true;
    }
    const labels = obj(dig(r.props, "metadata", "labels")) ?? {};
    return (
        r.type === CONFIG_MAP_TYPE &&
        str(labels["app.kubernetes.io/managed-by"]) === "zcloud-storage" &&
        str(labels["app.kubernetes.io/component"]) === "alerts"
    );
}

/**
 * storage-monitoring-on: a production stack (by name, see productionStacks) that deploys
 * StorageClasses deploys alert rules too.
 */
export function checkMonitoringOn(resources: PlannedResource[], params: Pick<PolicyParams, "productionStacks">): Finding[] {
    const classes = resources.filter((r) => r.type === STORAGE_CLASS_TYPE);
    if (classes.length === 0 || resources.some(isAlertRules)) {
        return [];
    }
    const stack = stackOfUrn(classes[0].urn);
    const pattern = stack === undefined ? undefined : productionPattern(stack, params.productionStacks);
    if (stack === undefined || pattern === undefined) {
        return [];
    }
    const names = classes.map((r) => `'${str(dig(r.props, "metadata", "name")) ?? r.name}'`);
    return [
        {
            message:
                `Stack '${stack}' deploys ${names.length === 1 ? "StorageClass" : "StorageClasses"} ${listText(names)} with monitoring off: ` +
                "no alert tells anyone when a volume group or thin pool fills, a Ceph mon leaves the quorum, an OSD goes down or a driver pod stops. " +
                "Turn it on with zcloud-storage:monitoring in the stack config (docs/monitoring.md). " +
                `The pack counts this stack as production because its name matches '${pattern}' in this policy's productionStacks parameter.`,
        },
    ];
}
