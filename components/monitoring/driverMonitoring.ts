import { AlertThresholds } from "../config/monitoring";
import { MonitoringContext } from "./context";
import { dashboard, PanelSpec, volumesPanel } from "./dashboards";
import { alertRule, promString, RuleGroup, volumeAlerts, workloadAlerts } from "./rules";
import { WatchedWorkload } from "./targets";
import { TypeMonitoring } from "./typeMonitoring";

/**
 * Monitoring of a type whose only metrics are the kubelets' volume stats (NFS, iSCSI): each
 * storage's volumes filling, its driver's pods not ready, and a dashboard of volume use.
 */
export interface DriverMonitoringArgs {
    type: string;
    /** For titles and texts, e.g. "NFS". */
    title: string;
    /** Alert name stem of the driver's alerts, e.g. CsiDriverNfs. */
    stem: string;
    /** The driver's label value on its alerts, e.g. csi-driver-nfs. */
    driver: string;
    workloads: WatchedWorkload[];
    /** The CSI driver's name (StorageClass provisioner): the dashboard lists the type's StorageClasses by it. */
    provisioner: string;
    /** Panels of the type's own metrics, before the volume panel. */
    panels?: PanelSpec[];
}

/** A CSI driver as this project deploys it: DaemonSet `<driver>-node`, Deployment `<driver>-controller`. */
export function csiDriverWorkloads(driver: string): WatchedWorkload[] {
    return [
        { kind: "DaemonSet", name: `${driver}-node` },
        { kind: "Deployment", name: `${driver}-controller` },
    ];
}

export function driverMonitoring(a: DriverMonitoringArgs, storages: Array<{ name: string; alerts?: AlertThresholds }>, ctx: MonitoringContext): TypeMonitoring {
    const driverGroups: RuleGroup[] = ctx.ownsDriver
        ? [{ name: `zcloud-storage.${a.type}.${a.driver}`, rules: workloadAlerts(a.stem, a.title, ctx.namespace, a.workloads).map((r) => alertRule({ driver: a.driver }, r, ctx.runbookBaseUrl)) }]
        : [];
    const storageGroups = storages.map((s) => ({
        name: `zcloud-storage.${a.type}.${s.name}`,
        rules: volumeAlerts(s.name, s.alerts!).map((r) => alertRule({ storage: s.name }, r, ctx.runbookBaseUrl)),
    }));
    return {
        targets: [],
        groups: [...driverGroups, ...storageGroups],
        ...(ctx.ownsDriver
            ? {
                  // Every StorageClass of the driver (kube-state-metrics), whichever stack made it.
                  dashboard: dashboard(`zcloud-storage-${a.type}`, `zcloud-storage / ${a.title}`, `label_values(kube_storageclass_info{provisioner=${promString(a.provisioner)}}, storageclass)`, [
                      ...(a.panels ?? []),
                      volumesPanel,
                  ]),
              }
            : {}),
    };
}
