import * as yaml from "js-yaml";
import { ThinConfig } from "../config/model";

/** Where lvmd listens on the node; topolvm-node connects there through a host path. */
export const lvmdSocketDir = "/run/topolvm";
export const lvmdSocket = `${lvmdSocketDir}/lvmd.sock`;

/** The thin pool LV inside a storage's VG. */
export const thinPoolName = "pool";

export interface LvmdConfigArgs {
    /** Device class name: the storage name, which its StorageClass selects. */
    deviceClass: string;
    volumeGroup: string;
    thin?: ThinConfig;
}

/** lvmd.yaml for one storage's nodes: one device class, thick or thin. */
export function lvmdConfig(a: LvmdConfigArgs): string {
    const deviceClass: Record<string, unknown> = {
        name: a.deviceClass,
        "volume-group": a.volumeGroup,
        default: true,
    };
    if (a.thin) {
        deviceClass.type = "thin";
        deviceClass["thin-pool"] = { name: thinPoolName, "overprovision-ratio": a.thin.overprovisionRatio };
    }
    return yaml.dump({ "socket-name": lvmdSocket, "device-classes": [deviceClass] }, { lineWidth: -1 });
}
