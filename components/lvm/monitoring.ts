import { AlertThresholds } from "../config/monitoring";
import { LvmConfig } from "../config/model";
import { MonitoringContext } from "../monitoring/context";
import { dashboard, PanelSpec, volumesPanel } from "../monitoring/dashboards";
import { AlertSpec, alertRule, csiOperationAlerts, RuleGroup, selector, usedAlerts, volumeAlerts, workloadAlerts } from "../monitoring/rules";
import { metricsPortName } from "../monitoring/scrape";
import { ScrapeTarget } from "../monitoring/targets";
import { TypeMonitoring } from "../monitoring/typeMonitoring";
import { topolvmControllerLabels, topolvmControllerMetricsPort, topolvmNodeLabels, topolvmNodeMetricsPort, topolvmSidecarHttpPorts } from "./topolvm";

/**
 * LVM: topolvm-node serves each node's volume group and thin pool gauges (labels device_class,
 * the storage's name, and node); the alerts of a storage read its device class.
 */

const driver = { driver: "topolvm" };

export const topolvmMetricsTarget: ScrapeTarget = {
    service: "topolvm-node-metrics",
    podSelector: topolvmNodeLabels,
    ports: [{ name: metricsPortName, port: topolvmNodeMetricsPort }],
    path: "/metrics",
    // Its series carry their own `node` label (the node the VG is on).
    honorLabels: true,
};

/** The controller Deployment runs the snapshotter sidecar only when some LVM storage takes snapshots. */
export function topolvmSnapshots(storages: LvmConfig[]): boolean {
    return storages.some((s) => s.thin?.snapshots === true);
}

/** The controller pods' metrics Service (its name is also the `service` label of their series). */
export const topolvmControllerMetricsService = "topolvm-controller-metrics";

/**
 * The controller pods: topolvm-controller's own metrics and each CSI sidecar's (its
 * --http-endpoint), whose csi_sidecar_operations_seconds counts every CSI call by its gRPC status.
 */
export function topolvmControllerMetricsTarget(snapshots: boolean): ScrapeTarget {
    return {
        service: topolvmControllerMetricsService,
        podSelector: topolvmControllerLabels,
        ports: [
            { name: metricsPortName, port: topolvmControllerMetricsPort },
            { name: "provisioner", port: topolvmSidecarHttpPorts.provisioner },
            { name: "resizer", port: topolvmSidecarHttpPorts.resizer },
            ...(snapshots ? [{ name: "snapshotter", port: topolvmSidecarHttpPorts.snapshotter }] : []),
        ],
        path: "/metrics",
        honorLabels: false,
    };
}

const deviceClass = (storage: string) => ({ device_class: storage });

/** The used share of each node's volume group (not thin: a thin storage's VG holds its pool). */
export function volumeGroupUsedPercent(storage: string): string {
    const m = deviceClass(storage);
    return `(1 - ${selector("topolvm_volumegroup_available_bytes", m)} / ${selector("topolvm_volumegroup_size_bytes", m)}) * 100`;
}

export function thinPoolPercent(storage: string, part: "data" | "metadata"): string {
    return selector(`topolvm_thinpool_${part}_percent`, deviceClass(storage));
}

