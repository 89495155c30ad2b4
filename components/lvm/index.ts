export { LvmStorage, LvmStorageArgs, LvmDevice } from "./lvmStorage";
export { TopolvmDriver, TopolvmDriverArgs, topolvmDriverName } from "./topolvm";
export { lvmApplyCommand, lvmReleaseCommand } from "./commands";
export { lvmdConfig } from "./lvmd";
