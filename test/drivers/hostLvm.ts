/**
 * A volume group on a loop device, seen through a private LVM config that accepts that device
 * only, so lvmd started by a test finds its VG and nothing of this machine's other disks.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { writeTestLvmConf } from "../helpers/lvmConf";

export interface LoopVolumeGroup {
    vg: string;
    /** LVM_SYSTEM_DIR for every lvm command that should see this VG. */
    lvmSystemDir: string;
    close(): void;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): string {
    return execFileSync(cmd, args, { encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

export function loopVolumeGroup(dir: string, vg: string, sizeMiB = 64): LoopVolumeGroup {
    const image = path.join(dir, "disk.img");
    fs.writeFileSync(image, "");
    fs.truncateSync(image, sizeMiB * 1024 * 1024);
    const loop = run("losetup", ["--find", "--show", image]).trim();
    const lvmSystemDir = path.join(dir, "lvm");
    writeTestLvmConf(lvmSystemDir, [loop]);
    const env = { LVM_SYSTEM_DIR: lvmSystemDir };
    let closed = false;
    const close = () => {
        if (closed) {
            return;
        }
        closed = true;
        try {
            run("vgremove", ["-f", "-q", vg], env);
        } catch {
            // never created, or already gone
        }
        try {
            run("losetup", ["-d", loop]);
        } catch {
            // already detached
        }
    };
    try {
        run("vgcreate", ["-q", vg, loop], env);
    } catch (e) {
        close();
        throw e;
    }
    return { vg, lvmSystemDir, close };
}