export function lvmStorageAlerts(s: LvmConfig, t: AlertThresholds, namespace: string): AlertSpec[] {
    const where = "on {{ $labels.node }}";
    const capacity = s.thin
        ? [
              ...usedAlerts({ stem: "LvmThinPoolData", usedPercent: thinPoolPercent(s.name, "data"), threshold: t.thinPoolDataUsed, what: `thin pool data of ${s.name} ${where}`, forecastHours: t.fillForecastHours }),
              // Metadata on its own thresholds, whatever the data share: a pool of many small
              // volumes or snapshots fills its metadata first, and a full metadata stops the pool.
              ...usedAlerts({ stem: "LvmThinPoolMetadata", usedPercent: thinPoolPercent(s.name, "metadata"), threshold: t.thinPoolMetadataUsed, what: `thin pool metadata of ${s.name} ${where}`, forecastHours: t.fillForecastHours }),
          ]
        : usedAlerts({ stem: "LvmVolumeGroup", usedPercent: volumeGroupUsedPercent(s.name), threshold: t.volumeGroupUsed, what: `volume group of ${s.name} ${where}`, forecastHours: t.fillForecastHours });
    return [
        ...capacity,
        {
            alert: "LvmMetricsAbsent",
            expr: `absent(${s.thin ? thinPoolPercent(s.name, "data") : selector("topolvm_volumegroup_size_bytes", deviceClass(s.name))})`,
            for: "15m",
            severity: "warning",
            summary: `no node reports the ${s.thin ? "thin pool" : "volume group"} of ${s.name}`,
            description: `No node has reported the ${s.thin ? "thin pool" : "volume group"} of ${s.name} for 15 minutes, so its capacity alerts cannot fire. Check that topolvm-node runs on the storage's nodes and that Prometheus scrapes the Service topolvm-node-metrics.`,
        },
        ...workloadAlerts("Lvm", `LVM storage ${s.name}`, namespace, [{ kind: "DaemonSet", name: `lvmd-${s.name}` }]),
        ...volumeAlerts(s.name, t),
    ];
}

function groups(storages: LvmConfig[], ctx: MonitoringContext): RuleGroup[] {
    const perStorage = storages.map((s) => ({
        name: `zcloud-storage.lvm.${s.name}`,
        rules: lvmStorageAlerts(s, s.alerts!, ctx.namespace).map((a) => alertRule({ storage: s.name }, a, ctx.runbookBaseUrl)),
    }));
    const driverGroup = ctx.ownsDriver
        ? [
              {
                  name: "zcloud-storage.lvm.topolvm",
                  rules: [
                      ...workloadAlerts("Topolvm", "TopoLVM", ctx.namespace, [
                          { kind: "DaemonSet", name: "topolvm-node" },
                          { kind: "Deployment", name: "topolvm-controller" },
                      ]),
                      ...csiOperationAlerts("Topolvm", "TopoLVM", ctx.namespace, topolvmControllerMetricsService),
                  ].map((a) => alertRule(driver, a, ctx.runbookBaseUrl)),
              },
          ]
        : [];
    return [...driverGroup, ...perStorage];
}

export function lvmMonitoring(storages: LvmConfig[], ctx: MonitoringContext): TypeMonitoring {
    return {
        targets: ctx.ownsDriver ? [topolvmMetricsTarget, topolvmControllerMetricsTarget(topolvmSnapshots(storages))] : [],
        groups: groups(storages, ctx),
        ...(ctx.ownsDriver ? { dashboard: lvmDashboard() } : {}),
    };
}

/** The LVM dashboard: every device class topolvm-node reports (each LVM storage's). */
function lvmDashboard() {
    const vg = (m: string) => selector(m, { device_class: "~$storage" });
    const perNode = (title: string, unit: PanelSpec["unit"], expr: string): PanelSpec => ({ title, unit, queries: [{ expr, legend: "{{device_class}} {{node}}" }] });
    return dashboard("zcloud-storage-lvm", "zcloud-storage / LVM", "label_values(topolvm_volumegroup_size_bytes, device_class)", [
        perNode("Volume group used", "percent", `(1 - ${vg("topolvm_volumegroup_available_bytes")} / ${vg("topolvm_volumegroup_size_bytes")}) * 100`),
        perNode("Volume group free", "bytes", vg("topolvm_volumegroup_available_bytes")),
        perNode("Thin pool data used", "percent", vg("topolvm_thinpool_data_percent")),
        volumesPanel,
        perNode("Thin pool metadata used", "percent", vg("topolvm_thinpool_metadata_percent")),
    ]);
}
