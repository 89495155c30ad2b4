import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { CephAdminPods } from "./admin";
import { CephGateOrder, daemonSelector, gateGuardsEnv, guardHash, renderGateArgs } from "./gates";
import { DrainKubeTarget, drainKubeArgs } from "../k8s/kubeTarget";
import { CephPods } from "./pods";
import { localScriptCommand } from "./scripts";

export interface CephGatesArgs {
    pods: CephPods;
    admin: CephAdminPods;
    fsid: pulumi.Output<string>;
    /** Which cluster the gates' kubectl talks to: the Kubernetes provider's (as the drains). */
    kube: DrainKubeTarget;
    /** Bound of each gate's wait, seconds. */
    timeoutSeconds: number;
}

/**
 * The health gates of one storage's roll (gates.ts gives their order): each a local command that
 * runs cephfs-gate.sh where `pulumi up` runs, which runs ceph-gate.sh in a running admin pod (the
 * drains' mechanism: the provider's cluster, the script set from its immutable ConfigMap). The
 * command carries only a stub (scripts.ts localScriptCommand): cephfs-gate.sh's set too is read
 * from its immutable ConfigMap, so 18 gates do not carry 18 copies of the script. It
 * runs on create and again on every update; its environment carries the sha256 of the pod
 * templates it guards, so any change of one (image, ceph.conf, keys, resources, scripts) runs
 * the gate again, in place (no `update`: the provider runs `create` again). A gate's delete
 * does nothing. The roll's first gate (roll-start) also
 * gets the selector of the storage's daemon Deployments: while none exists (the storage's
 * creation) it passes without asking Ceph.
 */
export class CephGates {
    private readonly pending: Array<() => void> = [];

    constructor(private readonly a: CephGatesArgs) {}

    /**
     * Resolves every gate's guard hash, once every workload exists: a gate before the workloads
     * it guards (noout set, a host's ok-to-stop, an mds handover) is made before them.
     */
    seal(): void {
        for (const resolve of this.pending.splice(0)) resolve();
    }

    /** One gate after `deps` (the step before it in the roll and the workloads it guards). */
    gate(step: CephGateOrder, deps: pulumi.Resource[]): command.local.Command {
        const { pods, admin, kube } = this.a;
        const script = pods.scriptSet("ceph-gate.sh");
        const selector = Object.entries(admin.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(",");
        const local = pods.scriptSet("cephfs-gate.sh");
        const library = pods.library();
        const run = pulumi
            .all([this.a.fsid, pods.namespace, script.metadata.name, local.metadata.name, library.metadata.name])
            .apply(([fsid, ns, scriptSet, localSet, librarySet]) =>
                localScriptCommand("cephfs-gate.sh", localSet, [
                    ...["--namespace", ns, "--admin-selector", selector, "--script-configmap", scriptSet, "--library-configmap", librarySet, ...drainKubeArgs(kube)],
                    ...(step.first ? ["--daemons", daemonSelector(pods.storage)] : []),
                    "--",
                    ...renderGateArgs(step.action, fsid, this.a.timeoutSeconds),
                ]),
            );
        const templates = new Promise<Record<string, unknown>>((resolve) => this.pending.push(() => resolve(Object.fromEntries(step.guards.map((w) => [w, pods.templateOf(w)])))));
        const guards = pulumi.output(templates).apply((t) => guardHash(t));
        const minutes = `${Math.ceil(this.a.timeoutSeconds / 60) + 5}m`;
        return new command.local.Command(
            step.name,
            {
                // No `update`: on an update the provider runs `create` again (the same check).
                create: run,
                environment: {
                    [gateGuardsEnv]: guards,
                    ...(kube.kubeconfigContent ? { ZCLOUD_DRAIN_KUBECONFIG: pulumi.secret(kube.kubeconfigContent) } : {}),
                },
            },
            { ...pods.child, dependsOn: [...deps, admin.daemonSet, script, local, library], customTimeouts: { create: minutes, update: minutes } },
        );
    }
}
