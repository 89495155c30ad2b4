import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { commonLabels } from "../naming";

export const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

export interface StorageClassArgs {
    provisioner: string;
    isDefault: boolean;
    parameters: Record<string, string>;
    volumeBindingMode: "WaitForFirstConsumer" | "Immediate";
    reclaimPolicy?: "Delete" | "Retain";
    mountOptions?: string[];
}

/**
 * The StorageClass named after the storage. Its parameters are immutable in Kubernetes, so a
 * change replaces it, delete first (the name stays the same). Existing volumes keep their class.
 * The provider itself replaces only on parameters and provisioner; reclaimPolicy and
 * volumeBindingMode are immutable too, so they are marked here (else `up` would fail on them).
 */
export function storageClass(name: string, a: StorageClassArgs, opts: pulumi.CustomResourceOptions): k8s.storage.v1.StorageClass {
    return new k8s.storage.v1.StorageClass(
        `${name}-storageclass`,
        {
            metadata: {
                name,
                labels: commonLabels("storageclass", name),
                annotations: { [defaultClassAnnotation]: a.isDefault ? "true" : "false" },
            },
            provisioner: a.provisioner,
            parameters: a.parameters,
            reclaimPolicy: a.reclaimPolicy ?? "Delete",
            volumeBindingMode: a.volumeBindingMode,
            allowVolumeExpansion: true,
            ...(a.mountOptions?.length ? { mountOptions: a.mountOptions } : {}),
        },
        { ...opts, deleteBeforeReplace: true, replaceOnChanges: ["reclaimPolicy", "volumeBindingMode"] },
    );
}
