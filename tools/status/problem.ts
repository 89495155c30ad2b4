/** What status reports: one finding about a storage, a node or a device (shared by every checker). */
export type ProblemKind = "degraded" | "drift" | "unreachable";

export interface Problem {
    kind: ProblemKind;
    /** The node it is about, or null for the storage or the cluster as a whole. */
    node: string | null;
    /** The device or object: `/dev/sdb`, `VG zcloud-fast`, `StorageClass fast`, `pod lvmd-fast-x`. */
    object: string;
    message: string;
}
