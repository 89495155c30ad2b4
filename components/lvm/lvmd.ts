import * as yaml from "js-yaml";
import { ThinConfig } from "../config/model";

/** Where lvmd listens on the node; topolvm-node connects there through a host path. */
export const lvmdSocketDir = "/run/topolvm";
export const lvmdSocket = `${lvmdSocketDir}/lvmd.sock`;

/** Where the lvmd container finds its lvmd.yaml (the ConfigMap's mount). */
export const lvmdConfigDir = "/etc/topolvm";

/**
 * lvmd as TopoLVM 0.41.0 starts it: flags only for what its config file cannot say. (`--container`
 * was removed in 0.31.0; lvmd refuses unknown flags, so a stale flag is a crash loop.)
 */
export const lvmdCommand = ["/lvmd", `--config=${lvmdConfigDir}/lvmd.yaml`];

/**
 * Space lvmd keeps free in a device class, in GiB. lvmd's default is 10 (upstream's chart example
 * too), meant for VGs shared with the host; our VG is the storage's own, and a thin pool already
 * leaves (100 - poolPercent) % of the VG for its metadata, so nothing is held back.
 */
export const lvmdSpareGb = 0;

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
        "spare-gb": lvmdSpareGb,
    };
    if (a.thin) {
        deviceClass.type = "thin";
        deviceClass["thin-pool"] = { name: thinPoolName, "overprovision-ratio": a.thin.overprovisionRatio };
    }
    return yaml.dump({ "socket-name": lvmdSocket, "device-classes": [deviceClass] }, { lineWidth: -1 });
}
