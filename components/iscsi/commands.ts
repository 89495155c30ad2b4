import { renderNodeCommand } from "../node/script";

/** The scripts of an initiator's login command and of the VG command, shared libraries first. */
export const iscsiInitiatorScriptFiles = ["lib.sh", "iscsi-lib.sh", "iscsi-initiator.sh"];
export const iscsiVgScriptFiles = ["lib.sh", "iscsi-lib.sh", "iscsi-vg.sh"];

/**
 * sanlock's io timeout, in seconds, for the VG command's short-lived lock stack and the driver's
 * lock daemons alike: longer than sanlock's 10 s default, so a slow SAN path does not cost the
 * lease (csi-sanlock-lvm's lock-loss issue).
 */
export const sanlockIoTimeout = 30;

/** Seconds a login waits for the LUN's device (and its multipath map) to appear. */
export const deviceWaitSeconds = 90;

/** The shared VG of an iSCSI storage on its LUN. */
export function iscsiVolumeGroup(storage: string): string {
    return `zcloud-${storage}`;
}

export interface IscsiTargetSpec {
    storage: string;
    portals: string[];
    iqn: string;
    lun: number;
}

export interface NodeCommandPair {
    apply: string;
    release: string;
}

/** The options every iSCSI node script takes: never a secret. */
export function iscsiTargetArgs(t: IscsiTargetSpec): string[] {
    if (t.portals.length === 0) {
        throw new Error(`iscsi ${t.storage}: no portals`);
    }
    if (!Number.isInteger(t.lun) || t.lun < 0) {
        throw new Error(`iscsi ${t.storage}: lun must be a non-negative integer, got ${t.lun}`);
    }
    return [
        "--storage", t.storage,
        "--vg", iscsiVolumeGroup(t.storage),
        "--target", t.iqn,
        "--lun", String(t.lun),
        ...t.portals.flatMap((p) => ["--portal", p]),
        "--wait", String(deviceWaitSeconds),
    ];
}

function pair(files: string[], name: string, apply: string[], release: string[], sudo: boolean): NodeCommandPair {
    return {
        apply: renderNodeCommand({ files, name, args: ["apply", ...apply], sudo }),
        release: renderNodeCommand({ files, name, args: ["release", ...release], sudo }),
    };
}

/**
 * One initiator's login (apply: records, CHAP from stdin, login, multipath, wait) and logout
 * (release: refuses while an LV is active there). `chap` only says that stdin carries the pair.
 */
export function iscsiInitiatorCommands(t: IscsiTargetSpec & { chap: boolean }, sudo: boolean): NodeCommandPair {
    const args = iscsiTargetArgs(t);
    return pair(iscsiInitiatorScriptFiles, "iscsi-initiator", [...args, ...(t.chap ? ["--chap"] : [])], args, sudo);
}

/** The shared VG: created or adopted once (apply); never removed with volumes (release). */
export function iscsiVgCommands(t: IscsiTargetSpec & { wipe: boolean }, sudo: boolean): NodeCommandPair {
    const args = [...iscsiTargetArgs(t), "--io-timeout", String(sanlockIoTimeout)];
    return pair(iscsiVgScriptFiles, "iscsi-vg", [...args, ...(t.wipe ? ["--wipe"] : [])], args, sudo);
}

/**
 * What the login command reads on stdin: the CHAP username and password, one line each. A line
 * break inside either would shift the pair, so it is refused here, before anything runs.
 */
export function chapStdin(chap: { username: string; password: string }): string {
    for (const [key, value] of Object.entries(chap)) {
        if (/[\r\n]/.test(value) || value === "") {
            throw new Error(`CHAP ${key} must be one non-empty line`);
        }
    }
    return `${chap.username}\n${chap.password}\n`;
}

/** `zcloud-iscsi-lun: <wwid> <device>` of a login's output. */
export function parseLunReport(stdout: string): { wwid: string; device: string } | undefined {
    const m = /^zcloud-iscsi-lun: (\S+) (\S+)$/m.exec(stdout);
    return m ? { wwid: m[1], device: m[2] } : undefined;
}

/** `zcloud-iscsi-vg: <vg> <uuid> <wwid>` of the VG command's output. */
export function parseVgReport(stdout: string): { vg: string; uuid: string; wwid: string } | undefined {
    const m = /^zcloud-iscsi-vg: (\S+) (\S+) (\S+)$/m.exec(stdout);
    return m ? { vg: m[1], uuid: m[2], wwid: m[3] } : undefined;
}
