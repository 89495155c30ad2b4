import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { mount } from "../k8s/workloads";
import { storageLabelKey } from "../naming";
import { CephPods, cephPaths } from "./pods";
import { cephScriptCommand } from "./scripts";

export interface CephDaemonsArgs {
    pods: CephPods;
    type: "mgr" | "mds";
    /** The Secret the keyring init step reads client.admin from. */
    keys: k8s.core.v1.Secret;
}

/** The daemon of one id after `after` (the roll's step before it). */
export type CephDaemonStarter = (id: string, after: pulumi.Resource[]) => k8s.apps.v1.Deployment;

/**
 * Managers or metadata servers: one Deployment per id, on the storage's hosts and spread over
 * them, the daemon's keyring made by an init step (ceph-keyring.sh daemon) into the pod's data
 * emptyDir. The storage starts them one at a time, each after the gate before it (gates.ts).
 */
export function cephDaemons(a: CephDaemonsArgs): CephDaemonStarter {
    const { pods, type } = a;
    const component = `ceph-${type}`;
    const dataMount = mount("data", `${cephPaths.data}/${type}`);
    return (id, after) =>
        pods.single(
            type === "mgr" ? pods.names.mgr(id) : pods.names.mds(id),
            component,
            { ...pods.labels(component), [`storage.zcloud.io/${component}`]: id },
            pods.pod([pods.keysVolume(a.keys, ["admin"]), { name: "data", emptyDir: {} }], {
                // on the storage's own hosts (their node label, as the admin pods), never on a node
                // of the cluster the config did not give to this storage
                nodeSelector: { [storageLabelKey("cephfs")]: pods.storage },
                affinity: {
                    podAntiAffinity: {
                        preferredDuringSchedulingIgnoredDuringExecution: [
                            { weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { ...pods.labels(component) } }, topologyKey: "kubernetes.io/hostname" } },
                        ],
                    },
                },
                initContainers: [
                    pods.container({
                        name: "keyring",
                        command: cephScriptCommand("ceph-keyring.sh", ["daemon", type, id]),
                        volumeMounts: [...pods.keyedMounts, pods.scriptsMount, dataMount],
                    }),
                ],
                containers: [
                    pods.container({
                        name: type,
                        command: [`ceph-${type}`, "--foreground", "--id", id, "--setuser", "ceph", "--setgroup", "ceph"],
                        volumeMounts: [pods.confMount, dataMount],
                    }),
                ],
            }, ["ceph-keyring.sh"]),
            after,
        );
}
