import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { hostPathVolume, mount } from "../k8s/workloads";
import { initialMonIds, monInitArgs } from "./cluster";
import { CephFsIdentity, monLabels } from "./identity";
import { CephPods, cephEnv, cephPaths } from "./pods";
import { cephScriptCommand } from "./scripts";

export interface CephMonsArgs {
    pods: CephPods;
    identity: CephFsIdentity;
    /** The Secret the mon init step reads mon., client.admin and bootstrap-osd from. */
    keys: k8s.core.v1.Secret;
}

/** The mon of one placement (`identity.mons`) after `after` (the roll's step before it). */
export type CephMonStarter = (id: string, after: pulumi.Resource[]) => k8s.apps.v1.Deployment;

/**
 * One mon per placed id, pinned to its node, store on a host path, address = its Service's
 * ClusterIP. The storage starts them one at a time, each after the quorum gate of the one before
 * (gates.ts); a mon that is not initial also waits for a quorum in its init step (exit 3, the pod
 * retries). See docs/cephfs.md.
 */
export function cephMons(a: CephMonsArgs): CephMonStarter {
    const { pods, identity: id } = a;
    const initialMons = initialMonIds(id.mons);
    const storeMount = mount("mon-store", `${cephPaths.data}/mon`);
    return (monId, after) => {
        const m = id.mons.find((x) => x.id === monId);
        if (m === undefined) {
            throw new Error(`storage ${pods.storage} places no mon ${monId}`);
        }
        return pods.single(
            pods.names.mon(m.id),
            "ceph-mon",
            monLabels(pods.storage, m.id),
            pods.pod([pods.keysVolume(a.keys, ["mon", "admin", "bootstrap-osd"]), hostPathVolume("mon-store", `${pods.names.hostDir}/mon`)], {
                nodeSelector: { "kubernetes.io/hostname": m.node },
                priorityClassName: "system-cluster-critical",
                initContainers: [
                    pods.container({
                        name: "mon-init",
                        command: id.monAddresses.apply((addrs) => cephScriptCommand("ceph-mon-init.sh", monInitArgs(m.id, addrs, initialMons, id.allowAesKeys))),
                        volumeMounts: [...pods.keyedMounts, pods.scriptsMount, storeMount],
                    }),
                ],
                containers: [
                    pods.container({
                        name: "mon",
                        command: [
                            "ceph-mon",
                            "--foreground",
                            "--id",
                            m.id,
                            "--setuser",
                            "ceph",
                            "--setgroup",
                            "ceph",
                            pulumi.interpolate`--public-addr=${id.monServices[m.id].spec.clusterIP}`,
                            "--public-bind-addr=$(POD_IP)",
                        ],
                        env: [...cephEnv, { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
                        ports: [
                            { name: "msgr2", containerPort: 3300 },
                            { name: "msgr1", containerPort: 6789 },
                        ],
                        volumeMounts: [pods.confMount, storeMount],
                    }),
                ],
            }, ["ceph-mon-init.sh"]),
            [id.monServices[m.id], ...after],
        );
    };
}
