import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { CephPods } from "./pods";
import { cephScriptCommand } from "./scripts";

/** Where the active manager's prometheus module serves /metrics (Ceph's default port). */
export const cephMgrMetricsPort = 9283;

export interface CephMetricsArgs {
    pods: CephPods;
    /** The Secret with client.admin. */
    keys: k8s.core.v1.Secret;
    /** What must be up first: the file system Job (after every manager). */
    after: pulumi.Resource[];
}

/**
 * Monitoring on: the Job that turns the managers' prometheus module on (ceph-metrics.sh) and
 * waits until the active manager serves it. Made only while monitoring is on; no pod restarts (Ceph
 * restarts the manager processes in place to load the module).
 */
export function cephMetricsJob(a: CephMetricsArgs): k8s.batch.v1.Job {
    const { pods } = a;
    return new k8s.batch.v1.Job(
        `${pods.storage}-metrics`,
        {
            metadata: { name: pods.names.metrics, namespace: pods.namespace, labels: pods.labels("ceph-metrics") },
            spec: {
                backoffLimit: 6,
                template: pods.template(
                    pods.labels("ceph-metrics"),
                    pods.pod(
                        [pods.keysVolume(a.keys, ["admin"])],
                        {
                            restartPolicy: "OnFailure",
                            containers: [
                                pods.container({
                                    name: "metrics",
                                    command: cephScriptCommand("ceph-metrics.sh", ["enable"]),
                                    volumeMounts: [...pods.keyedMounts, pods.scriptsMount],
                                }),
                            ],
                        },
                        ["ceph-metrics.sh"],
                    ),
                ),
            },
        },
        // A Job's template is immutable: a change replaces it (delete first, same name).
        { ...pods.child, dependsOn: a.after, deleteBeforeReplace: true, customTimeouts: { create: "10m", update: "10m" } },
    );
}
