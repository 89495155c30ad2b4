import { z } from "zod";
import { ConfigIssue } from "./errors";
import { didYouMean } from "./suggest";

/**
 * Splitting a cluster's storages over several stacks: which stack owns the cluster-wide pieces
 * (the storage Namespace, each type's CSI driver with its CRD, CSIDriver, controller, node plugin
 * and RBAC) and which drivers it deploys without a storage of the type. See docs/splitting-stacks.md.
 */

export type SharedResources = "owned" | "external";

/**
 * Types whose driver a stack can deploy for storages of other stacks. ceph-csi is not one: its
 * config lists every CephFS cluster it serves, and only the stack that deploys it writes that list.
 */
export const sharableDriverTypes = ["lvm", "nfs", "iscsi"] as const;
export type SharableDriverType = (typeof sharableDriverTypes)[number];

export const sharedResourcesSchema = z.enum(["owned", "external"], {
    message:
        "must be owned (this stack deploys the storage Namespace and the CSI drivers; the default) or external (another stack deploys them; this one deploys only its storages)",
});

/** What is wrong with one entry of `drivers`, or undefined when it is fine. */
export function driverEntryProblem(entry: string): string | undefined {
    if ((sharableDriverTypes as readonly string[]).includes(entry)) {
        return undefined;
    }
    if (entry === "cephfs") {
        return "ceph-csi cannot be deployed for other stacks: its config lists each CephFS cluster it serves, so it comes with the CephFS storages of this stack";
    }
    return `"${entry}" is not a storage type with a driver to share${didYouMean(entry, [...sharableDriverTypes])} (one of ${sharableDriverTypes.join(", ")})`;
}

export const driversSchema = z.array(
    z.string().superRefine((v, ctx) => {
        const message = driverEntryProblem(v);
        if (message !== undefined) {
            ctx.addIssue({ code: "custom", message });
        }
    }),
);

/** The part of a shape-valid config the sharing rules read. */
export interface SharingView {
    sharedResources?: SharedResources;
    drivers?: string[];
    leaderElection?: unknown;
    cephfs: unknown[];
    lvm: Array<{ thin?: { snapshots: boolean } } | undefined>;
}

/** Refusals across keys: drivers or lease timings in a stack that owns none, a driver listed twice, CephFS without its driver. */
export function sharingIssues(c: SharingView): ConfigIssue[] {
    const issues: ConfigIssue[] = [];
    const external = c.sharedResources === "external";
    if (external && c.drivers !== undefined && c.drivers.length > 0) {
        issues.push({
            path: "drivers",
            message:
                "a stack with sharedResources: external deploys no driver; list the drivers in the stack that owns the shared resources (sharedResources: owned), or remove this key",
        });
    }
    if (external && c.leaderElection !== undefined) {
        issues.push({
            path: "leaderElection",
            message:
                "a stack with sharedResources: external deploys no controller; set the lease timings in the stack that owns the shared resources (sharedResources: owned), or remove this key",
        });
    }
    (c.drivers ?? []).forEach((d, i) => {
        if (c.drivers!.indexOf(d) < i) {
            issues.push({ path: `drivers[${i}]`, message: `${d} is listed twice` });
        }
    });
    if (external) {
        c.cephfs.forEach((_s, i) =>
            issues.push({
                path: `cephfs[${i}]`,
                message:
                    "a CephFS storage needs its cluster in the config of ceph-csi, which a stack with sharedResources: external does not deploy; keep CephFS storages in the stack that owns the shared resources",
            }),
        );
    }
    return issues;
}

/** Advice that does not stop the plan: what another stack must provide. */
export function sharingWarnings(c: SharingView): ConfigIssue[] {
    if (c.sharedResources !== "external") {
        return [];
    }
    return c.lvm.flatMap((s, i) =>
        s?.thin?.snapshots
            ? [
                  {
                      path: `lvm[${i}].thin.snapshots`,
                      message:
                          "the VolumeSnapshotClass works only if the TopoLVM driver of the owning stack runs its snapshot sidecar, which it does when one of that stack's own lvm storages sets thin.snapshots: true",
                  },
              ]
            : [],
    );
}
