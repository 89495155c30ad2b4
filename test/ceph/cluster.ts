/**
 * A one-host Ceph test cluster on 127.0.0.1, brought up by the node scripts under
 * components/node/ceph from Debian's ceph packages, in a temp dir and a private mount namespace.
 *
 * The namespace (test/ceph/ns-holder.sh) maps <tmp>/data to /var/lib/ceph and <tmp>/varlog to
 * /var/log/ceph, because ceph-volume hard-codes those paths; everything else is configured:
 * CEPH_CONF=<tmp>/etc/ceph.conf, keys in <tmp>/keys (bare keys, as the Secret mounts them).
 * The holder tears everything down when stop() is called or when this process dies.
 */
import { spawn, execFileSync, ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { readNodeScript, renderNodeCommand } from "../../components/node/script";

export const CEPH_BINARIES = [
    "ceph", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-volume", "ceph-fuse", "ceph-conf",
    "ceph-authtool", "ceph-bluestore-tool", "monmaptool", "udevadm", "unshare", "nsenter", "losetup",
    "wipefs", "blkid", "mkfs.ext4",
];
/** Debian packages CI must install for this tier (ceph-volume ships in ceph-osd). */
export const CEPH_APT_PACKAGES = ["ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-fuse", "ceph-common", "udev", "e2fsprogs"];

/** Keys the program would generate and hand over in Secrets (file name = Secret key). */
export const KEY_NAMES = ["admin", "mon", "bootstrap-osd", "csi"] as const;
export type KeyName = (typeof KEY_NAMES)[number];

export interface RunResult {
    code: number | null;
    stdout: string;
    stderr: string;
    ms: number;
}

/** Which preconditions of the tier are missing on this machine (empty when it can run). */
export function missingPrerequisites(): string[] {
    const missing: string[] = [];
    if (process.getuid?.() !== 0) missing.push("root");
    const dirs = (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/sbin"]);
    for (const bin of CEPH_BINARIES) {
        if (!dirs.some((d) => d && fs.existsSync(path.join(d, bin)))) missing.push(bin);
    }
    for (const dir of ["/var/lib/ceph", "/var/log/ceph"]) {
        if (!fs.existsSync(dir)) missing.push(dir);
    }
    if (!fs.existsSync("/dev/fuse")) missing.push("/dev/fuse");
    return missing;
}

function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const srv = net.createServer();
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => {
            const addr = srv.address();
            srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
        });
    });
}

export function sleep(ms: number): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
}

/** Polls fn until it returns a value other than undefined, at most timeoutMs. */
export async function waitFor<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>, everyMs = 1000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const v = await fn();
            if (v !== undefined) return v;
        } catch (e) {
            last = e;
        }
        if (Date.now() >= deadline) {
            throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
        }
        await sleep(everyMs);
    }
}

export class CephTestCluster {
    readonly fsid = randomUUID();
    readonly monId = "a";
    readonly host = "zc-node-1";
    /** Everything the node scripts printed, to check that no key ever shows up. */
    readonly transcript: string[] = [];
    private readonly daemons = new Map<string, ChildProcess>();
    private holder?: ChildProcess;
    private nsPid = 0;
    port = 0;

    private constructor(readonly tmp: string) {}

