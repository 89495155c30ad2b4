import * as yaml from "js-yaml";
import { PlannedResource } from "./model";

/**
 * `--out`'s Prometheus files (docs/monitoring.md): without the Operator, the rule files and scrape
 * configs the ConfigMaps `zcloud-storage-rules-<storage>` and `zcloud-storage-driver-rules-<driver>`
 * carry, as files a Prometheus loads; with the Operator, the PrometheusRules' groups as one rule
 * file (for `promtool check rules` in review).
 */
export const prometheusDir = "prometheus";
const filesConfigMap = /^zcloud-storage-(driver-)?rules-[a-z0-9-]+$/;
const reviewRulesFile = "zcloud-storage-rules.yaml";

export function prometheusFiles(resources: PlannedResource[]): Array<{ path: string; text: string }> {
    const configMaps = resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && filesConfigMap.test(String((r.inputs.metadata as { name?: string } | undefined)?.name)));
    if (configMaps.length) {
        return configMaps
            .flatMap((r) => Object.entries((r.inputs.data ?? {}) as Record<string, unknown>))
            .filter(([key, text]) => typeof text === "string" && /^[A-Za-z0-9._-]+\.yaml$/.test(key))
            .map(([key, text]) => ({ path: `${prometheusDir}/${key}`, text: text as string }))
            .sort((a, b) => a.path.localeCompare(b.path));
    }
    const groups = resources
        .filter((r) => r.type === "kubernetes:monitoring.coreos.com/v1:PrometheusRule")
        .flatMap((r) => ((r.inputs.spec as { groups?: unknown[] } | undefined)?.groups ?? []) as unknown[]);
    return groups.length ? [{ path: `${prometheusDir}/${reviewRulesFile}`, text: yaml.dump({ groups }, { lineWidth: -1, noRefs: true }) }] : [];
}
