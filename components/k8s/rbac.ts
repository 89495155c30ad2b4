import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

export type PolicyRule = k8s.types.input.rbac.v1.PolicyRule;

export interface ServiceAccountArgs {
    namespace: pulumi.Input<string>;
    labels: Record<string, string>;
    /** Cluster-wide permissions, bound with a ClusterRole named `<namespace>:<name>`. */
    clusterRules?: PolicyRule[];
    /** Permissions inside the namespace (leases, events). */
    namespaceRules?: PolicyRule[];
}

export interface ServiceAccountGrant {
    serviceAccount: k8s.core.v1.ServiceAccount;
    /** Wait for these before starting pods that use the account. */
    ready: pulumi.Resource[];
}

/** A service account with exactly the roles it needs, nothing more. */
export function serviceAccountWithRoles(name: string, a: ServiceAccountArgs, opts: pulumi.CustomResourceOptions): ServiceAccountGrant {
    const metadata = { name, namespace: a.namespace, labels: a.labels };
    const serviceAccount = new k8s.core.v1.ServiceAccount(name, { metadata, automountServiceAccountToken: true }, opts);
    const subjects = [{ kind: "ServiceAccount", name, namespace: a.namespace }];
    const ready: pulumi.Resource[] = [serviceAccount];
    if (a.clusterRules?.length) {
        const roleName = pulumi.interpolate`${a.namespace}:${name}`;
        const role = new k8s.rbac.v1.ClusterRole(`${name}-clusterrole`, { metadata: { name: roleName, labels: a.labels }, rules: a.clusterRules }, opts);
        ready.push(
            role,
            new k8s.rbac.v1.ClusterRoleBinding(
                `${name}-clusterrolebinding`,
                {
                    metadata: { name: roleName, labels: a.labels },
                    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
                    subjects,
                },
                opts,
            ),
        );
    }
    if (a.namespaceRules?.length) {
        const role = new k8s.rbac.v1.Role(`${name}-role`, { metadata, rules: a.namespaceRules }, opts);
        ready.push(
            role,
            new k8s.rbac.v1.RoleBinding(
                `${name}-rolebinding`,
                {
                    metadata,
                    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name },
                    subjects,
                },
                opts,
            ),
        );
    }
    return { serviceAccount, ready };
}

const rw = ["get", "list", "watch", "create", "update", "patch", "delete"];

/** Leader election and events, which every CSI controller sidecar needs in its namespace. */
export const leaderElectionRules: PolicyRule[] = [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: rw },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
];

/** external-provisioner (with storage capacity tracking), external-resizer and their reads. */
export const csiProvisionerRules: PolicyRule[] = [
    { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "list", "watch", "create", "patch", "delete"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list", "watch", "update"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims/status"], verbs: ["patch"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses", "csinodes", "volumeattachments", "volumeattributesclasses"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["events"], verbs: ["list", "watch", "create", "update", "patch"] },
    { apiGroups: [""], resources: ["nodes", "pods"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["snapshot.storage.k8s.io"], resources: ["volumesnapshots", "volumesnapshotcontents"], verbs: ["get", "list"] },
];

/** Publishing CSIStorageCapacity objects owned by the controller's Deployment. */
export const csiCapacityRules: PolicyRule[] = [
    { apiGroups: ["storage.k8s.io"], resources: ["csistoragecapacities"], verbs: rw },
    { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
    { apiGroups: ["apps"], resources: ["replicasets"], verbs: ["get"] },
];

/** external-snapshotter's CSI sidecar (it updates contents the snapshot controller creates; it creates none). */
export const csiSnapshotterRules: PolicyRule[] = [
    { apiGroups: ["snapshot.storage.k8s.io"], resources: ["volumesnapshotclasses"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["snapshot.storage.k8s.io"], resources: ["volumesnapshotcontents"], verbs: ["get", "list", "watch", "update", "patch"] },
    { apiGroups: ["snapshot.storage.k8s.io"], resources: ["volumesnapshotcontents/status"], verbs: ["update", "patch"] },
];
