/**
 * The node guards' device classification (lib.sh `zc_device_class DRIVER DM_UUID`), a pure
 * function over what a node's /proc/devices and /sys/.../dm/uuid say. The node and VM tiers
 * prove it on real swap, zram, loop, LVM and multipath devices; md RAID is classified here from
 * the driver names the kernel gives it (md, and mdp for partitionable arrays), not on a real array.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";

const lib = path.resolve(__dirname, "..", "..", "components", "node", "lib.sh");

function deviceClass(driver: string, dmUuid: string): string {
    return execFileSync("sh", ["-c", '. "$0"; zc_device_class "$1" "$2"', lib, driver, dmUuid], { encoding: "utf8" }).trim();
}

test("device classes from the block driver and the device-mapper UUID", () => {
    const cases: Array<[string, string, string]> = [
        ["device-mapper", "LVM-Xk3v1yWZcL0H7pR2eVnqD4hS8uTfA9bGmNoKj5iYxEw2sQ1rC6tU0lMvzPaBdFgH", "lvm-lv"],
        ["device-mapper", "LVM-Xk3v1yWZcL0H7pR2eVnqD4hS8uTfA9bG-tpool", "lvm-lv"],
        ["device-mapper", "mpath-3600140512345678901234567890abcde", "multipath"],
        ["device-mapper", "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-luks", "dm"],
        ["device-mapper", "", "dm"],
        ["zram", "", "zram"],
        ["loop", "", "loop"],
        ["md", "", "md"],
        ["mdp", "", "md"],
        ["sd", "", "disk"],
        ["virtblk", "", "disk"],
        ["blkext", "", "disk"],
        // a UUID only counts on a device-mapper device
        ["sd", "LVM-abc", "disk"],
    ];
    for (const [driver, uuid, expected] of cases) {
        assert.equal(deviceClass(driver, uuid), expected, `${driver} ${uuid}`);
    }
});
