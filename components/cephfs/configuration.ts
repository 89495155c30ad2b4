import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { commonLabels } from "../naming";
import { cephNames, renderCephConf } from "./cluster";
import { CephFsIdentity } from "./identity";

export interface CephConfigurationArgs {
    storage: string;
    namespace: pulumi.Input<string>;
    identity: CephFsIdentity;
    /** Pool size written into ceph.conf's pool defaults. */
    replicas: number;
}

export interface CephConfiguration {
    /** ceph.conf: fsid, mon addresses, pool defaults; never a key. */
    conf: k8s.core.v1.ConfigMap;
    /** ceph.conf's text (its hash rolls the daemons). */
    confText: pulumi.Output<string>;
    /** mon., client.admin, bootstrap-osd and the CSI user's key. */
    keys: k8s.core.v1.Secret;
    /** Only the bootstrap-osd key, for the OSD workloads. */
    osdKeys: k8s.core.v1.Secret;
}

/** The storage's ceph.conf ConfigMap and its key Secrets (keys from the identity's state). */
export function cephConfiguration(a: CephConfigurationArgs, opts: pulumi.CustomResourceOptions): CephConfiguration {
    const names = cephNames(a.storage);
    const id = a.identity;
    const labels = (component: string) => commonLabels(component, a.storage);
    const confText = pulumi.all([id.fsid, id.monAddresses]).apply(([fsid, mons]) => renderCephConf({ fsid, mons, replicas: a.replicas }));
    const conf = new k8s.core.v1.ConfigMap(
        `${a.storage}-ceph-conf`,
        {
            metadata: { name: names.conf, namespace: a.namespace, labels: labels("ceph-conf") },
            data: { "ceph.conf": confText },
        },
        opts,
    );
    const keySecret = (resource: string, name: string, stringData: Record<string, pulumi.Input<string>>) =>
        new k8s.core.v1.Secret(resource, { metadata: { name, namespace: a.namespace, labels: labels("ceph-keys") }, type: "Opaque", stringData }, opts);
    // Daemons' init steps, the admin pods and the filesystem Job: mon., client.admin, bootstrap-osd, csi.
    const keys = keySecret(`${a.storage}-ceph-keys`, names.keys, {
        mon: id.keys.mon,
        admin: id.keys.admin,
        "bootstrap-osd": id.keys["bootstrap-osd"],
        csi: id.keys.csi,
    });
    // OSD workloads get only the bootstrap-osd key.
    const osdKeys = keySecret(`${a.storage}-ceph-osd-keys`, names.osdKeys, { "bootstrap-osd": id.keys["bootstrap-osd"] });
    return { conf, confText, keys, osdKeys };
}
