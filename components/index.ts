/**
 * zcloud-storage components, usable from any Pulumi TypeScript program with its own providers:
 *
 *     import { TopolvmDriver, LvmStorage } from "zcloud-storage/components";
 */
export * from "./lvm";
export * from "./nfs";
export * from "./cephfs";
export * from "./iscsi";
export { SshSettings, NodeAddress } from "./node/nodeCommand";
export { storageNamespace } from "./k8s/namespace";
export { imageRef, images } from "./images";
export { limitRegistrationStackTraces } from "./stackTraces";
export { deployStorages, DeployedStorages } from "./stack";
export { loadStackConfig, configNamespace } from "./config/load";
export { parseStackConfig, ParseResult, ParseOptions } from "./config/parse";
export { ConfigValidationError, ConfigIssue, formatIssue } from "./config/errors";
export * from "./config/model";
