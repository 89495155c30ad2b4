import * as fs from "node:fs";
import * as path from "node:path";

/**
 * Writes <lvmDir>/lvm.conf for LVM_SYSTEM_DIR=<lvmDir>: LVM sees the test's loop devices (and
 * their partitions) and nothing else of the machine, without udev, hints or a devices file.
 */
export function writeTestLvmConf(lvmDir: string, loops: string[]): void {
    const accept = loops.map((l) => `"a|^${l}(p[0-9]+)?$|"`).join(", ");
    fs.mkdirSync(lvmDir, { recursive: true });
    fs.writeFileSync(
        path.join(lvmDir, "lvm.conf"),
        [
            "# tests only: LVM sees these loop devices and nothing else of the machine",
            "devices {",
            `    global_filter = [ ${accept}, "r|.*|" ]`,
            '    hints = "none"',
            "    obtain_device_list_from_udev = 0",
            '    external_device_info_source = "none"',
            "    use_devicesfile = 0",
            "}",
            "global {",
            // A lock directory of its own: LVM commands of one test node never wait on another's.
            `    locking_dir = "${path.join(lvmDir, "lock")}"`,
            "}",
            "activation {",
            "    udev_sync = 0",
            "    udev_rules = 0",
            "}",
            "backup {",
            `    backup_dir = "${path.join(lvmDir, "backup")}"`,
            `    archive_dir = "${path.join(lvmDir, "archive")}"`,
            "}",
            "",
        ].join("\n"),
    );
}
