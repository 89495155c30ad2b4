import { renderInlineNodeCommand } from "../node/script";
import { renderNodeCommand } from "../node/shipped";

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
 * One initiator's login (apply: records, CHAP password from stdin, login, multipath, wait) and
 * logout (release: refuses while an LV is active there). The CHAP username is no secret: it is an
 * argument, so a preview shows its change; the password only ever travels on stdin.
 */
export function iscsiInitiatorCommands(t: IscsiTargetSpec & { chapUser?: string }, sudo: boolean): NodeCommandPair {
    const args = iscsiTargetArgs(t);
    return pair(iscsiInitiatorScriptFiles, "iscsi-initiator", [...args, ...(t.chapUser !== undefined ? ["--chap-user", t.chapUser] : [])], args, sudo);
}

/** The shared VG: created or adopted once (apply); never removed with volumes (release). */
export function iscsiVgCommands(t: IscsiTargetSpec & { wipe: boolean }, sudo: boolean): NodeCommandPair {
    const args = [...iscsiTargetArgs(t), "--io-timeout", String(sanlockIoTimeout)];
    return pair(iscsiVgScriptFiles, "iscsi-vg", [...args, ...(t.wipe ? ["--wipe"] : [])], args, sudo);
}

/**
 * What the login command reads on stdin: the CHAP password, one line. A line break inside it
 * would cut it short, so it is refused here, before anything runs.
 */
export function chapStdin(password: string): string {
    if (/[\r\n]/.test(password) || password === "") {
        throw new Error("CHAP password must be one non-empty line");
    }
    return `${password}\n`;
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

export const iscsiStatusScriptFiles = ["lib.sh", "iscsi-lib.sh", "iscsi-status.sh"];

/** The read-only probe `npm run status` runs on an initiator: sessions, multipath, VG, lockspace. */
export function iscsiStatusCommand(t: IscsiTargetSpec, sudo: boolean): string {
    // A read-only probe outside Pulumi: it carries its scripts inline.
    return renderInlineNodeCommand({ files: iscsiStatusScriptFiles, name: "iscsi-status", args: iscsiTargetArgs(t), sudo });
}
