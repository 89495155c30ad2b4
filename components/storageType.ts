import * as pulumi from "@pulumi/pulumi";
import { ConfigIssue } from "./config/errors";
import { StackModel, StorageType } from "./config/model";
import { DrainKubeTarget } from "./k8s/kubeTarget";
import { MonitoringContext } from "./monitoring/context";
import { TypeMonitoring } from "./monitoring/typeMonitoring";
import { SshSettings } from "./node/nodeCommand";

/** What every storage type's driver and components are built from. */
export interface DeployContext {
    model: StackModel;
    namespace: pulumi.Output<string>;
    imageRegistry?: string;
    /** The SSH settings; throws for a hand-built model without them (validation reports it). */
    ssh(): SshSettings;
    /** The cluster the Kubernetes provider uses, for what runs kubectl where `pulumi up` runs. */
    kube(): DrainKubeTarget;
    opts: pulumi.ComponentResourceOptions;
}

export type StorageConfigOf<K extends StorageType> = StackModel[K][number];

/**
 * One storage type in one place (its folder): the shared pieces built once when the config has
 * any storage of the type (or lists the type in `drivers`), one component per storage, and the
 * stack outputs of a component.
 */
export interface StorageTypeDefinition<K extends StorageType, Shared, Component extends { storageClassName: pulumi.Output<string> }> {
    type: K;
    /** Problems only the type can see, reported with the config's errors before any resource. */
    check?(storages: StackModel[K], model: StackModel): ConfigIssue[];
    shared(storages: StackModel[K], ctx: DeployContext): Shared;
    /**
     * The same for a stack whose shared resources another stack owns (`sharedResources: external`):
     * refers to that stack's driver by name and registers nothing. A type without it cannot be split
     * off (config validation refuses its storages in such a stack).
     */
    external?(ctx: DeployContext): Shared;
    component(storage: StorageConfigOf<K>, index: number, shared: Shared, ctx: DeployContext): Component;
    outputs(component: Component): Record<string, pulumi.Input<unknown>>;
    /**
     * What monitoring watches of the type (zcloud-storage:monitoring): its metrics endpoints, the
     * alerts of its driver and of each storage (whose `alerts` hold the resolved thresholds), and
     * its dashboard. Plain data: the stack's Monitoring component turns it into objects.
     */
    monitoring(storages: StackModel[K], ctx: MonitoringContext): TypeMonitoring;
}

/** Identity function that checks a definition's types and keeps them for the registry. */
export function defineStorageType<K extends StorageType, Shared, Component extends { storageClassName: pulumi.Output<string> }>(
    definition: StorageTypeDefinition<K, Shared, Component>,
): StorageTypeDefinition<K, Shared, Component> {
    return definition;
}
