/**
 * An iSCSI target on the test host for the VM tier: Debian's tgtd on 127.0.0.1 (the guests reach
 * it as 10.0.2.2), one LUN backed by a sparse file, CHAP, any number of portals. Nothing listens
 * beyond loopback; the daemon dies with the test process.
 */
import { ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { freePort } from "../helpers/net";

const execFileP = promisify(execFile);

export interface TargetSpec {
    iqn: string;
    /** LUN number of the backing disk (tgt's LUN 0 is its controller). */
    lun: number;
    sizeMiB: number;
    portals: number;
    chap: { username: string; password: string };
    /** More LUNs behind the same target, by number; `ext4` puts a filesystem on it first. */
    extraLuns?: Array<{ lun: number; ext4?: boolean }>;
}

export class IscsiTarget {
    readonly ports: number[] = [];
    private daemon?: ChildProcess;
    private dir = "";
    private controlPort = 0;
    private log = "";

    constructor(readonly spec: TargetSpec) {}

    async start(): Promise<void> {
        for (const tool of ["tgtd", "tgtadm"]) {
            await execFileP("sh", ["-c", `command -v ${tool}`]).catch(() => {
                throw new Error(`${tool} is not installed (bash test/setup installs tgt)`);
            });
        }
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-tgt-"));
        const backing = path.join(this.dir, "lun.img");
        fs.closeSync(fs.openSync(backing, "w"));
        fs.truncateSync(backing, this.spec.sizeMiB * 1024 * 1024);
        for (let i = 0; i < this.spec.portals; i++) {
            this.ports.push(await freePort());
        }
        // The management socket is /var/run/tgtd/socket.<n> (tgtd takes n up to 32767): derived
        // from a free port number so that concurrent runs do not share it.
        this.controlPort = 1000 + ((await freePort()) % 30000);
        fs.mkdirSync("/var/run/tgtd", { recursive: true });
        this.daemon = spawn("setpriv", ["--pdeathsig", "KILL", "--", "tgtd", "-f", "-C", String(this.controlPort), "--iscsi", `portal=127.0.0.1:${this.ports[0]}`], {
            stdio: ["ignore", "pipe", "pipe"],
        });
        this.daemon.stdout?.on("data", (d) => (this.log += d));
        this.daemon.stderr?.on("data", (d) => (this.log += d));
        await this.waitForControl();
        const { iqn, lun, chap } = this.spec;
        await this.admin("--mode", "target", "--op", "new", "--tid", "1", "-T", iqn);
        await this.admin("--mode", "logicalunit", "--op", "new", "--tid", "1", "--lun", String(lun), "-b", backing);
        for (const extra of this.spec.extraLuns ?? []) {
            const file = path.join(this.dir, `lun${extra.lun}.img`);
            fs.closeSync(fs.openSync(file, "w"));
            fs.truncateSync(file, this.spec.sizeMiB * 1024 * 1024);
            if (extra.ext4) {
                await execFileP("mkfs.ext4", ["-q", "-F", file]);
            }
            await this.admin("--mode", "logicalunit", "--op", "new", "--tid", "1", "--lun", String(extra.lun), "-b", file);
        }
        await this.setChap(chap.username, chap.password);
        await this.admin("--mode", "target", "--op", "bind", "--tid", "1", "-I", "ALL");
        for (const port of this.ports.slice(1)) {
            await this.admin("--mode", "portal", "--op", "new", "--param", `portal=127.0.0.1:${port}`);
        }
    }

    /** Replaces the target's CHAP account (the password lives only on the host's tgtadm argv). */
    async setChap(username: string, password: string): Promise<void> {
        await this.admin("--mode", "account", "--op", "unbind", "--tid", "1", "--user", username).catch(() => undefined);
        await this.admin("--mode", "account", "--op", "delete", "--user", username).catch(() => undefined);
        await this.admin("--mode", "account", "--op", "new", "--user", username, "--password", password);
        await this.admin("--mode", "account", "--op", "bind", "--tid", "1", "--user", username);
    }

    private async admin(...args: string[]): Promise<void> {
        try {
            await execFileP("tgtadm", ["-C", String(this.controlPort), "--lld", "iscsi", ...args]);
        } catch (e) {
            throw new Error(`tgtadm ${args.slice(0, 4).join(" ")} failed: ${(e as Error).message}\ntgtd log:\n${this.log}`);
        }
    }

    private async waitForControl(): Promise<void> {
        for (let i = 0; i < 50; i++) {
            if (this.daemon?.exitCode !== null) {
                throw new Error(`tgtd exited (${this.daemon?.exitCode}):\n${this.log}`);
            }
            const ok = await execFileP("tgtadm", ["-C", String(this.controlPort), "--lld", "iscsi", "--mode", "sys", "--op", "show"]).then(
                () => true,
                () => false,
            );
            if (ok) {
                return;
            }
            await new Promise((r) => setTimeout(r, 200));
        }
        throw new Error(`tgtd did not answer on control port ${this.controlPort}:\n${this.log}`);
    }

    stop(): void {
        this.daemon?.kill("SIGKILL");
        if (this.dir) {
            fs.rmSync(this.dir, { recursive: true, force: true });
        }
    }
}
