import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { DrainKubeTarget, drainKubeArgs, kubeconfigEnv } from "../k8s/kubeTarget";
import { CephAdminPods } from "./admin";
import { CephPods } from "./pods";
import { localScriptCommand } from "./scripts";

export interface CephMonLeaveArgs {
    pods: CephPods;
    admin: CephAdminPods;
    fsid: pulumi.Output<string>;
    kube: DrainKubeTarget;
    /** Bound of the removal's waits (the quorum without the mon), seconds. */
    timeoutSeconds: number;
}

/** The leave resource of one mon after `deps` (its workload, its Service, the leave before it). */
export type CephMonLeaver = (id: string, deps: pulumi.Resource[]) => command.local.Command;

/** The Pulumi name of mon `<id>`'s leave resource. */
export function monLeaveName(storage: string, id: string): string {
    return `${storage}-mon-${id}-leave`;
}

/**
 * A mon's leave: nothing on create; its delete (before the mon's workload and Service, which it
 * depends on) takes the mon out of the monmap through the admin pod (cephfs-mon-remove.sh ->
 * ceph-mon-remove.sh) while the mons that stay hold a quorum without it. Without it a mon whose
 * workload the config no longer places would stay in the monmap, down: three mons shrunk to one
 * leave one of three, no quorum. The mons that can go (b, c) get one each, chained so that they
 * leave one at a time (c first); the OSD drains depend on them, so a shrink drains first.
 */
export function cephMonLeaves(a: CephMonLeaveArgs): CephMonLeaver {
    const { pods, admin, kube } = a;
    return (id, deps) => {
        const script = pods.scriptSet("ceph-mon-remove.sh");
        const local = pods.scriptSet("cephfs-mon-remove.sh");
        const library = pods.library();
        const selector = Object.entries(admin.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(",");
        return new command.local.Command(
            monLeaveName(pods.storage, id),
            {
                // The fsid comes from state with the command: the removal acts on this cluster only.
                delete: pulumi
                    .all([a.fsid, pods.namespace, script.metadata.name, local.metadata.name, library.metadata.name])
                    .apply(([fsid, ns, scriptSet, localSet, librarySet]) =>
                        localScriptCommand("cephfs-mon-remove.sh", localSet, [
                            ...["--namespace", ns, "--fsid", fsid, "--mon", id, "--admin-selector", selector],
                            ...["--script-configmap", scriptSet, "--library-configmap", librarySet, "--timeout", String(a.timeoutSeconds), ...drainKubeArgs(kube)],
                        ]),
                    ),
                ...(kube.kubeconfigContent ? { environment: { [kubeconfigEnv]: pulumi.secret(kube.kubeconfigContent) } } : {}),
            },
            { ...pods.child, dependsOn: [...deps, admin.daemonSet, script, local, library], customTimeouts: { delete: `${Math.ceil((2 * a.timeoutSeconds) / 60) + 5}m` } },
        );
    };
}
