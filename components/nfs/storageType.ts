import { CsiDriverRef, externalDriver } from "../k8s/driverRef";
import { csiDriverWorkloads, driverMonitoring } from "../monitoring/driverMonitoring";
import { defineStorageType } from "../storageType";
import { CsiDriverNfs } from "./csiDriverNfs";
import { nfsDriverName } from "./parameters";
import { NfsStorage } from "./nfsStorage";

const driverName = "csi-driver-nfs";

/** NFS: one shared csi-driver-nfs for all NFS storages; no per-storage daemons, no node changes. */
export const nfsStorageType = defineStorageType({
    type: "nfs",
    shared: (_storages, ctx) =>
        new CsiDriverNfs(driverName, { namespace: ctx.namespace, imageRegistry: ctx.imageRegistry, leaderElection: ctx.model.leaderElection }, ctx.opts) as CsiDriverRef,
    external: (ctx) => externalDriver(nfsDriverName, ctx.namespace, ctx.imageRegistry),
    component: (s, _i, driver, ctx) =>
        new NfsStorage(s.name, { server: s.server, path: s.path, onDelete: s.onDelete, mountOptions: s.mountOptions, isDefault: s.default, driver }, ctx.opts),
    outputs: (s) => ({ storageClassName: s.storageClassName, server: s.server, path: s.path }),
    // csi-driver-nfs serves no metrics of the export: the kubelets' volume stats tell its fill.
    monitoring: (storages, ctx) =>
        driverMonitoring(
            {
                type: "nfs",
                title: "NFS",
                stem: "CsiDriverNfs",
                driver: driverName,
                provisioner: nfsDriverName,
                workloads: csiDriverWorkloads(driverName),
            },
            storages,
            ctx,
        ),
});
