/**
 * Building blocks of a test node: loop devices from sparse files, an LVM view that sees only
 * those devices, and a private sshd on 127.0.0.1 that hands the LVM view to every session.
 * Used by the node tier's harness (one node, in-process) and the engine sandbox (many nodes
 * that outlive the process that started them).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { writeTestLvmConf } from "./lvmConf";

export const lvmQuiet = { LVM_SUPPRESS_FD_WARNINGS: "1" };

export function sh(cmd: string, args: string[], env?: NodeJS.ProcessEnv): string {
    return execFileSync(cmd, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"] });
}

/** Runs a teardown step; a failure does not stop the next step. */
export function tryRun(cmd: string, args: string[], env?: NodeJS.ProcessEnv): void {
    try {
        execFileSync(cmd, args, { env, stdio: "ignore" });
    } catch {
        // teardown goes on with the next step
    }
}

export function which(name: string, fallbacks: string[]): string {
    for (const dir of (process.env.PATH ?? "").split(":").concat(fallbacks)) {
        const p = path.join(dir, name);
        if (fs.existsSync(p)) {
            return p;
        }
    }
    throw new Error(`${name} not found (install openssh-server)`);
}

/** A sparse file of sizeMiB attached to a free loop device; returns /dev/loopN. */
export function attachLoop(image: string, sizeMiB: number): string {
    fs.writeFileSync(image, "");
    fs.truncateSync(image, sizeMiB * 1024 * 1024);
    return sh("losetup", ["--find", "--show", image]).trim();
}

/**
 * Writes lvmDir/lvm.conf: LVM sees the given loop devices (and their partitions) and nothing
 * else, keeps its locks and metadata backups under lvmDir, and never waits for udev. Two views
 * with different devices hold volume groups of the same name without seeing each other.
 */
export function writeLvmView(lvmDir: string, loops: string[]): NodeJS.ProcessEnv {
    writeTestLvmConf(lvmDir, loops);
    return { ...lvmQuiet, LVM_SYSTEM_DIR: lvmDir };
}

/** Removes every VG an LVM view shows (by its filter, only VGs on its own devices). */
export function removeVgs(env: NodeJS.ProcessEnv): void {
    if (!fs.existsSync(path.join(env.LVM_SYSTEM_DIR ?? "", "lvm.conf"))) {
        return;
    }
    let vgs: string[] = [];
    try {
        vgs = sh("vgs", ["--noheadings", "-o", "vg_name"], { ...process.env, ...env }).split(/\s+/).filter(Boolean);
    } catch {
        // nothing to remove
    }
    for (const vg of vgs) {
        tryRun("vgremove", ["-ff", "-y", vg], { ...process.env, ...env });
    }
}

/** The /dev paths of the partitions the kernel shows for dev. */
export function partitionsOf(dev: string): string[] {
    const name = path.basename(dev);
    const sys = path.join("/sys/class/block", name);
    if (!fs.existsSync(sys)) {
        return [];
    }
    return fs
        .readdirSync(sys)
        .filter((n) => n.startsWith(name) && fs.existsSync(path.join(sys, n, "partition")))
        .sort()
        .map((n) => `/dev/${n}`);
}

/** Drops PV labels and signatures of dev and its partitions, as seen through an LVM view. */
export function wipeLoop(dev: string, env: NodeJS.ProcessEnv): void {
    const lvmEnv = { ...process.env, ...env };
    tryRun("swapoff", [dev]);
    for (const p of partitionsOf(dev)) {
        tryRun("pvremove", ["-ff", "-y", p], lvmEnv);
        tryRun("wipefs", ["--all", "--quiet", p]);
    }
    tryRun("partx", ["-d", dev]);
    tryRun("pvremove", ["-ff", "-y", dev], lvmEnv);
    tryRun("wipefs", ["--all", "--quiet", dev]);
}

/** Creates an ed25519 key pair without passphrase at file (and file.pub). */
export function newKey(file: string, comment: string): void {
    sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file]);
}

/** "ssh-ed25519 AAAA..." of a public key file, without its comment. */
export function publicKeyOf(pubFile: string): string {
    return fs.readFileSync(pubFile, "utf8").trim().split(/\s+/).slice(0, 2).join(" ");
}

export interface SshdSettings {
    port: number;
    hostKey: string;
    pidFile: string;
    authorizedKeys: string;
    /** Environment every session gets (the node's LVM view). */
    sessionEnv: NodeJS.ProcessEnv;
}

/** An sshd_config for root key login on 127.0.0.1 only, with the node's session environment. */
export function sshdConfig(s: SshdSettings): string {
    const setEnv = Object.entries(s.sessionEnv)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ");
    // Debian's sshd needs its privilege separation dir (normally made by the service unit).
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    return [
        `Port ${s.port}`,
        "ListenAddress 127.0.0.1",
        `HostKey ${s.hostKey}`,
        `PidFile ${s.pidFile}`,
        `AuthorizedKeysFile ${s.authorizedKeys}`,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PrintMotd no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "MaxStartups 100",
        "MaxSessions 100",
        // The engine's CopyToRemote writes script bundles over SFTP.
        "Subsystem sftp internal-sftp",
        `SetEnv ${setEnv}`,
        "",
    ].join("\n");
}

export const sshdPath = () => which("sshd", ["/usr/sbin", "/sbin"]);
