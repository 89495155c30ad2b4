import type { Dashboard as GrafanaDashboard, Panel as GrafanaPanel } from "@grafana/schema";
import { volumeUsedPercent } from "./rules";

/**
 * Grafana dashboards as plain JSON (schemaVersion 39, the dashboard model Grafana 10 and later
 * load): a datasource variable, a storage variable whose values a Prometheus query lists (every
 * storage of the type in the cluster, whichever stack made it), and time series panels whose
 * queries take `$storage`.
 */

export interface PanelQuery {
    expr: string;
    legend: string;
}

export interface PanelSpec {
    title: string;
    /** Grafana unit: percent, bytes, short, none, ops (per second), s (seconds). */
    unit: "percent" | "bytes" | "short" | "none" | "ops" | "s";
    queries: PanelQuery[];
    description?: string;
}

export interface Dashboard {
    uid: string;
    title: string;
    tags: string[];
    [key: string]: unknown;
}

/** Every dashboard's panel of the storages' persistent volumes (kubelet volume stats). */
export const volumesPanel: PanelSpec = { title: "Volumes used", unit: "percent", queries: [{ expr: volumeUsedPercent("~$storage"), legend: "{{namespace}}/{{persistentvolumeclaim}}" }] };

const datasource = { type: "prometheus", uid: "${datasource}" };
const panelWidth = 12;
const panelHeight = 8;

/** One time series panel; checked against Grafana's own dashboard schema types (@grafana/schema). */
function panel(spec: PanelSpec, id: number): GrafanaPanel {
    const column = (id - 1) % 2;
    const row = Math.floor((id - 1) / 2);
    return {
        id,
        type: "timeseries",
        title: spec.title,
        ...(spec.description ? { description: spec.description } : {}),
        datasource,
        gridPos: { h: panelHeight, w: panelWidth, x: column * panelWidth, y: row * panelHeight },
        fieldConfig: { defaults: { unit: spec.unit, ...(spec.unit === "percent" ? { min: 0, max: 100 } : {}) }, overrides: [] },
        options: { legend: { displayMode: "list", placement: "bottom", showLegend: true }, tooltip: { mode: "multi", sort: "none" } },
        targets: spec.queries.map((q, i) => ({ datasource, expr: q.expr, legendFormat: q.legend, refId: String.fromCharCode(65 + i) })),
    } satisfies GrafanaPanel;
}

/** One dashboard: `storages` is the label_values query that lists its `storage` variable's values. */
export function dashboard(uid: string, title: string, storages: string, panels: PanelSpec[]): Dashboard {
    const model = {
        uid,
        title,
        tags: ["zcloud-storage"],
        editable: false,
        schemaVersion: 39,
        version: 1,
        time: { from: "now-6h", to: "now" },
        refresh: "1m",
        timezone: "browser",
        templating: {
            list: [
                { name: "datasource", label: "Data source", type: "datasource", query: "prometheus", current: { text: "default", value: "default" }, hide: 0 },
                {
                    name: "storage",
                    label: "Storage",
                    type: "query",
                    datasource,
                    query: storages,
                    // Refreshed when the dashboard loads: storages come and go.
                    refresh: 1,
                    sort: 1,
                    multi: true,
                    includeAll: true,
                    current: { text: ["All"], value: ["$__all"] },
                    options: [],
                    hide: 0,
                },
            ],
        },
        annotations: { list: [] },
        panels: panels.map((p, i) => panel(p, i + 1)),
    } satisfies GrafanaDashboard;
    return model;
}
