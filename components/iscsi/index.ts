export { IscsiStorage, IscsiStorageArgs } from "./iscsiStorage";
export { CsiSanlockLvm, CsiSanlockLvmArgs, sanlockDriverName } from "./csiSanlockLvm";
export { iscsiInitiatorCommands, iscsiVgCommands, iscsiVolumeGroup, chapStdin, parseLunReport, parseVgReport } from "./commands";
export { sanlockHostId, hostIdClashes, sanlockAllowedTopologies, sanlockTopologyKey } from "./hostId";
