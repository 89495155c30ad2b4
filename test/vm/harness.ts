/**
 * Real-kernel test guests: Debian bookworm under QEMU (TCG), reached over real SSH.
 *
 *   const vms = await bootGuests([{ name: "node1", disks: [{ serial: "data1", sizeMiB: 512 }] }]);
 *   try {
 *       const r = await vms.get("node1").run("lsblk -o NAME,SERIAL");
 *   } finally {
 *       await vms.close();
 *   }
 *
 * The image comes from test/vm/ensure-image.sh (built once into $HOME/.cache/zcloud-storage/vm, or the
 * directory in ZCLOUD_VM_IMAGE). Each guest boots from a per-run qcow2 overlay of the cached root
 * image (the image itself is never written), with 1 vCPU and 1 GiB, user-mode networking (guest
 * 10.0.2.15, host reachable as 10.0.2.2 = the host's 127.0.0.1, SSH forwarded from a free port on
 * 127.0.0.1), and one virtio disk per requested serial, seen in the guest as
 * /dev/disk/by-id/virtio-<serial>. A fresh client key and SSH host key are generated per run and
 * handed to the guest through QEMU fw_cfg, so the host key is pinned (StrictHostKeyChecking=yes).
 *
 * close() kills QEMU and removes the run directory; it also runs on process exit, SIGINT and
 * SIGTERM, and QEMU is started with a parent-death signal, so a killed test leaves no guest behind.
 * See test/vm/README.md.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePort } from "../helpers/net";

/** The host as the guest sees it (QEMU user-mode networking maps it to the host's 127.0.0.1). */
export const HOST_FROM_GUEST = "10.0.2.2";

export interface DiskSpec {
    /** virtio-blk serial, at most 20 characters of [A-Za-z0-9_-]; in the guest /dev/disk/by-id/virtio-<serial>. */
    serial: string;
    sizeMiB: number;
}

export interface GuestSpec {
    /** Guest hostname (RFC 1123 label), also the key for GuestSet.get(). */
    name: string;
    disks?: DiskSpec[];
    /** Default 1024. */
    memoryMiB?: number;
    /**
     * Virtual CPUs, default 1. Under TCG each is a host thread of its own (multi-threaded TCG) unless
     * `tcgThreads` is "single", so a busy guest with 2 uses both of this machine's cores while an
     * idle one costs nothing.
     */
    cpus?: number;
    /**
     * How QEMU emulates the vCPUs: "multi" (default), a host thread per vCPU; "single", all of this
     * guest's vCPUs in turn on one host thread (`-accel tcg,thread=single`). Two busy guests of 2
     * vCPUs each put four vCPU threads on this machine's two cores, and multi-threaded TCG then
     * waits for descheduled vCPUs (a cross-vCPU TLB flush or an emulated atomic stops them all):
     * a Go workload run in both at once took 9-12 s with "multi", 6-7 s with "single" and 5-7 s with
     * one vCPU each (test/nodes/README.md). The guest still sees its vCPUs.
     */
    tcgThreads?: "multi" | "single";
    /**
     * The guest may reboot (Guest.reboot()): QEMU runs without -no-reboot, so a reboot in the guest
     * restarts it in the same QEMU, its disks kept. Default false: a reboot or a panic ends QEMU.
     */
    rebootable?: boolean;
    /**
     * Host tap devices (made by the test, e.g. `ip tuntap add <name> mode tap`) to attach as more
     * virtio NICs, in order: the guest's eth1, eth2, ... (eth0 stays the user-mode network). The
     * guest configures no address on them; the test does.
     */
    taps?: string[];
    /**
     * Host directories shared read-only over 9p (virtio): `mount -t 9p -o trans=virtio,ro <tag> <dir>`
     * in the guest. Tags are 1-31 characters of [A-Za-z0-9_-].
     */
    shares?: { tag: string; path: string }[];
}

