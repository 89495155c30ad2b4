import * as pulumi from "@pulumi/pulumi";
import { LeaderElectionConfig, durationFlag } from "../config/leaderElection";

/**
 * The lease timings as flags: TopoLVM's controller and the kubernetes-csi sidecars (provisioner,
 * resizer, snapshotter) name them alike. None when the stack leaves them out, so each keeps its
 * own defaults and an existing stack's pods stay as they are.
 */
export function leaderElectionTimingFlags(timings?: LeaderElectionConfig): string[] {
    if (!timings) {
        return [];
    }
    return [
        `--leader-election-lease-duration=${durationFlag(timings.leaseDuration)}`,
        `--leader-election-renew-deadline=${durationFlag(timings.renewDeadline)}`,
        `--leader-election-retry-period=${durationFlag(timings.retryPeriod)}`,
    ];
}

/**
 * A leader-elected container's flags: `enable` as the image takes it (`--leader-election`, or
 * `--leader-election=true`; none where election is always on), its Lease in the storage
 * namespace, then the stack's timings.
 */
export function leaderElectionFlags(enable: string | undefined, namespace: pulumi.Input<string>, timings?: LeaderElectionConfig): pulumi.Input<string>[] {
    return [...(enable ? [enable] : []), pulumi.interpolate`--leader-election-namespace=${namespace}`, ...leaderElectionTimingFlags(timings)];
}
