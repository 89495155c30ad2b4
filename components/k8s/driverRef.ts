import * as pulumi from "@pulumi/pulumi";

/**
 * What a storage needs of its type's CSI driver: the driver's name, where its pieces run, and
 * what its StorageClasses wait for. The driver is either deployed by this stack or owned by
 * another stack of the cluster (`sharedResources: external`), referred to by name only.
 */
export interface CsiDriverRef {
    readonly driverName: string;
    /** The storage namespace the driver runs in; per-storage daemons go there too. */
    readonly namespace: pulumi.Output<string>;
    readonly imageRegistry?: string;
    /**
     * Created after and deleted before these: the driver's controller when this stack deploys it.
     * Empty for a driver of another stack: its resources cannot be dependencies here, and a
     * StorageClass needs no running provisioner to exist.
     */
    readonly ready: pulumi.Resource[];
}

/** A driver another stack deploys, expected by name in the given namespace. */
export function externalDriver(driverName: string, namespace: pulumi.Output<string>, imageRegistry?: string): CsiDriverRef {
    return { driverName, namespace, imageRegistry, ready: [] };
}
