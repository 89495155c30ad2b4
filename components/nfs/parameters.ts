import { NfsConfig } from "../config/model";

/**
 * Pure helpers for NFS storages: what a StorageClass of csi-driver-nfs holds. No Pulumi objects,
 * so they are unit-tested directly.
 */

/** The CSI driver name csi-driver-nfs registers. */
export const nfsDriverName = "nfs.csi.k8s.io";

/**
 * One directory per volume, readable on the server: `<namespace>/<claim>/<pv name>`. The PV name
 * (`pvc-<uid>`) keeps a new claim with an old claim's name from picking up retained data, and keeps
 * archived directories (`archived-<namespace>/<claim>/<pv name>`) from colliding. The driver fills
 * the placeholders from the provisioner's extra create metadata.
 */
export const nfsSubDirPattern = "${pvc.metadata.namespace}/${pvc.metadata.name}/${pv.metadata.name}";

export type NfsStorageClassInput = Pick<NfsConfig, "server" | "path" | "onDelete">;

/**
 * The StorageClass parameters of an NFS storage, exactly as configured: server, share (the export
 * path), the subDir pattern and onDelete. csi-driver-nfs writes server, share and subDir into each
 * volume's ID at provisioning time, so existing volumes never follow a later change of these.
 */
export function nfsStorageClassParameters(cfg: NfsStorageClassInput): Record<string, string> {
    return {
        server: cfg.server,
        share: cfg.path,
        subDir: nfsSubDirPattern,
        onDelete: cfg.onDelete,
    };
}