export interface BootOptions {
    /** Boot until SSH answers, per guest. Default 180 s (ZCLOUD_VM_BOOT_TIMEOUT_MS). */
    bootTimeoutMs?: number;
    /** Image directory (root.img, vmlinuz, initrd.img, cmdline). Default: ZCLOUD_VM_IMAGE, else ensure-image.sh. */
    imageDir?: string;
    /** Progress lines (timings). Default: stderr with a "[vm]" prefix. */
    log?: (line: string) => void;
}

export interface RunOptions {
    /** Bytes for the remote command's standard input (closed right after). */
    stdin?: string | Buffer;
    /** Kill the ssh client after this long and reject. Default 300 s. */
    timeoutMs?: number;
    /**
     * Log in as this user instead of root (the user must exist in the guest and accept the run's
     * client key). Such commands open their own SSH connection (the shared one is root's).
     */
    user?: string;
}

export interface RunResult {
    /** Exit code of the remote command (255: ssh itself failed); null if ssh died by a signal. */
    code: number | null;
    stdout: string;
    stderr: string;
}

/** What another SSH client (e.g. a remote-command connection) needs to reach a guest. */
export interface SshConnection {
    host: string;
    port: number;
    user: string;
    /** OpenSSH private key (ed25519), generated for this run. */
    privateKey: string;
    privateKeyPath: string;
    /** The guest's host public key, "ssh-ed25519 AAAA...". */
    hostKey: string;
    /** known_hosts file holding hostKey for [host]:port. */
    knownHostsPath: string;
}

export class GuestCommandError extends Error {
    constructor(
        readonly guest: string,
        readonly command: string,
        readonly result: RunResult,
    ) {
        super(
            `${guest}: command exited with ${result.code}: ${command}\n` +
                `--- stdout\n${tail(result.stdout, 40)}\n--- stderr\n${tail(result.stderr, 40)}`,
        );
        this.name = "GuestCommandError";
    }
}

export interface Guest {
    readonly name: string;
    /** serial -> /dev/disk/by-id/virtio-<serial> (the path inside the guest). */
    readonly disks: Record<string, string>;
    readonly connection: SshConnection;
    /** Milliseconds from starting QEMU to the first successful SSH command. */
    readonly bootMs: number;
    /**
     * Runs `command` through a real ssh client as root (or `opts.user`): the string is handed to the guest's
     * login shell exactly as a remote command would be. Resolves with any exit code.
     * A string as second argument is taken as stdin (same as the node tier's harness).
     */
    run(command: string, opts?: RunOptions | string): Promise<RunResult>;
    /** Like run(), but rejects with GuestCommandError on a non-zero exit; resolves with stdout. */
    check(command: string, opts?: RunOptions | string): Promise<string>;
    /** The guest's serial console so far (ANSI escapes removed). */
    console(): string;
    /** Serves this machine's unix socket `localPath` at `guestPath` in the guest (ssh -R) until the returned process is killed. */
    forwardSocket(guestPath: string, localPath: string): ChildProcess;
    /**
     * Reboots the guest (`systemctl reboot`) and resolves once it has printed its ready line again
     * and answers over SSH; resolves with the milliseconds that took. Only for a guest booted
     * `rebootable`.
     */
    reboot(timeoutMs?: number): Promise<number>;

    /** Serves the guest's unix socket `guestPath` at this machine's `localPath` (ssh -L) until the returned process is killed. */
    forwardGuestSocket(localPath: string, guestPath: string): ChildProcess;

    /** Serves the guest's TCP port `guestPort` on its 127.0.0.1 at this machine's 127.0.0.1:`localPort` (ssh -L) until the returned process is killed. */
    forwardGuestPort(localPort: number, guestPort: number): ChildProcess;
}

export interface GuestSet {
    readonly guests: readonly Guest[];
    /** The guest of that name; throws if there is none. */
    get(name: string): Guest;
    /** Kills every guest and removes the run directory; safe to call twice. */
    close(): Promise<void>;
}

