import { CephFsConfig } from "../config/model";
import { cephNames, commonLabels, mdsIds, mgrIds, monPlacement } from "../naming";
import { MonitoringContext } from "../monitoring/context";
import { dashboard, volumesPanel } from "../monitoring/dashboards";
import { AlertSpec, alertRule, RuleGroup, selector, usedAlerts, volumeAlerts, workloadAlerts } from "../monitoring/rules";
import { metricsPortName } from "../monitoring/scrape";
import { ScrapeTarget } from "../monitoring/targets";
import { TypeMonitoring } from "../monitoring/typeMonitoring";
import { cephMgrMetricsPort } from "./metrics";

/**
 * CephFS: each storage is a cluster of its own, so its managers' metrics are scraped with the
 * label storage=<name> (Ceph's series name daemons as mon.a, osd.0: the same in every cluster),
 * and every alert of a storage selects it.
 */

export function cephMetricsTarget(storage: string): ScrapeTarget {
    return {
        service: cephNames(storage).metrics,
        // Both managers: only the active one serves the metrics (ceph-metrics.sh turns the module on).
        podSelector: commonLabels("ceph-mgr", storage),
        ports: [{ name: metricsPortName, port: cephMgrMetricsPort }],
        path: "/metrics",
        // The module sets `instance` on some series; keep its labels.
        honorLabels: true,
        storage,
    };
}

const healthCheck = (storage: string, check: string) => `${selector("ceph_health_detail", { storage, name: check })} == 1`;

/** The used share of each pool of the storage's cluster, in percent, labelled with the pool's name. */
export function poolUsedPercent(storage: string): string {
    return `${selector("ceph_pool_percent_used", { storage })} * 100 * on (storage, pool_id) group_left (name) ${selector("ceph_pool_metadata", { storage })}`;
}

/** The Deployments and the DaemonSet of one storage's Ceph daemons, by name. */
function cephWorkloads(s: CephFsConfig) {
    const n = cephNames(s.name);
    const hosts = Object.keys(s.hosts);
    return [
        ...monPlacement(hosts).map((m) => ({ kind: "Deployment" as const, name: n.mon(m.id) })),
        ...mgrIds(hosts.length).map((id) => ({ kind: "Deployment" as const, name: n.mgr(id) })),
        ...mdsIds.map((id) => ({ kind: "Deployment" as const, name: n.mds(id) })),
        ...Object.entries(s.hosts).flatMap(([node, devices]) => devices.map((d) => ({ kind: "Deployment" as const, name: n.osd(node, d) }))),
        { kind: "DaemonSet" as const, name: n.admin },
    ];
}

