export { CephFsStorage, CephFsStorageArgs } from "./cephFsStorage";
export { CephFsIdentity, CephFsIdentityArgs } from "./identity";
export { CephCsiDriver, CephCsiDriverArgs, cephFsDriverName } from "./cephCsiDriver";
export * from "./cluster";