const DEFAULT_BOOT_TIMEOUT_MS = Number(process.env.ZCLOUD_VM_BOOT_TIMEOUT_MS ?? 180_000);
const DEFAULT_RUN_TIMEOUT_MS = 300_000;
const SERIAL_RE = /^[A-Za-z0-9_-]{1,20}$/;
const TAP_RE = /^[A-Za-z0-9_-]{1,15}$/;
const TAG_RE = /^[A-Za-z0-9_-]{1,31}$/;
const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const RUN_DIR_PREFIX = "zcloud-vm-";
/** What the image's zcloud-ready unit prints on the serial console once sshd is up, then the hostname. */
const READY_LINE = "zcloud-vm: ready";

function tail(text: string, lines: number): string {
    return text.split("\n").slice(-lines).join("\n");
}

function stripAnsi(text: string): string {
    // eslint-disable-next-line no-control-regex
    return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
}

function defaultLog(line: string): void {
    process.stderr.write(`[vm] ${line}\n`);
}

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs a local program; resolves with its output, rejects on a non-zero exit. */
function execLocal(cmd: string, args: string[], opts: { stderrTo?: (chunk: string) => void } = {}): Promise<string> {
    return new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
        child.stderr.setEncoding("utf8").on("data", (c: string) => {
            err += c;
            opts.stderrTo?.(c);
        });
        child.once("error", (e) => reject(new Error(`${cmd}: ${e.message}`)));
        child.once("close", (code) =>
            code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(" ")} exited with ${code}\n${tail(err, 30)}`)),
        );
    });
}

function onPath(name: string): boolean {
    return (process.env.PATH ?? "/usr/bin:/bin").split(":").some((d) => d && fs.existsSync(path.join(d, name)));
}

/** The image directory: explicit, ZCLOUD_VM_IMAGE, or whatever ensure-image.sh builds or reuses. */
export async function ensureImage(log: (line: string) => void = defaultLog): Promise<string> {
    const fromEnv = process.env.ZCLOUD_VM_IMAGE;
    const started = Date.now();
    let dir: string;
    if (fromEnv) {
        dir = fromEnv;
    } else {
        const script = path.join(__dirname, "ensure-image.sh");
        const out = await execLocal("bash", [script], {
            stderrTo: (c) => c.split("\n").filter(Boolean).forEach((l) => log(l)),
        });
        dir = out.trim().split("\n").pop() ?? "";
    }
    for (const f of ["root.img", "vmlinuz", "initrd.img", "cmdline"]) {
        if (!fs.existsSync(path.join(dir, f))) {
            throw new Error(`vm image: ${path.join(dir, f)} missing (run test/vm/ensure-image.sh as root)`);
        }
    }
    log(`image ${dir} ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return dir;
}

/** Removes run directories left by test processes that no longer exist (killed with SIGKILL). */
function removeStaleRunDirs(): void {
    for (const entry of fs.readdirSync(os.tmpdir())) {
        if (!entry.startsWith(RUN_DIR_PREFIX)) {
            continue;
        }
        const dir = path.join(os.tmpdir(), entry);
        try {
            const pid = Number(fs.readFileSync(path.join(dir, "owner.pid"), "utf8"));
            process.kill(pid, 0);
        } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            if (code === "ESRCH" || code === "ENOENT") {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        }
    }
}

interface Running {
    spec: GuestSpec;
    dir: string;
    proc: ChildProcess;
    port: number;
    serialPath: string;
    qemuStderr: string;
    exited: boolean;
    exitCode: number | null;
    /** ssh -M process holding one connection that every run() multiplexes over. */
    master?: ChildProcess;
    controlPath: string;
}

class GuestImpl implements Guest {
    readonly disks: Record<string, string>;
    bootMs = 0;

    constructor(
        readonly name: string,
        readonly connection: SshConnection,
        readonly running: Running,
    ) {
        this.disks = Object.fromEntries(
            (running.spec.disks ?? []).map((d) => [d.serial, `/dev/disk/by-id/virtio-${d.serial}`]),
        );
    }

