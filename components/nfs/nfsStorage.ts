import * as pulumi from "@pulumi/pulumi";
import { NfsOnDelete } from "../config/model";
import { storageClass } from "../k8s/storageClass";
import { CsiDriverRef } from "../k8s/driverRef";
import { nfsStorageClassParameters } from "./parameters";

export interface NfsStorageArgs {
    /** NFS server: IPv4 or IPv6 address (without brackets) or hostname. */
    server: string;
    /** Absolute path of the export on the server; volumes are directories below it. */
    path: string;
    /** What happens to a volume's directory when its claim is deleted. Default archive. */
    onDelete?: NfsOnDelete;
    /** Passed to mount.nfs for every volume, e.g. ["nfsvers=4.1"]. */
    mountOptions?: string[];
    /** Make this the cluster's default StorageClass. */
    isDefault?: boolean;
    /** The shared csi-driver-nfs installation (deployed by this stack or another). */
    driver: CsiDriverRef;
}

/**
 * RWX volumes from an existing NFS export: a StorageClass on csi-driver-nfs that provisions one
 * directory per volume. Nothing runs on the NFS server and no node is touched.
 *
 * Changing server or path replaces only the StorageClass (delete first, same name). Existing
 * volumes stay where they are: each PV carries the server and path it was created with.
 */
export class NfsStorage extends pulumi.ComponentResource {
    public readonly storageClassName: pulumi.Output<string>;
    public readonly server: pulumi.Output<string>;
    public readonly path: pulumi.Output<string>;

    constructor(name: string, args: NfsStorageArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:NfsStorage", name, {}, opts);
        const sc = storageClass(
            name,
            {
                provisioner: args.driver.driverName,
                isDefault: args.isDefault ?? false,
                parameters: nfsStorageClassParameters({ server: args.server, path: args.path, onDelete: args.onDelete ?? "archive" }),
                // NFS has no topology: provision when the claim is made.
                volumeBindingMode: "Immediate",
                // The PV goes with its claim; onDelete decides what happens to the directory.
                reclaimPolicy: "Delete",
                mountOptions: args.mountOptions,
            },
            // Created after (and deleted before) the provisioner.
            { parent: this, dependsOn: [...args.driver.ready] },
        );

        this.storageClassName = sc.metadata.name;
        this.server = pulumi.output(args.server);
        this.path = pulumi.output(args.path);
        this.registerOutputs({ storageClassName: this.storageClassName, server: this.server, path: this.path });
    }
}