export function cephStorageAlerts(s: CephFsConfig, namespace: string): AlertSpec[] {
    const t = s.alerts!;
    const storage = s.name;
    const on = { storage };
    const mons = monPlacement(Object.keys(s.hosts)).length;
    const cluster = `Ceph of ${storage}`;
    return [
        {
            alert: "CephMetricsAbsent",
            expr: `absent(${selector("ceph_health_status", on)})`,
            for: "10m",
            severity: "warning",
            summary: `no metrics from the managers of ${storage}`,
            description: `Prometheus has had no health of ${cluster} for 10 minutes, so none of its alerts can fire. Check the managers (ceph-${storage}-mgr-*) and the Service ${cephNames(storage).metrics}.`,
        },
        {
            alert: "CephHealthError",
            expr: `${selector("ceph_health_status", on)} == 2`,
            for: "5m",
            severity: "critical",
            summary: `${cluster} is HEALTH_ERR`,
            description: `${cluster} has been HEALTH_ERR for 5 minutes: some data may be unavailable. ceph health detail (in the admin pod) tells why.`,
        },
        {
            alert: "CephHealthWarning",
            expr: `${selector("ceph_health_status", on)} == 1`,
            for: "15m",
            severity: "warning",
            summary: `${cluster} is HEALTH_WARN`,
            description: `${cluster} has been HEALTH_WARN for 15 minutes. ceph health detail (in the admin pod) tells why.`,
        },
        // One mon has no quorum to lose: its loss stops the cluster, which CephMetricsAbsent and the pods' alerts tell.
        ...(mons >= 3
            ? [
                  {
                      alert: "CephMonQuorumAtRisk",
                      expr: `count(${selector("ceph_mon_quorum_status", on)} == 1) <= (floor(count(${selector("ceph_mon_metadata", on)}) / 2) + 1)`,
                      for: "5m",
                      severity: "critical" as const,
                      summary: `${cluster}: losing one more mon stops the cluster`,
                      description: `Only {{ $value }} mon(s) of ${cluster} are in the quorum: one more failure and the cluster stops serving I/O.`,
                  },
              ]
            : []),
        {
            alert: "CephMonOutOfQuorum",
            expr: `${selector("ceph_mon_quorum_status", on)} == 0`,
            for: "5m",
            severity: "warning",
            summary: `${cluster}: {{ $labels.ceph_daemon }} is out of the quorum`,
            description: `{{ $labels.ceph_daemon }} of ${cluster} has been out of the quorum for 5 minutes.`,
        },
        {
            alert: "CephOsdDown",
            expr: `${selector("ceph_osd_up", on)} == 0`,
            for: "5m",
            severity: "warning",
            summary: `${cluster}: {{ $labels.ceph_daemon }} is down`,
            description: `{{ $labels.ceph_daemon }} of ${cluster} has been down for 5 minutes; its placement groups run with fewer copies.`,
        },
        {
            alert: "CephOsdOut",
            expr: `${selector("ceph_osd_in", on)} == 0`,
            for: "15m",
            severity: "warning",
            summary: `${cluster}: {{ $labels.ceph_daemon }} is out`,
            description: `{{ $labels.ceph_daemon }} of ${cluster} has been out of the data placement for 15 minutes; its data moved to the other OSDs.`,
        },
        {
            alert: "CephPgsInactive",
            expr: `sum(${selector("ceph_pg_total", on)}) - sum(${selector("ceph_pg_active", on)}) > 0`,
            for: "5m",
            severity: "critical",
            summary: `${cluster}: placement groups are inactive`,
            description: `{{ $value }} placement group(s) of ${cluster} have been inactive for 5 minutes: I/O to their objects blocks.`,
        },
        {
            alert: "CephPgsDegraded",
            expr: `sum(${selector("ceph_pg_degraded", on)}) + sum(${selector("ceph_pg_undersized", on)}) > 0`,
            for: "30m",
            severity: "warning",
            summary: `${cluster}: placement groups keep fewer copies than set`,
            description: `Placement groups of ${cluster} have been degraded or undersized for 30 minutes: recovery is not finishing.`,
        },
        ...usedAlerts({ stem: "CephPool", usedPercent: poolUsedPercent(storage), threshold: t.cephUsed, what: `pool {{ $labels.name }} of ${storage}`, forecastHours: t.fillForecastHours }),
        {
            alert: "CephMdsNoStandby",
            expr: healthCheck(storage, "MDS_INSUFFICIENT_STANDBY"),
            for: "10m",
            severity: "warning",
            summary: `${cluster}: no standby metadata server`,
            description: `The file system of ${storage} has had no standby metadata server for 10 minutes: the next mds failure stops it until a new one starts.`,
        },
        {
            alert: "CephSlowOps",
            expr: healthCheck(storage, "SLOW_OPS"),
            for: "2m",
            severity: "warning",
            summary: `${cluster}: operations are slow`,
            description: `Requests to ${cluster} have been blocked longer than 30 seconds (SLOW_OPS) for 2 minutes.`,
        },
        {
            alert: "CephDaemonCrashed",
            expr: healthCheck(storage, "RECENT_CRASH"),
            for: "1m",
            severity: "warning",
            summary: `${cluster}: a daemon crashed`,
            description: `A daemon of ${cluster} crashed recently (RECENT_CRASH): ceph crash ls (in the admin pod) lists it; ceph crash archive-all clears the warning.`,
        },
        ...workloadAlerts("Ceph", cluster, namespace, cephWorkloads(s)),
        ...volumeAlerts(storage, t),
    ];
}

