/**
 * Real-device test harness for node scripts: a private sshd on 127.0.0.1, loop devices from
 * sparse files, and an LVM configuration that sees only those loop devices.
 *
 * Needs root (loop devices, LVM, root SSH login), openssh-server/-client, lvm2, util-linux,
 * fdisk (sfdisk), e2fsprogs. Changes nothing of the system's own sshd or LVM configuration: sshd runs with its
 * own sshd_config, keys and port; LVM commands of the tests (local and over SSH) run with
 * LVM_SYSTEM_DIR pointing at a throwaway lvm.conf whose filter accepts only the test's loop
 * devices, so they can neither see nor touch any other disk, and keep their metadata backups
 * in the temp dir. sshd hands that variable to the session (SetEnv), so the scripts under test
 * run unchanged; it also hands them ZCLOUD_ALLOW_LOOP=1, without which they refuse loop devices.
 * close() — also run on process exit and SIGINT/SIGTERM — stops sshd, unmounts,
 * removes test VGs, wipes and detaches the loop devices and deletes the temp dir.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as assert from "node:assert/strict";
import { freePort } from "../helpers/net";
import { attachLoop, lvmQuiet, tryRun, newKey, partitionsOf, publicKeyOf, removeVgs, sh, sshdConfig, sshdPath, wipeLoop, writeLvmView } from "../helpers/sshNode";

export interface RunResult {
    code: number | null;
    stdout: string;
    stderr: string;
}

export interface NodeHarness {
    /** Port of the private sshd on 127.0.0.1. */
    readonly port: number;
    /** Loop devices (/dev/loopN), clean after every reset(). */
    readonly loops: string[];
    /** Environment for local LVM commands: the same LVM view the scripts get over SSH. */
    readonly env: NodeJS.ProcessEnv;
    /** Runs one command string through a real ssh client as root@127.0.0.1, as a remote command would. */
    run(command: string, stdin?: string): Promise<RunResult>;
    /** Runs a local command with the test LVM environment; throws on non-zero exit. */
    local(cmd: string, args: string[]): string;
    /** Makes an ext4 filesystem on dev and mounts it under the temp dir; returns the mount point. */
    mountExt4(dev: string): string;
    /** Writes a GPT with two partitions on dev and makes the kernel see them; returns their paths. */
    partition(dev: string): string[];
    /** Creates /dev/disk/by-id/<name> -> dev (removed on reset/close). */
    byIdLink(name: string, dev: string): string;
    /** Back to a clean state: unmount, swapoff, remove test VGs and links, wipe every loop device. */
    reset(): void;
    /** Tears everything down; safe to call twice. */
    close(): void;
}

/** Starts sshd -D -e and resolves once it listens; rejects if it exits first. */
function startSshd(sshd: string, config: string): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
        const child = spawn(sshd, ["-D", "-e", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
        let log = "";
        const timer = setTimeout(() => {
            child.kill("SIGKILL");
            reject(new Error(`sshd did not start within 10 s:\n${log}`));
        }, 10_000);
        child.stderr!.setEncoding("utf8");
        child.stderr!.on("data", (chunk: string) => {
            log += chunk;
            if (/Server listening on 127\.0\.0\.1/.test(log)) {
                clearTimeout(timer);
                resolve(child);
            }
        });
        child.once("exit", (code) => {
            clearTimeout(timer);
            reject(new Error(`sshd exited with ${code}:\n${log}`));
        });
    });
}

