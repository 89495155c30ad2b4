import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { NodeAddress, SshSettings, needsSudo, nodeConnection, nodeScriptCommand } from "../node/nodeCommand";
import { nodeStorageLabel } from "../node/nodeLabel";
import { DrainKubeTarget } from "../k8s/kubeTarget";
import { storageClass } from "../k8s/storageClass";
import { CsiDriverRef } from "../k8s/driverRef";
import { sanlockAllowedTopologies } from "./hostId";
import { chapStdin, iscsiInitiatorCommands, iscsiInitiatorScriptFiles, iscsiVgCommands, iscsiVgScriptFiles, iscsiVolumeGroup, parseVgReport } from "./commands";

export interface IscsiStorageArgs {
    /** `host:port` of every portal to the target; several portals are paths to one LUN (multipath). */
    portals: string[];
    iqn: string;
    lun: number;
    /** CHAP credentials; the password reaches the nodes on stdin only (mark it secret). */
    chap?: { username: string; password: pulumi.Input<string> };
    /** Nodes that log in to the target and may run the storage's pods. */
    initiators: string[];
    /** Node name -> SSH endpoint, for every initiator. */
    nodes: Record<string, NodeAddress>;
    ssh: SshSettings;
    /** The cluster the node label commands' kubectl talks to: the Kubernetes provider's. */
    kube?: DrainKubeTarget;
    /** The shared csi-sanlock-lvm installation (deployed by this stack or another). */
    driver: CsiDriverRef;
    isDefault?: boolean;
    /** Allow wiping a LUN that carries signatures or another VG. */
    wipe?: boolean;
}

const commandTimeouts = { create: "20m", update: "20m", delete: "15m" };

/**
 * RWO volumes from an existing iSCSI target on the chosen initiators: per initiator one login
 * command (CHAP on stdin), one command that creates or adopts the shared sanlock VG on the LUN
 * (on the first initiator, after its login), then the initiator labels, then the StorageClass.
 *
 * CHAP is an input of the login commands only: a CHAP change re-logs in and never reaches the
 * VG command. Removing an initiator deletes its label first, then its login (refused while an
 * LV is active there). Deleting the storage never removes a VG that holds volumes.
 */
export class IscsiStorage extends pulumi.ComponentResource {
    public readonly storageClassName: pulumi.Output<string>;
    public readonly initiators: pulumi.Output<string[]>;
    public readonly volumeGroup: pulumi.Output<string>;
    /** The VG's UUID and the LUN's WWID as the VG command found them. */
    public readonly lun: pulumi.Output<{ uuid: string; wwid: string } | undefined>;
    public readonly logins: Record<string, command.remote.Command> = {};
    public readonly vgCommand: command.remote.Command;

    constructor(name: string, args: IscsiStorageArgs, opts?: pulumi.ComponentResourceOptions) {
        super("zcloud:storage:IscsiStorage", name, {}, opts);
        const child = { parent: this };
        const vg = iscsiVolumeGroup(name);
        const target = { storage: name, portals: args.portals, iqn: args.iqn, lun: args.lun };
        const stdin = args.chap && pulumi.secret(pulumi.output(args.chap.password).apply(chapStdin));
        if (args.initiators.length === 0) {
            throw new Error(`IscsiStorage ${name}: no initiators`);
        }

        const node = (nodeName: string) => {
            const address = args.nodes[nodeName];
            if (!address) {
                throw new Error(`IscsiStorage ${name}: initiator ${nodeName} has no SSH address in nodes`);
            }
            return { connection: nodeConnection(args.ssh, nodeName, address), sudo: needsSudo(args.ssh, address) };
        };

        for (const initiator of args.initiators) {
            const { connection, sudo } = node(initiator);
            const login = iscsiInitiatorCommands({ ...target, chapUser: args.chap?.username }, sudo);
            this.logins[initiator] = nodeScriptCommand(
                `${name}-${initiator}-login`,
                { connection, scripts: iscsiInitiatorScriptFiles, create: login.apply, update: login.apply, delete: login.release, ...(stdin ? { stdin } : {}) },
                { ...child, deleteBeforeReplace: true, customTimeouts: commandTimeouts },
            );
        }

        // The VG is made once, on the first initiator after its login; its inputs hold no CHAP.
        const anchor = args.initiators[0];
        const { connection, sudo } = node(anchor);
        const vgCommands = iscsiVgCommands({ ...target, wipe: args.wipe ?? false }, sudo);
        this.vgCommand = nodeScriptCommand(
            `${name}-vg`,
            { connection, scripts: iscsiVgScriptFiles, create: vgCommands.apply, update: vgCommands.apply, delete: vgCommands.release },
            { ...child, dependsOn: [this.logins[anchor]], deleteBeforeReplace: true, customTimeouts: commandTimeouts },
        );

        const labels = args.initiators.map((initiator) =>
            nodeStorageLabel(
                { node: initiator, type: "iscsi", storage: name, devices: [`${args.iqn}/lun${args.lun}`], kube: args.kube ?? {} },
                { ...child, dependsOn: [this.logins[initiator], this.vgCommand] },
            ),
        );

        const sc = storageClass(
            name,
            {
                provisioner: args.driver.driverName,
                isDefault: args.isDefault ?? false,
                parameters: { volumeGroup: vg },
                // The scheduler picks an initiator first (the driver's topology: the kubelet labels a
                // node with its host id once the plugin registers); the volume is made for that pod.
                volumeBindingMode: "WaitForFirstConsumer",
                allowedTopologies: sanlockAllowedTopologies(args.initiators.map((n) => args.nodes[n].address)),
            },
            { ...child, dependsOn: [...args.driver.ready, this.vgCommand, ...labels] },
        );

        this.storageClassName = sc.metadata.name;
        this.initiators = pulumi.output(args.initiators);
        this.volumeGroup = pulumi.output(vg);
        this.lun = this.vgCommand.stdout.apply((out) => {
            const report = parseVgReport(out ?? "");
            return report && { uuid: report.uuid, wwid: report.wwid };
        });
        this.registerOutputs({ storageClassName: this.storageClassName, initiators: this.initiators, volumeGroup: this.volumeGroup, lun: this.lun });
    }
}
