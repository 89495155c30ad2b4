/** What monitoring scrapes and watches: metrics endpoints and workloads, as plain data. */

/** One port of a metrics Service: Prometheus scrapes each of a target's ports. */
export interface MetricsPort {
    /** The Service port's name (a ServiceMonitor endpoint names it). */
    name: string;
    port: number;
}

/** Metrics endpoints served by pods: a Service named `service` selects them on each of `ports`. */
export interface ScrapeTarget {
    /** The metrics Service's name (in the storage namespace). */
    service: string;
    /** Labels of the pods that serve the metrics (the Service's selector). */
    podSelector: Record<string, string>;
    /** One port per program of the pod that serves metrics (a controller's sidecars each serve their own). */
    ports: MetricsPort[];
    path: string;
    /** Keep the metrics' own labels where they clash with the target's (Ceph's mgr sets `instance`). */
    honorLabels: boolean;
    /** The storage whose metrics these are; absent for a driver shared by the type's storages. */
    storage?: string;
}

/** A workload whose pods not being ready is worth an alert. */
export interface WatchedWorkload {
    kind: "DaemonSet" | "Deployment";
    name: string;
}
