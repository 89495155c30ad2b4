import { DeviceWipe } from "../config/model";

/**
 * The wipe licence a disk command of one node carries, as script arguments: `--wipe-on-create`
 * for `wipe: true` (the devices of the run that creates the storage on the node), one
 * `--wipe-device <dev>` per device the `wipe` map names for this node. Nothing else is wiped.
 */
export function nodeWipeArgs(wipe: DeviceWipe | undefined, node: string): string[] {
    if (wipe === true) {
        return ["--wipe-on-create"];
    }
    if (!wipe) {
        return [];
    }
    return (Object.hasOwn(wipe, node) ? wipe[node] : []).flatMap((device) => ["--wipe-device", device]);
}