function groups(storages: CephFsConfig[], ctx: MonitoringContext): RuleGroup[] {
    const driver = {
        name: "zcloud-storage.cephfs.ceph-csi-cephfs",
        rules: workloadAlerts("CephCsi", "ceph-csi", ctx.namespace, [
            { kind: "DaemonSet", name: "ceph-csi-cephfs-nodeplugin" },
            { kind: "Deployment", name: "ceph-csi-cephfs-provisioner" },
        ]).map((a) => alertRule({ driver: "ceph-csi-cephfs" }, a, ctx.runbookBaseUrl)),
    };
    return [driver, ...storages.map((s) => ({ name: `zcloud-storage.cephfs.${s.name}`, rules: cephStorageAlerts(s, ctx.namespace).map((a) => alertRule({ storage: s.name }, a, ctx.runbookBaseUrl)) }))];
}

export function cephFsMonitoring(storages: CephFsConfig[], ctx: MonitoringContext): TypeMonitoring {
    return {
        targets: storages.map((s) => cephMetricsTarget(s.name)),
        groups: groups(storages, ctx),
        ...(ctx.ownsDriver ? { dashboard: cephFsDashboard() } : {}),
    };
}

/** The CephFS dashboard: every storage whose managers are scraped (the storage label). */
function cephFsDashboard() {
    const on = { storage: "~$storage" };
    return dashboard("zcloud-storage-cephfs", "zcloud-storage / CephFS", "label_values(ceph_health_status, storage)", [
        { title: "Health (0 ok, 1 warn, 2 error)", unit: "short", queries: [{ expr: selector("ceph_health_status", on), legend: "{{storage}}" }] },
        { title: "Mons in quorum", unit: "short", queries: [{ expr: `sum by (storage) (${selector("ceph_mon_quorum_status", on)})`, legend: "{{storage}}" }] },
        {
            title: "OSDs up and in",
            unit: "short",
            queries: [
                { expr: `sum by (storage) (${selector("ceph_osd_up", on)})`, legend: "{{storage}} up" },
                { expr: `sum by (storage) (${selector("ceph_osd_in", on)})`, legend: "{{storage}} in" },
            ],
        },
        {
            title: "Placement groups",
            unit: "short",
            queries: [
                { expr: `sum by (storage) (${selector("ceph_pg_total", on)})`, legend: "{{storage}} total" },
                { expr: `sum by (storage) (${selector("ceph_pg_active", on)})`, legend: "{{storage}} active" },
                { expr: `sum by (storage) (${selector("ceph_pg_degraded", on)})`, legend: "{{storage}} degraded" },
            ],
        },
        { title: "Pools used", unit: "percent", queries: [{ expr: poolUsedPercent("~$storage"), legend: "{{storage}} {{name}}" }] },
        // The daemons' performance counters (served by the managers: ceph-metrics.sh).
        {
            title: "OSD operations",
            unit: "ops",
            queries: [
                { expr: `sum by (storage, ceph_daemon) (rate(${selector("ceph_osd_op_r", on)}[5m]))`, legend: "{{storage}} {{ceph_daemon}} read" },
                { expr: `sum by (storage, ceph_daemon) (rate(${selector("ceph_osd_op_w", on)}[5m]))`, legend: "{{storage}} {{ceph_daemon}} write" },
            ],
        },
        {
            title: "OSD operation latency",
            unit: "s",
            queries: [
                { expr: `rate(${selector("ceph_osd_op_r_latency_sum", on)}[5m]) / rate(${selector("ceph_osd_op_r_latency_count", on)}[5m])`, legend: "{{storage}} {{ceph_daemon}} read" },
                { expr: `rate(${selector("ceph_osd_op_w_latency_sum", on)}[5m]) / rate(${selector("ceph_osd_op_w_latency_count", on)}[5m])`, legend: "{{storage}} {{ceph_daemon}} write" },
            ],
        },
        { title: "Metadata server requests", unit: "ops", queries: [{ expr: `sum by (storage, ceph_daemon) (rate(${selector("ceph_mds_request", on)}[5m]))`, legend: "{{storage}} {{ceph_daemon}}" }] },
        volumesPanel,
    ]);
}