    sshArgs(connectTimeoutS: number, user?: string): string[] {
        const c = this.connection;
        const login = user ?? c.user;
        return [
            "-F", "/dev/null",
            "-o", "BatchMode=yes",
            "-o", "IdentitiesOnly=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", `UserKnownHostsFile=${c.knownHostsPath}`,
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", `ConnectTimeout=${connectTimeoutS}`,
            "-o", "ServerAliveInterval=15",
            "-o", "ServerAliveCountMax=8",
            "-o", "LogLevel=ERROR",
            // Use the guest's master connection when it is up; connect directly otherwise.
            // The master is logged in as root: another user never multiplexes over it.
            "-o", "ControlMaster=no",
            "-o", `ControlPath=${login === c.user ? this.running.controlPath : "none"}`,
            "-i", c.privateKeyPath,
            "-p", String(c.port),
            `${login}@${c.host}`,
        ];
    }

    forwardSocket(guestPath: string, localPath: string): ChildProcess {
        return this.forward(["-R", `${guestPath}:${localPath}`]);
    }

    forwardGuestSocket(localPath: string, guestPath: string): ChildProcess {
        return this.forward(["-L", `${localPath}:${guestPath}`]);
    }

    forwardGuestPort(localPort: number, guestPort: number): ChildProcess {
        return this.forward(["-L", `127.0.0.1:${localPort}:127.0.0.1:${guestPort}`]);
    }

