import { deployStorages, loadStackConfig } from "./components";

// Thin on purpose: read config -> validate (throws listing every error, before any resource)
// -> instantiate components -> export outputs.
const model = loadStackConfig();
const deployed = deployStorages(model);

export const namespace = deployed.namespace;
export const storageClasses = deployed.storageClasses;
export const lvm = Object.fromEntries(
    deployed.lvm.map((s, i) => [model.lvm[i].name, { volumeGroup: s.volumeGroup, nodes: s.nodes, devices: s.devices }]),
);
export const nfs = Object.fromEntries(
    deployed.nfs.map((s, i) => [model.nfs[i].name, { storageClassName: s.storageClassName, server: s.server, path: s.path }]),
);
export const cephfs = Object.fromEntries(
    deployed.cephfs.map((s, i) => [
        model.cephfs[i].name,
        { storageClassName: s.storageClassName, nodes: s.nodes, devices: s.devices, namespace: s.namespace, fsid: s.fsid },
    ]),
);
