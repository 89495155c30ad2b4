import * as net from "net";
import * as pulumi from "@pulumi/pulumi";
import { CsiDriverRef, externalDriver } from "../k8s/driverRef";
import { csiDriverWorkloads, driverMonitoring } from "../monitoring/driverMonitoring";
import { defineStorageType } from "../storageType";
import { CsiSanlockLvm, sanlockDriverName } from "./csiSanlockLvm";
import { hostIdClashes } from "./hostId";
import { IscsiStorage } from "./iscsiStorage";

const driverName = "csi-sanlock-lvm";

/** iSCSI: one shared csi-sanlock-lvm driver, one IscsiStorage (shared VG on a LUN) per storage. */
export const iscsiStorageType = defineStorageType({
    type: "iscsi",
    check: (storages, model) =>
        storages.flatMap((s, i) => [
            // The node scripts find the LUN by udev's by-path name, which carries the portal's IPv4 address.
            ...s.portals
                .map((portal, j) => ({ portal, j }))
                .filter(({ portal }) => !net.isIPv4(portal.slice(0, portal.lastIndexOf(":"))))
                .map(({ portal, j }) => ({
                    path: `iscsi[${i}].portals[${j}]`,
                    message: `${portal}: iSCSI portals are IPv4 address:port (the nodes find the LUN's device by the portal's address)`,
                })),
            ...hostIdClashes(Object.fromEntries(s.initiators.map((n) => [n, model.nodes[n]?.address ?? ""]))).map((message) => ({
                path: `iscsi[${i}].initiators`,
                message: `${message}; the driver's lock daemon derives it from the node address (low 11 bits): pick initiators whose addresses differ there`,
            })),
        ]),
    shared: (_storages, ctx) =>
        new CsiSanlockLvm(driverName, { namespace: ctx.namespace, imageRegistry: ctx.imageRegistry, leaderElection: ctx.model.leaderElection }, ctx.opts) as CsiDriverRef,
    external: (ctx) => externalDriver(sanlockDriverName, ctx.namespace, ctx.imageRegistry),
    component: (s, _i, driver, ctx) =>
        new IscsiStorage(
            s.name,
            {
                portals: s.portals,
                iqn: s.iqn,
                lun: s.lun,
                chap: s.chap && { username: s.chap.username, password: pulumi.secret(s.chap.password) },
                initiators: s.initiators,
                nodes: ctx.model.nodes,
                ssh: ctx.ssh(),
                kube: ctx.kube(),
                driver,
                isDefault: s.default,
                wipe: s.wipe,
            },
            ctx.opts,
        ),
    outputs: (s) => ({ storageClassName: s.storageClassName, initiators: s.initiators, volumeGroup: s.volumeGroup, lun: s.lun }),
    // No exporter reports iSCSI sessions or sanlock lockspaces (docs/monitoring.md "What is not
    // watched"): the driver's pods and the kubelets' volume stats are what can be watched.
    monitoring: (storages, ctx) =>
        driverMonitoring(
            {
                type: "iscsi",
                title: "iSCSI",
                stem: "CsiSanlockLvm",
                driver: driverName,
                provisioner: sanlockDriverName,
                workloads: csiDriverWorkloads(driverName),
            },
            storages,
            ctx,
        ),
});