export async function startNodeHarness(opts: { loops: number; sizeMiB?: number }): Promise<NodeHarness> {
    if (process.getuid?.() !== 0) {
        throw new Error("node test tier: needs root (loop devices, LVM, root SSH login)");
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-node-"));
    const loops: string[] = [];
    const mounts: string[] = [];
    const links: string[] = [];
    const createdDirs: string[] = [];
    let sshd: ChildProcess | undefined;
    let closed = false;
    const lvmDir = path.join(dir, "lvm");
    const env: NodeJS.ProcessEnv = { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: lvmDir };

    const removeLinks = () => {
        for (const l of links.splice(0).reverse()) {
            fs.rmSync(l, { force: true });
        }
    };
    const unmountAll = () => {
        for (const m of mounts.splice(0).reverse()) {
            tryRun("umount", [m]);
        }
    };
    const wipeLoops = () => {
        for (const l of loops) {
            wipeLoop(l, env);
        }
    };
    const close = () => {
        if (closed) {
            return;
        }
        closed = true;
        if (sshd && sshd.exitCode === null) {
            sshd.kill("SIGTERM");
        }
        removeLinks();
        unmountAll();
        removeVgs(env);
        wipeLoops();
        for (const l of loops.splice(0)) {
            tryRun("losetup", ["-d", l]);
        }
        for (const d of createdDirs.splice(0).reverse()) {
            try {
                fs.rmdirSync(d);
            } catch {
                // not empty: someone else's links live there too
            }
        }
        fs.rmSync(dir, { recursive: true, force: true });
        process.off("exit", close);
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
    };
    const onSignal = (sig: NodeJS.Signals) => {
        close();
        process.kill(process.pid, sig);
    };
    process.on("exit", close);
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);

    try {
        const sizeMiB = opts.sizeMiB ?? 64;
        for (let i = 0; i < opts.loops; i++) {
            loops.push(attachLoop(path.join(dir, `disk${i}.img`), sizeMiB));
        }
        writeLvmView(lvmDir, loops);

        const hostKey = path.join(dir, "host_ed25519");
        const clientKey = path.join(dir, "client_ed25519");
        newKey(hostKey, "zcloud-node-test-host");
        newKey(clientKey, "zcloud-node-test-client");
        fs.copyFileSync(`${clientKey}.pub`, path.join(dir, "authorized_keys"));
        fs.chmodSync(path.join(dir, "authorized_keys"), 0o600);

        let port = 0;
        for (let attempt = 0; !sshd; attempt++) {
            port = await freePort();
            const config = path.join(dir, "sshd_config");
            fs.writeFileSync(
                config,
                sshdConfig({
                    port,
                    hostKey,
                    pidFile: path.join(dir, "sshd.pid"),
                    authorizedKeys: path.join(dir, "authorized_keys"),
                    // ZCLOUD_ALLOW_LOOP: the scripts take loop devices only with it (docs/node-guards.md).
                    // ZCLOUD_SCRIPT_STORE: bundles are installed in the temp dir, not the host's /var/lib.
                    sessionEnv: { LVM_SYSTEM_DIR: lvmDir, ...lvmQuiet, ZCLOUD_ALLOW_LOOP: "1", ZCLOUD_SCRIPT_STORE: path.join(dir, "scripts") },
                }),
            );
            try {
                sshd = await startSshd(sshdPath(), config);
            } catch (err) {
                if (attempt >= 4) {
                    throw err;
                }
            }
        }
        const hostPub = publicKeyOf(`${hostKey}.pub`);
        const knownHosts = path.join(dir, "known_hosts");
        fs.writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostPub}\n`);
        const sshArgs = [
            "-F", "/dev/null",
            "-p", String(port),
            "-i", clientKey,
            "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            `-o`, `UserKnownHostsFile=${knownHosts}`,
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=10",
        ];

        const harness: NodeHarness = {
            port,
            loops: [...loops],
            env,
            run(command: string, stdin?: string): Promise<RunResult> {
                return new Promise((resolve, reject) => {
                    // `--` then one word: ssh sends exactly this string for the remote shell to run.
                    const child = spawn("ssh", [...sshArgs, "--", "root@127.0.0.1", command], {
                        stdio: ["pipe", "pipe", "pipe"],
                        env: { ...process.env, SSH_AUTH_SOCK: "" },
                    });
                    let stdout = "";
                    let stderr = "";
                    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
                    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
                    child.once("error", reject);
                    child.once("close", (code) => resolve({ code, stdout, stderr }));
                    child.stdin.end(stdin ?? "");
                });
            },
            local(cmd: string, args: string[]): string {
                return sh(cmd, args, env);
            },
            mountExt4(dev: string): string {
                sh("mkfs.ext4", ["-q", "-F", dev]);
                const at = path.join(dir, `mnt${mounts.length}`);
                fs.mkdirSync(at, { recursive: true });
                sh("mount", [dev, at]);
                mounts.push(at);
                return at;
            },
            partition(dev: string): string[] {
                execFileSync("sfdisk", ["-q", dev], { input: "label: gpt\n,24M\n,\n", stdio: ["pipe", "ignore", "pipe"] });
                sh("partx", ["-a", dev]);
                const parts = partitionsOf(dev);
                if (parts.length !== 2) {
                    throw new Error(`partition ${dev}: kernel shows ${parts.join(" ") || "no partitions"}`);
                }
                return parts;
            },
            byIdLink(name: string, dev: string): string {
                for (const d of ["/dev/disk", "/dev/disk/by-id"]) {
                    if (!fs.existsSync(d)) {
                        fs.mkdirSync(d);
                        createdDirs.push(d);
                    }
                }
                const link = path.join("/dev/disk/by-id", name);
                if (fs.existsSync(link)) {
                    throw new Error(`${link} already exists`);
                }
                fs.symlinkSync(path.relative("/dev/disk/by-id", dev), link);
                links.push(link);
                return link;
            },
            reset(): void {
                removeLinks();
                unmountAll();
                removeVgs(env);
                wipeLoops();
                for (const l of loops) {
                    const sigs = sh("wipefs", ["--noheadings", "--output", "TYPE", l]).trim();
                    if (sigs !== "") {
                        throw new Error(`reset: ${l} still carries ${sigs}`);
                    }
                }
            },
            close,
        };
        return harness;
    } catch (err) {
        close();
        throw err;
    }
}

/** The `zcloud: ...` lines of an output, in order (LVM's own chatter and warnings left out). */
export function zcloudLines(out: string): string[] {
    return out.split("\n").filter((l) => l.startsWith("zcloud:") || l.startsWith("zcloud-device:"));
}

/** A refusal: exit 1, exactly this one line on stderr, nothing decided on stdout. */
export function assertRefused(r: RunResult, line: string): void {
    assert.equal(r.code, 1, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    assert.equal(r.stderr, `${line}\n`);
    assert.equal(r.stdout, "");
}

/**
 * A disk and its first partition under names the plan cannot relate: the partition table written
 * on `dev` and a by-id link `name` to it. Returns both paths and the refusal the node scripts give
 * (the partition is refused, naming the disk as listed).
 */
export function diskAndPartition(h: NodeHarness, dev: string, name: string): { partition: string; disk: string; refusal: string } {
    const [partition] = h.partition(dev);
    const disk = h.byIdLink(name, dev);
    return {
        partition,
        disk,
        refusal: `zcloud: ${partition}: refused: is a partition of ${disk}, which is listed too; preparing the disk would wipe its partition table and this partition with it, so list either the disk or its partitions`,
    };
}

/**
 * A stack file whose LVM storages' nodes are all this host over the test sshd on `port` (each
 * device list its own "node"; the nodes of a storage share its VG).
 */
export function localLvmStack(port: number, storages: Array<{ name: string; hosts: Record<string, string[]>; wipe: boolean | Record<string, string[]> }>): string {
    const nodes = storages.flatMap((s) => Object.keys(s.hosts));
    return [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        `    port: ${port}`,
        "    privateKey: { secure: v1:nodetest }",
        "  zcloud-storage:nodes:",
        // Each "node" gets its own loopback address, as distinct nodes must (one SSH endpoint per
        // node); the tests run every planned command through the harness's one sshd anyway.
        ...nodes.map((n, i) => `    ${n}: { address: 127.0.0.${i + 1} }`),
        "  zcloud-storage:lvm:",
        ...storages.flatMap((s) => [
            `    - name: ${s.name}`,
            "      hosts:",
            ...Object.entries(s.hosts).map(([n, devs]) => `        ${n}: [${devs.join(", ")}]`),
            `      wipe: ${JSON.stringify(s.wipe)}`,
        ]),
        "",
    ].join("\n");
}
