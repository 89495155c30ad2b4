import { PolicyRule } from "../k8s/rbac";

/**
 * Permissions of the csi-driver-nfs controller (external-provisioner + external-resizer), written
 * from the upstream v4.13 ClusterRoles and narrowed to what this installation uses:
 * - no `secrets` read: our StorageClasses never name provisioner secrets;
 * - no `snapshot.storage.k8s.io` rules: no snapshotter sidecar runs;
 * - leases only in the storage namespace (a Role), not cluster-wide.
 */
export const nfsControllerClusterRules: PolicyRule[] = [
    // provisioner creates and deletes PVs, resizer updates their capacity.
    { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list", "watch", "update"] },
    // resizer reports the new size on the claim.
    { apiGroups: [""], resources: ["persistentvolumeclaims/status"], verbs: ["update", "patch"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses", "csinodes"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
    // events go to the claims' namespaces.
    { apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch", "create", "update", "patch"] },
];

/** Leader election of both sidecars, in the storage namespace only. */
export const nfsControllerNamespaceRules: PolicyRule[] = [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list", "watch", "create", "update", "patch"] },
];
