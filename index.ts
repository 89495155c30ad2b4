import { deployStorages, limitRegistrationStackTraces, loadStackConfig } from "./components";

// Each resource's registration stack goes into the checkpoint: keep its first frames only.
limitRegistrationStackTraces();

// Thin on purpose: read config -> validate (throws listing every error, before any resource)
// -> instantiate components -> export outputs.
const model = loadStackConfig();
const deployed = deployStorages(model);

export const namespace = deployed.namespace;
export const storageClasses = deployed.storageClasses;
/** Per type: storage name -> that storage's outputs. */
export const { lvm, nfs, cephfs, iscsi } = deployed.outputs;
