import * as yaml from "js-yaml";
import { PlannedResource } from "./model";

/**
 * `--out`'s Prometheus files (docs/monitoring.md): without the Operator, the rule file and scrape
 * configs the ConfigMap `zcloud-storage-prometheus` carries, as files a Prometheus loads; with the
 * Operator, the PrometheusRules' groups as one rule file (for `promtool check rules` in review).
 */
export const prometheusDir = "prometheus";
const filesConfigMap = "zcloud-storage-prometheus";
const rulesFile = "zcloud-storage-rules.yaml";

export function prometheusFiles(resources: PlannedResource[]): Array<{ path: string; text: string }> {
    const configMap = resources.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && (r.inputs.metadata as { name?: string } | undefined)?.name === filesConfigMap);
    if (configMap) {
        const data = (configMap.inputs.data ?? {}) as Record<string, unknown>;
        return Object.keys(data)
            .sort()
            .filter((key) => typeof data[key] === "string" && /^[A-Za-z0-9._-]+\.yaml$/.test(key))
            .map((key) => ({ path: `${prometheusDir}/${key}`, text: data[key] as string }));
    }
    const groups = resources
        .filter((r) => r.type === "kubernetes:monitoring.coreos.com/v1:PrometheusRule")
        .flatMap((r) => ((r.inputs.spec as { groups?: unknown[] } | undefined)?.groups ?? []) as unknown[]);
    return groups.length ? [{ path: `${prometheusDir}/${rulesFile}`, text: yaml.dump({ groups }, { lineWidth: -1, noRefs: true }) }] : [];
}
