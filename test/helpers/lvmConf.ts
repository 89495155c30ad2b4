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
            "# test tiers only: LVM sees the test's loop devices and nothing else",
            "devices {",
            `    global_filter = [ ${accept}, "r|.*|" ]`,
            '    hints = "none"',
            "    obtain_device_list_from_udev = 0",
            '    external_device_info_source = "none"',
            "    use_devicesfile = 0",
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
