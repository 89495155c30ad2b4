export { NfsStorage, NfsStorageArgs } from "./nfsStorage";
export { CsiDriverNfs, CsiDriverNfsArgs } from "./csiDriverNfs";
export { nfsDriverName, nfsStorageClassParameters, nfsSubDirPattern } from "./parameters";
export { nfsControllerClusterRules, nfsControllerNamespaceRules } from "./rbac";
