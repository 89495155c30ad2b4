import { deployStorages, limitRegistrationStackTraces, loadStackConfig } from "./components";
import { planPiece } from "./tools/plan/piece";

// Each resource's registration stack goes into the checkpoint: keep its first frames only.
limitRegistrationStackTraces();

// Thin on purpose: read config -> validate (throws listing every error, before any resource)
// -> instantiate components -> export outputs.
const model = loadStackConfig();
// planPiece: the whole model, except in the offline plan of a big stack (tools/plan/piece.ts).
const deployed = deployStorages(planPiece(model));

export const namespace = deployed.namespace;
export const storageClasses = deployed.storageClasses;
/** Per type: storage name -> that storage's outputs. */
export const { lvm, nfs, cephfs, iscsi } = deployed.outputs;
