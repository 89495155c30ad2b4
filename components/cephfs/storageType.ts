import * as pulumi from "@pulumi/pulumi";
import { isSecretConfigKey } from "../config/load";
import { defineStorageType } from "../storageType";
import { CephCsiDriver } from "./cephCsiDriver";
import { CephFsStorage } from "./cephFsStorage";
import { CephFsIdentity } from "./identity";
import { cephFsMonitoring } from "./monitoring";

/**
 * CephFS: each storage's identity (fsid, keys, mon Services) first, then the one shared ceph-csi
 * driver whose config lists every cluster, then the storages themselves.
 */
export const cephFsStorageType = defineStorageType({
    type: "cephfs",
    shared: (storages, ctx) => {
        const identities = storages.map((s) => new CephFsIdentity(s.name, { namespace: ctx.namespace, hosts: Object.keys(s.hosts), keys: s.keys, csiKey: s.csiKey }, ctx.opts));
        const driver = new CephCsiDriver(
            "ceph-csi-cephfs",
            { namespace: ctx.namespace, imageRegistry: ctx.imageRegistry, clusters: identities.map((i) => i.csiCluster), leaderElection: ctx.model.leaderElection },
            ctx.opts,
        );
        // The drain's kubectl must reach the cluster the Kubernetes provider manages.
        const kubernetes = new pulumi.Config("kubernetes");
        const kubeconfigIsSecret = isSecretConfigKey("kubernetes:kubeconfig");
        return { identities, driver, kubeContext: kubernetes.get("context"), kubeconfig: kubernetes.get("kubeconfig"), kubeconfigIsSecret };
    },
    component: (s, i, { identities, driver, kubeContext, kubeconfig, kubeconfigIsSecret }, ctx) =>
        new CephFsStorage(
            s.name,
            {
                hosts: s.hosts,
                nodes: ctx.model.nodes,
                ssh: ctx.ssh(),
                identity: identities[i],
                driver,
                replicas: s.replicas,
                replicasConfigured: s.replicasConfigured,
                wipe: s.wipe,
                isDefault: s.default,
                imageRegistry: ctx.imageRegistry,
                kubeContext,
                kubeconfig,
                kubeconfigIsSecret,
                metrics: ctx.model.monitoring !== undefined,
            },
            ctx.opts,
        ),
    outputs: (s) => ({ storageClassName: s.storageClassName, nodes: s.nodes, devices: s.devices, namespace: s.namespace, fsid: s.fsid }),
    monitoring: cephFsMonitoring,
});
