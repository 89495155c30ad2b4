import * as k8s from "@pulumi/kubernetes";
import { hostPathVolume, mount, privileged } from "../k8s/workloads";
import { storageLabelKey } from "../naming";
import { CephPods } from "./pods";

export interface CephAdminPodsArgs {
    pods: CephPods;
    /** The Secret the admin pods read client.admin from. */
    keys: k8s.core.v1.Secret;
}

export interface CephAdminPods {
    daemonSet: k8s.apps.v1.DaemonSet;
    /** The pods' labels: the drain finds the admin pod of a node by them. */
    labels: Record<string, string>;
}

/**
 * One privileged admin pod per storage node (selected by the node label), with /dev: the OSD
 * drains run their drain, purge and zap steps in it, the roll's gates their checks. It waits for
 * no mon (its `ceph` commands do): the gate after mon a runs in it before mon b exists.
 */
export function cephAdminPods(a: CephAdminPodsArgs): CephAdminPods {
    const { pods } = a;
    const labels = pods.labels("ceph-admin");
    const daemonSet = new k8s.apps.v1.DaemonSet(
        pods.names.admin,
        {
            metadata: { name: pods.names.admin, namespace: pods.namespace, labels },
            spec: {
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: pods.pod([pods.keysVolume(a.keys, ["admin"]), hostPathVolume("dev", "/dev", "Directory")], {
                        nodeSelector: { [storageLabelKey("cephfs")]: pods.storage },
                        tolerations: [{ operator: "Exists" }],
                        containers: [
                            pods.container({
                                name: "admin",
                                command: ["sleep", "infinity"],
                                securityContext: privileged,
                                volumeMounts: [...pods.keyedMounts, mount("dev", "/dev")],
                            }),
                        ],
                    }).spec,
                },
            },
        },
        { ...pods.child, dependsOn: [...pods.account.ready] },
    );
    return { daemonSet, labels };
}