    private forward(spec: string[]): ChildProcess {
        // A connection of its own, not the master's: the forward lives exactly as long as this process.
        const argv = this.sshArgs(15).map((a) => (a.startsWith("ControlPath=") ? "ControlPath=none" : a));
        const forward = ["-N", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes", ...spec];
        return spawn("ssh", [...forward, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
    }

    run(command: string, opts: RunOptions | string = {}): Promise<RunResult> {
        const o: RunOptions = typeof opts === "string" ? { stdin: opts } : opts;
        return this.exec(command, o, 15);
    }

    exec(command: string, o: RunOptions, connectTimeoutS: number): Promise<RunResult> {
        if (this.running.exited) {
            return Promise.reject(new Error(`${this.name}: guest is not running (qemu exited with ${this.running.exitCode})`));
        }
        const timeoutMs = o.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
        return new Promise((resolve, reject) => {
            // One argument after the destination: ssh sends it unchanged as the remote command string.
            const child = spawn("ssh", [...this.sshArgs(connectTimeoutS, o.user), command], { stdio: ["pipe", "pipe", "pipe"] });
            const out: Buffer[] = [];
            const err: Buffer[] = [];
            child.stdout.on("data", (c: Buffer) => out.push(c));
            child.stderr.on("data", (c: Buffer) => err.push(c));
            child.stdin.on("error", () => undefined); // remote side may exit before reading stdin
            const timer = setTimeout(() => {
                child.kill("SIGKILL");
                reject(
                    new Error(
                        `${this.name}: command timed out after ${timeoutMs} ms: ${command}\n` +
                            `--- stdout\n${tail(Buffer.concat(out).toString("utf8"), 20)}\n` +
                            `--- stderr\n${tail(Buffer.concat(err).toString("utf8"), 20)}`,
                    ),
                );
            }, timeoutMs);
            child.once("error", (e) => {
                clearTimeout(timer);
                reject(new Error(`${this.name}: ssh: ${e.message}`));
            });
            child.once("close", (code) => {
                clearTimeout(timer);
                resolve({
                    code,
                    stdout: Buffer.concat(out).toString("utf8"),
                    stderr: Buffer.concat(err).toString("utf8"),
                });
            });
            if (o.stdin !== undefined) {
                child.stdin.end(o.stdin);
            } else {
                child.stdin.end();
            }
        });
    }

    async check(command: string, opts: RunOptions | string = {}): Promise<string> {
        const r = await this.run(command, opts);
        if (r.code !== 0) {
            throw new GuestCommandError(this.name, command, r);
        }
        return r.stdout;
    }

    console(): string {
        try {
            return stripAnsi(fs.readFileSync(this.running.serialPath, "utf8"));
        } catch {
            return "";
        }
    }

    async reboot(timeoutMs = DEFAULT_BOOT_TIMEOUT_MS): Promise<number> {
        if (!this.running.spec.rebootable) {
            throw new Error(`${this.name}: booted without rebootable: a reboot would end QEMU`);
        }
        const started = Date.now();
        const boots = () => this.console().split(`${READY_LINE} ${this.name}`).length - 1;
        const before = boots();
        // The connection drops under the command: its result says nothing.
        await this.run("systemctl reboot", { timeoutMs: 30_000 }).catch(() => undefined);
        const master = this.running.master;
        if (master && master.exitCode === null && master.signalCode === null) {
            master.kill("SIGTERM");
            await new Promise((resolve) => master.once("exit", resolve));
        }
        fs.rmSync(this.running.controlPath, { force: true });
        while (boots() === before) {
            if (this.running.exited) {
                throw new Error(`${this.name}: qemu exited with ${this.running.exitCode} during the reboot\n--- serial console (tail)\n${tail(this.console(), 40)}`);
            }
            if (Date.now() - started > timeoutMs) {
                throw new Error(`${this.name}: no ready line within ${timeoutMs / 1000} s of the reboot\n--- serial console (tail)\n${tail(this.console(), 40)}`);
            }
            await sleep(500);
        }
        await waitForSsh(this, Math.max(timeoutMs - (Date.now() - started), 30_000));
        await startMaster(this);
        return Date.now() - started;
    }
}

/**
 * Boots the guests in parallel and resolves once every one answers over SSH. On any failure the
 * guests already started are killed, the run directory removed, and the error names the guest
 * with the tail of its serial console.
 */
export async function bootGuests(specs: GuestSpec[], opts: BootOptions = {}): Promise<GuestSet> {
    const log = opts.log ?? defaultLog;
    validateSpecs(specs);
    for (const tool of ["qemu-system-x86_64", "qemu-img", "ssh", "ssh-keygen"]) {
        if (!onPath(tool)) {
            throw new Error(`vm tier: ${tool} not found (apt-get install qemu-system-x86 qemu-utils openssh-client)`);
        }
    }
    const imageDir = opts.imageDir ?? (await ensureImage(log));
    const bootTimeoutMs = opts.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS;

    removeStaleRunDirs();
    const runDir = fs.mkdtempSync(path.join(os.tmpdir(), RUN_DIR_PREFIX));
    fs.writeFileSync(path.join(runDir, "owner.pid"), String(process.pid));
    const running: Running[] = [];
    let closed = false;

    const killAll = (signal: NodeJS.Signals) => {
        for (const r of running) {
            if (r.master && r.master.exitCode === null && r.master.signalCode === null) {
                r.master.kill(signal);
            }
            if (!r.exited) {
                r.proc.kill(signal);
            }
        }
    };
    const onExit = () => {
        killAll("SIGKILL");
        fs.rmSync(runDir, { recursive: true, force: true });
    };
    const onSignal = (sig: NodeJS.Signals) => {
        onExit();
        process.kill(process.pid, sig);
    };
    process.once("exit", onExit);
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);

    const close = async () => {
        if (closed) {
            return;
        }
        closed = true;
        killAll("SIGTERM");
        const deadline = Date.now() + 5_000;
        while (running.some((r) => !r.exited) && Date.now() < deadline) {
            await sleep(50);
        }
        killAll("SIGKILL");
        while (running.some((r) => !r.exited)) {
            await sleep(20);
        }
        fs.rmSync(runDir, { recursive: true, force: true });
        process.off("exit", onExit);
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
    };

    try {
        // One client key and one host key per run.
        const clientKey = path.join(runDir, "id_ed25519");
        const hostKeyPath = path.join(runDir, "ssh_host_ed25519_key");
        await Promise.all([
            execLocal("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "zcloud-vm-test", "-f", clientKey]),
            execLocal("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "zcloud-vm-host", "-f", hostKeyPath]),
        ]);
        const hostKey = fs.readFileSync(`${hostKeyPath}.pub`, "utf8").trim().split(/\s+/).slice(0, 2).join(" ");
        const started = Date.now();
        const guests = await Promise.all(
            specs.map(async (spec) => {
                const g = await startGuest(spec, { runDir, imageDir, clientKey, hostKeyPath, hostKey, running });
                await waitForSsh(g, bootTimeoutMs);
                g.bootMs = Date.now() - started;
                await startMaster(g);
                log(`${spec.name}: ssh ready after ${(g.bootMs / 1000).toFixed(1)} s (port ${g.connection.port})`);
                return g;
            }),
        );
        log(`${guests.length} guest(s) up after ${((Date.now() - started) / 1000).toFixed(1)} s`);
        const byName = new Map(guests.map((g) => [g.name, g]));
        return {
            guests,
            get(name: string): Guest {
                const g = byName.get(name);
                if (!g) {
                    throw new Error(`no guest named ${name} (have ${[...byName.keys()].join(", ")})`);
                }
                return g;
            },
            close,
        };
    } catch (e) {
        await close();
        throw e;
    }
}

function validateSpecs(specs: GuestSpec[]): void {
    if (specs.length === 0) {
        throw new Error("bootGuests: no guests given");
    }
    const names = new Set<string>();
    for (const s of specs) {
        if (!NAME_RE.test(s.name)) {
            throw new Error(`bootGuests: guest name ${JSON.stringify(s.name)} is not an RFC 1123 label`);
        }
        if (names.has(s.name)) {
            throw new Error(`bootGuests: guest name ${s.name} given twice`);
        }
        names.add(s.name);
        const serials = new Set<string>();
        for (const d of s.disks ?? []) {
            if (!SERIAL_RE.test(d.serial)) {
                throw new Error(`bootGuests: ${s.name}: disk serial ${JSON.stringify(d.serial)}: 1-20 of [A-Za-z0-9_-]`);
            }
            if (serials.has(d.serial)) {
                throw new Error(`bootGuests: ${s.name}: disk serial ${d.serial} given twice`);
            }
            serials.add(d.serial);
            if (!Number.isInteger(d.sizeMiB) || d.sizeMiB < 1) {
                throw new Error(`bootGuests: ${s.name}: disk ${d.serial}: sizeMiB must be a positive integer`);
            }
        }
        for (const t of s.taps ?? []) {
            if (!TAP_RE.test(t)) {
                throw new Error(`bootGuests: ${s.name}: tap ${JSON.stringify(t)}: 1-15 of [A-Za-z0-9_-]`);
            }
        }
        for (const sh of s.shares ?? []) {
            if (!TAG_RE.test(sh.tag)) {
                throw new Error(`bootGuests: ${s.name}: share tag ${JSON.stringify(sh.tag)}: 1-31 of [A-Za-z0-9_-]`);
            }
            if (!path.isAbsolute(sh.path) || !fs.existsSync(sh.path)) {
                throw new Error(`bootGuests: ${s.name}: share ${sh.tag}: ${sh.path} is no existing absolute path`);
            }
        }
    }
}

interface StartContext {
    runDir: string;
    imageDir: string;
    clientKey: string;
    hostKeyPath: string;
    hostKey: string;
    running: Running[];
}

async function startGuest(spec: GuestSpec, ctx: StartContext): Promise<GuestImpl> {
    const dir = path.join(ctx.runDir, spec.name);
    fs.mkdirSync(dir);
    const overlay = path.join(dir, "root.qcow2");
    await execLocal("qemu-img", [
        "create", "-q", "-f", "qcow2", "-F", "raw", "-b", path.resolve(ctx.imageDir, "root.img"), overlay,
    ]);
    const diskArgs: string[] = [];
    (spec.disks ?? []).forEach((d, i) => {
        const file = path.join(dir, `disk-${d.serial}.img`);
        fs.writeFileSync(file, "");
        fs.truncateSync(file, d.sizeMiB * 1024 * 1024);
        diskArgs.push(
            "-drive", `if=none,id=disk${i},file=${file},format=raw,cache=unsafe,discard=unmap`,
            "-device", `virtio-blk-pci,drive=disk${i},serial=${d.serial}`,
        );
    });
    const nicArgs = (spec.taps ?? []).flatMap((tap, i) => [
        "-netdev", `tap,id=tap${i},ifname=${tap},script=no,downscript=no`,
        "-device", `virtio-net-pci,netdev=tap${i}`,
    ]);
    const shareArgs = (spec.shares ?? []).flatMap((sh, i) => [
        "-fsdev", `local,id=share${i},path=${sh.path},security_model=passthrough,readonly=on`,
        "-device", `virtio-9p-pci,fsdev=share${i},mount_tag=${sh.tag}`,
    ]);
    const hostnameFile = path.join(dir, "hostname");
    fs.writeFileSync(hostnameFile, spec.name);
    const cmdline = fs.readFileSync(path.join(ctx.imageDir, "cmdline"), "utf8").trim();
    const serialPath = path.join(dir, "serial.log");

    // The forwarded port is picked free, then bound by QEMU: retry if someone took it meanwhile.
    for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const args = [
            "-name", `zcloud-vm-${spec.name}`,
            "-accel", spec.tcgThreads === "single" ? "tcg,thread=single" : "tcg",
            "-machine", "pc",
            "-m", String(spec.memoryMiB ?? 1024),
            "-smp", String(spec.cpus ?? 1),
            "-nodefaults", "-no-user-config", "-display", "none",
            ...(spec.rebootable ? [] : ["-no-reboot"]),
            "-kernel", path.join(ctx.imageDir, "vmlinuz"),
            "-initrd", path.join(ctx.imageDir, "initrd.img"),
            "-append", cmdline,
            "-drive", `if=none,id=root,file=${overlay},format=qcow2,cache=unsafe`,
            "-device", "virtio-blk-pci,drive=root",
            ...diskArgs,
            "-netdev", `user,id=net0,hostfwd=tcp:127.0.0.1:${port}-:22`,
            "-device", "virtio-net-pci,netdev=net0",
            ...nicArgs,
            ...shareArgs,
            "-device", "virtio-rng-pci",
            "-fw_cfg", `name=opt/zcloud/hostname,file=${hostnameFile}`,
            "-fw_cfg", `name=opt/zcloud/authorized_keys,file=${ctx.clientKey}.pub`,
            "-fw_cfg", `name=opt/zcloud/ssh_host_ed25519_key,file=${ctx.hostKeyPath}`,
            "-fw_cfg", `name=opt/zcloud/ssh_host_ed25519_key_pub,file=${ctx.hostKeyPath}.pub`,
            "-serial", `file:${serialPath}`,
        ];
        // setpriv: QEMU gets SIGKILL if this process dies without running its exit handlers.
        const [cmd, argv] = onPath("setpriv")
            ? ["setpriv", ["--pdeathsig", "KILL", "--", "qemu-system-x86_64", ...args]]
            : ["qemu-system-x86_64", args];
        const proc = spawn(cmd, argv, { stdio: ["ignore", "ignore", "pipe"] });
        const r: Running = {
            spec,
            dir,
            proc,
            port,
            serialPath,
            qemuStderr: "",
            exited: false,
            exitCode: null,
            controlPath: path.join(ctx.runDir, `${spec.name}.ctl`),
        };
        ctx.running.push(r);
        proc.stderr!.setEncoding("utf8").on("data", (c: string) => {
            if (r.qemuStderr.length < 64 * 1024) {
                r.qemuStderr += c;
            }
        });
        proc.once("error", (e) => {
            r.qemuStderr += `spawn failed: ${e.message}\n`;
            r.exited = true;
        });
        proc.once("exit", (code) => {
            r.exited = true;
            r.exitCode = code;
        });
        // A failed port binding makes QEMU exit at once.
        await sleep(300);
        if (r.exited && /host forwarding rule|Could not set up/i.test(r.qemuStderr) && attempt < 3) {
            ctx.running.splice(ctx.running.indexOf(r), 1);
            continue;
        }
        const knownHostsPath = path.join(dir, "known_hosts");
        fs.writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${ctx.hostKey}\n`);
        return new GuestImpl(
            spec.name,
            {
                host: "127.0.0.1",
                port,
                user: "root",
                privateKey: fs.readFileSync(ctx.clientKey, "utf8"),
                privateKeyPath: ctx.clientKey,
                hostKey: ctx.hostKey,
                knownHostsPath,
            },
            r,
        );
    }
}

/**
 * Waits until a command over SSH succeeds. Probing starts once the guest prints its ready line on
 * the serial console (sshd is up then): before the guest has an address, QEMU accepts the
 * forwarded connection and ssh hangs until its timeout, which would only delay the first success.
 * If the ready line does not show (console trouble), probing starts anyway after a third of the
 * timeout.
 */
async function waitForSsh(g: GuestImpl, timeoutMs: number): Promise<void> {
    const r = g.running;
    const started = Date.now();
    const deadline = started + timeoutMs;
    const marker = `${READY_LINE} ${g.name}`;
    let last: RunResult | undefined;
    let probing = false;
    for (;;) {
        if (r.exited) {
            throw new Error(
                `${g.name}: qemu exited with ${r.exitCode} before SSH was ready\n` +
                    `--- qemu stderr\n${tail(r.qemuStderr, 20)}\n--- serial console (tail)\n${tail(g.console(), 40)}`,
            );
        }
        if (Date.now() > deadline) {
            throw new Error(
                `${g.name}: SSH not ready after ${timeoutMs / 1000} s` +
                    (probing ? "" : " (the guest never printed its ready line)") +
                    (last ? ` (last ssh: exit ${last.code}: ${last.stderr.trim()})` : "") +
                    `\n--- serial console (tail)\n${tail(g.console(), 40)}`,
            );
        }
        probing ||= Date.now() - started > timeoutMs / 3 || g.console().includes(marker);
        if (!probing) {
            await sleep(250);
            continue;
        }
        try {
            last = await g.exec("true", { timeoutMs: 30_000 }, 10);
            if (last.code === 0) {
                return;
            }
        } catch {
            // ssh hung past its own timeouts; try again until the deadline
        }
        await sleep(500);
    }
}

/**
 * Starts `ssh -M -N` as our own child: one SSH connection to the guest that every later command
 * opens a session on. Each command is still its own remote command (own shell, exit code, stdin),
 * without a key exchange per command, which costs seconds under TCG. Without it (the socket does
 * not show up) commands connect directly.
 */
async function startMaster(g: GuestImpl): Promise<void> {
    const r = g.running;
    const argv = [...g.sshArgs(10)];
    argv[argv.indexOf("ControlMaster=no")] = "ControlMaster=yes";
    const [cmd, args] = onPath("setpriv")
        ? ["setpriv", ["--pdeathsig", "TERM", "--", "ssh", "-N", ...argv]]
        : ["ssh", ["-N", ...argv]];
    r.master = spawn(cmd, args, { stdio: ["ignore", "ignore", "ignore"] });
    r.master.once("error", () => undefined);
    const deadline = Date.now() + 30_000;
    while (!fs.existsSync(r.controlPath) && Date.now() < deadline && r.master.exitCode === null) {
        await sleep(100);
    }
}