    get conf(): string {
        return path.join(this.tmp, "etc", "ceph.conf");
    }
    get dataDir(): string {
        return path.join(this.tmp, "data");
    }
    keyFile(name: KeyName): string {
        return path.join(this.tmp, "keys", name);
    }
    key(name: KeyName): string {
        return fs.readFileSync(this.keyFile(name), "utf8").trim();
    }
    /** The environment the scripts get in the container, pointed at the test's files. */
    env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
        return {
            PATH: `${process.env.PATH ?? "/usr/bin:/bin"}:/usr/sbin:/sbin`,
            CEPH_CONF: this.conf,
            ZCLOUD_CEPH_KEYS: path.join(this.tmp, "keys"),
            ZCLOUD_CEPH_DATA: "/var/lib/ceph",
            ZCLOUD_CEPH_TIMEOUT: "20",
            ZCLOUD_CEPH_POLL: "1",
            CEPH_VOLUME_ALLOW_LOOP_DEVICES: "true",
            TMPDIR: path.join(this.tmp, "scratch"),
            ...extra,
        };
    }

    static async start(): Promise<CephTestCluster> {
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ceph-"));
        const c = new CephTestCluster(tmp);
        try {
            await c.init();
        } catch (e) {
            await c.stop();
            throw e;
        }
        return c;
    }

    private async init(): Promise<void> {
        fs.chmodSync(this.tmp, 0o755);
        for (const d of ["etc", "data", "varlog", "log", "run", "mnt", "scratch", "img"]) fs.mkdirSync(path.join(this.tmp, d));
        fs.mkdirSync(path.join(this.tmp, "keys"), { mode: 0o700 });
        fs.chmodSync(path.join(this.tmp, "scratch"), 0o700);
        for (const d of ["data", "varlog", "log", "run"]) execFileSync("chown", ["ceph:ceph", path.join(this.tmp, d)]);
        for (const k of KEY_NAMES) this.writeKey(k, this.genKey());
        this.port = await freePort();
        this.writeConf(this.conf, this.fsid);
        await this.startHolder();
    }

    genKey(): string {
        return execFileSync("ceph-authtool", ["--gen-print-key"], { encoding: "utf8" }).trim();
    }
    writeKey(name: string, key: string): string {
        const file = path.join(this.tmp, "keys", name);
        fs.writeFileSync(file, key + "\n", { mode: 0o600 });
        return file;
    }

    /** ceph.conf as the ConfigMap would hold it, plus the single-host test settings. */
    writeConf(file: string, fsid: string): void {
        const t = this.tmp;
        fs.writeFileSync(
            file,
            [
                "[global]",
                `fsid = ${fsid}`,
                `mon_host = [v2:127.0.0.1:${this.port}]`,
                "public_addr = 127.0.0.1",
                "cluster_addr = 127.0.0.1",
                "ms_bind_msgr1 = false",
                `run_dir = ${t}/run`,
                `log_file = ${t}/log/$cluster-$name.log`,
                "auth_allow_insecure_global_id_reclaim = false",
                // the test's temp dir shares a disk with everything else
                "mon_data_avail_warn = 2",
                "mon_data_avail_crit = 1",
                // one host: replicas go to distinct OSDs, not hosts
                "osd_crush_chooseleaf_type = 0",
                "osd_pool_default_size = 2",
                "osd_pool_default_min_size = 1",
                "osd_pool_default_pg_num = 8",
                "osd_pool_default_pgp_num = 8",
                "osd_pool_default_pg_autoscale_mode = off",
                // small: the machine is shared
                "osd_memory_target = 939524096",
                "bluestore_cache_autotune = false",
                "bluestore_cache_size = 67108864",
                "osd_op_num_shards = 1",
                "osd_op_num_threads_per_shard = 1",
                "mds_cache_memory_limit = 134217728",
                "",
            ].join("\n"),
            { mode: 0o644 },
        );
    }

    private async startHolder(): Promise<void> {
        const script = path.join(__dirname, "ns-holder.sh");
        const holder = spawn("bash", [script, this.tmp, String(process.pid)], { stdio: ["ignore", "pipe", "pipe"] });
        this.holder = holder;
        let out = "";
        holder.stdout!.on("data", (d) => (out += String(d)));
        holder.stderr!.on("data", (d) => (out += String(d)));
        this.nsPid = await waitFor("the private mount namespace", 10_000, async () => {
            const m = /^ns (\d+)$/m.exec(out);
            if (m) return Number(m[1]);
            if (holder.exitCode !== null) throw new Error(`ns-holder exited: ${out}`);
            return undefined;
        }, 100);
    }

    /** Runs argv inside the namespace, bounded; never throws on a non-zero exit. */
    exec(argv: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string; record?: boolean } = {}): Promise<RunResult> {
        const started = Date.now();
        return new Promise((resolve, reject) => {
            const child = spawn("nsenter", ["-t", String(this.nsPid), "-m", "--", ...argv], {
                env: opts.env ?? this.env(),
                stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
            });
            let stdout = "";
            let stderr = "";
            child.stdout!.on("data", (d) => (stdout += String(d)));
            child.stderr!.on("data", (d) => (stderr += String(d)));
            const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
            child.on("error", reject);
            child.on("close", (code) => {
                clearTimeout(timer);
                if (opts.record) this.transcript.push(stdout, stderr);
                resolve({ code, stdout, stderr, ms: Date.now() - started });
            });
            if (opts.input !== undefined) {
                child.stdin!.on("error", () => undefined);
                child.stdin!.end(opts.input);
            }
        });
    }

    /**
     * Runs a node script exactly as it is shipped: `sh -c '<lib.sh + ceph-lib.sh + script>' name
     * args`, rendered by the same function the program uses.
     */
    script(name: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunResult> {
        return this.exec(["/bin/sh", "-c", this.scriptCommand(name, args)], { ...opts, record: true });
    }

    scriptCommand(name: string, args: string[]): string {
        return renderNodeCommand({ files: ["lib.sh", "ceph/ceph-lib.sh", `ceph/${name}.sh`], name, args, sudo: false });
    }

    /** The ceph CLI as a given user (admin or csi), key from its file; JSON parsed when asked. */
    async ceph(args: string[], user: "admin" | "csi" = "admin"): Promise<RunResult> {
        return this.exec(
            ["timeout", "60", "ceph", "--conf", this.conf, "--name", `client.${user}`, "--keyfile", this.keyFile(user), "--connect-timeout", "20", ...args],
            { timeoutMs: 70_000 },
        );
    }
    async cephJson<T = any>(args: string[], user: "admin" | "csi" = "admin"): Promise<T> {
        const r = await this.ceph([...args, "--format", "json"], user);
        if (r.code !== 0) throw new Error(`ceph ${args.join(" ")}: ${r.code} ${r.stderr}`);
        return JSON.parse(r.stdout) as T;
    }

    /** Starts a long-running process in the namespace; its output goes to <tmp>/log/<name>.out. */
    daemon(name: string, argv: string[]): ChildProcess {
        if (this.daemons.has(name)) throw new Error(`${name} is already running`);
        const fd = fs.openSync(path.join(this.tmp, "log", `${name}.out`), "a");
        const child = spawn("nsenter", ["-t", String(this.nsPid), "-m", "--", ...argv], {
            env: this.env(),
            stdio: ["ignore", fd, fd],
        });
        fs.closeSync(fd);
        this.daemons.set(name, child);
        child.on("exit", () => {
            if (this.daemons.get(name) === child) this.daemons.delete(name);
        });
        return child;
    }

    /** The daemon command lines the workloads run (no keys: daemons read their own keyrings). */
    cephDaemon(type: "mon" | "mgr" | "mds", id: string): ChildProcess {
        return this.daemon(`${type}.${id}`, [`ceph-${type}`, "--foreground", "--conf", this.conf, "--cluster", "ceph", "--id", id, "--setuser", "ceph", "--setgroup", "ceph"]);
    }
    /** The OSD workload's container command: argv ["sh", "-c", <lib + ceph-lib + ceph-osd.sh>, name, args]. */
    osdDaemon(name: string, device: string): ChildProcess {
        const text = ["lib.sh", "ceph/ceph-lib.sh", "ceph/ceph-osd.sh"].map(readNodeScript).join("\n");
        return this.daemon(name, ["/bin/sh", "-c", text, "ceph-osd", "run", "--device", device, "--host", this.host]);
    }
    daemonLog(name: string): string {
        try {
            return fs.readFileSync(path.join(this.tmp, "log", `${name}.out`), "utf8");
        } catch {
            return "";
        }
    }
    renameDaemon(from: string, to: string): void {
        const child = this.daemons.get(from);
        if (!child) throw new Error(`${from} is not running`);
        this.daemons.delete(from);
        this.daemons.set(to, child);
    }

    /** SIGTERM, then SIGKILL after a bound. */
    async stopDaemon(name: string, graceMs = 15_000): Promise<void> {
        const child = this.daemons.get(name);
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
    }

    /** A sparse file under <tmp>/img attached to a loop device. */
    loop(name: string, sizeMiB: number): string {
        const file = path.join(this.tmp, "img", `${name}.img`);
        fs.writeFileSync(file, "");
        fs.truncateSync(file, sizeMiB * 1024 * 1024);
        return execFileSync("losetup", ["--find", "--show", file], { encoding: "utf8" }).trim();
    }

    /**
     * Tears everything down (the holder does the work); bounded. With ZCLOUD_CEPH_KEEP_LOGS=<dir>
     * the daemons' and scripts' logs are copied there first.
     */
    async stop(): Promise<void> {
        const keep = process.env.ZCLOUD_CEPH_KEEP_LOGS;
        if (keep) {
            for (const d of ["log", "varlog"]) {
                const from = path.join(this.tmp, d);
                if (fs.existsSync(from)) fs.cpSync(from, path.join(keep, d), { recursive: true });
            }
        }
        const holder = this.holder;
        if (holder && holder.exitCode === null) {
            const exited = new Promise<void>((r) => holder.once("exit", () => r()));
            fs.writeFileSync(path.join(this.tmp, "stop"), "");
            const timer = setTimeout(() => holder.kill("SIGKILL"), 60_000);
            await exited;
            clearTimeout(timer);
        }
        for (const child of this.daemons.values()) child.kill("SIGKILL");
        if (fs.existsSync(this.tmp)) {
            // The holder never started (or was killed): nothing may be mounted from outside, so
            // only loop devices and files remain.
            const loops = execFileSync("losetup", ["--list", "--noheadings", "-O", "NAME,BACK-FILE"], { encoding: "utf8" });
            for (const line of loops.split("\n")) {
                const [dev, file] = line.trim().split(/\s+/);
                if (dev && file?.startsWith(this.tmp + "/")) execFileSync("losetup", ["-d", dev]);
            }
            fs.rmSync(this.tmp, { recursive: true, force: true });
        }
    }
}
