import { CsiDriverRef, externalDriver } from "../k8s/driverRef";
import { defineStorageType } from "../storageType";
import { lvmMonitoring, topolvmSnapshots } from "./monitoring";
import { LvmStorage } from "./lvmStorage";
import { TopolvmDriver, topolvmDriverName } from "./topolvm";

/** LVM: one shared TopoLVM driver, one LvmStorage (device class) per storage. */
export const lvmStorageType = defineStorageType({
    type: "lvm",
    shared: (storages, ctx) =>
        new TopolvmDriver(
            "topolvm",
            { namespace: ctx.namespace, imageRegistry: ctx.imageRegistry, snapshots: topolvmSnapshots(storages), leaderElection: ctx.model.leaderElection },
            ctx.opts,
        ) as CsiDriverRef,
    external: (ctx) => externalDriver(topolvmDriverName, ctx.namespace, ctx.imageRegistry),
    component: (s, _i, driver, ctx) =>
        new LvmStorage(
            s.name,
            { hosts: s.hosts, nodes: ctx.model.nodes, ssh: ctx.ssh(), kube: ctx.kube(), driver, isDefault: s.default, wipe: s.wipe, thin: s.thin },
            ctx.opts,
        ),
    outputs: (s) => ({ volumeGroup: s.volumeGroup, nodes: s.nodes, devices: s.devices }),
    monitoring: lvmMonitoring,
});
