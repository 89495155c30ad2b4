/**
 * A one-host Ceph test cluster, brought up by the commands the program renders (test/ceph/planned.ts)
 * from Debian's ceph packages at the shipped image's release (a chroot, test/ceph/release.ts), in a
 * temp dir and a private mount and network namespace.
 *
 * The namespace (test/ceph/ns-holder.sh) maps <tmp>/data to /var/lib/ceph and <tmp>/varlog to
 * /var/log/ceph, because ceph-volume hard-codes those paths, and has its own loopback carrying
 * the mon Service's ClusterIP from the plan. The containers' mounts become test paths:
 * /etc/ceph -> <tmp>/etc (the ConfigMap's ceph.conf plus test settings), the Secrets' mount ->
 * <tmp>/keys or <tmp>/osd-keys (bare keys, mode as the Secret volume sets it).
 * The holder tears everything down when stop() is called or when this process dies.
 */
import { spawn, execFileSync, ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { cephKey, cephKeyBytes, cephNames } from "../../components/cephfs/cluster";
import { images } from "../../components/images";
import { osdLockDir } from "../../components/cephfs/osds";
import { renderInlineNodeCommand } from "../../components/node/script";
import { CephPlan, PlannedContainer, Volume } from "./planned";
import { tierRoot } from "./release";

/** What the tier runs inside its chroot (test/ceph/build-chroot.sh installs them). */
export const CEPH_BINARIES = [
    "ceph", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-volume", "ceph-fuse", "ceph-conf",
    "ceph-authtool", "ceph-bluestore-tool", "monmaptool", "udevadm", "unshare", "losetup",
    "wipefs", "blkid", "mkfs.ext4",
];
/** What the tier runs on the host: the namespace, loop devices, the chroot's build. */
export const HOST_BINARIES = ["unshare", "nsenter", "losetup", "ip", "chroot", "debootstrap"];
/** Debian packages (bookworm) the host needs for this tier; Ceph itself is in the chroot. */
export const CEPH_APT_PACKAGES = ["debootstrap", "util-linux", "iproute2"];

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
    for (const bin of HOST_BINARIES) {
        if (!dirs.some((d) => d && fs.existsSync(path.join(d, bin)))) missing.push(bin);
    }
    if (!fs.existsSync("/dev/fuse")) missing.push("/dev/fuse");
    return missing;
}

/** What the chroot lacks of the tier's binaries and directories (the build's package list is short of them). */
export function missingInRoot(root: string): string[] {
    const dirs = ["/usr/bin", "/usr/sbin", "/bin", "/sbin"];
    const missing = CEPH_BINARIES.filter((bin) => !dirs.some((d) => fs.existsSync(path.join(root, d, bin))));
    for (const dir of ["/var/lib/ceph", "/var/log/ceph", "/dev", "/proc", "/sys", "/run", "/tmp"]) {
        if (!fs.existsSync(path.join(root, dir))) missing.push(`${root}${dir}`);
    }
    return missing;
}

/** uid and gid of `ceph` in the chroot's /etc/passwd (Debian's is not the Ceph image's 167). */
export function cephIds(root: string): { uid: number; gid: number } {
    const line = fs.readFileSync(path.join(root, "etc", "passwd"), "utf8").split("\n").find((l) => l.startsWith("ceph:"));
    if (!line) throw new Error(`${root}: no ceph user in /etc/passwd`);
    const [, , uid, gid] = line.split(":");
    return { uid: Number(uid), gid: Number(gid) };
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

/**
 * Settings of this test only, merged into the ConfigMap's ceph.conf (same key: replaced):
 * admin sockets in the temp dir, daemons other than the mon on 127.0.0.1, a temp dir that
 * shares its disk, small PG counts and caches for a 2-core machine.
 */
export const TEST_CONF: Record<string, string> = {
    public_addr: "127.0.0.1",
    cluster_addr: "127.0.0.1",
    mon_data_avail_warn: "2",
    mon_data_avail_crit: "1",
    osd_pool_default_pg_num: "8",
    osd_pool_default_pgp_num: "8",
    osd_pool_default_pg_autoscale_mode: "off",
    osd_memory_target: "939524096",
    bluestore_cache_autotune: "false",
    bluestore_cache_size: "67108864",
    osd_op_num_shards: "1",
    osd_op_num_threads_per_shard: "1",
    mds_cache_memory_limit: "134217728",
    // Ceph 20 holds MON_DOWN back for 60 s after the monmap was made or the leader started and
    // 180 s after a mon joined; the tier's clusters are younger than that when a test stops a
    // mon and reads the health detail.
    mon_down_mkfs_grace: "0",
    mon_down_uptime_grace: "0",
    mon_down_added_grace: "0",
};

/**
 * Test-only, for a cluster made with AES-128 keys (the upgrade test's, created at 18.2.7, which
 * knows no other): Ceph 20 refuses such keys unless allowed. A cluster made with the keys the
 * program makes for Ceph 20 (AES-256) runs without it.
 */
export const INSECURE_KEY_CONF: Record<string, string> = { mon_auth_allow_insecure_key: "true" };

/** ceph.conf text with `key = value` lines replaced (or appended to [global]) from overrides. */
export function mergeConf(conf: string, overrides: Record<string, string>): string {
    const left = new Map(Object.entries(overrides));
    const lines = conf.split("\n").map((line) => {
        const m = /^(\w+) = /.exec(line);
        if (m && left.has(m[1])) {
            const v = left.get(m[1])!;
            left.delete(m[1]);
            return `${m[1]} = ${v}`;
        }
        return line;
    });
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return [...lines, ...[...left].map(([k, v]) => `${k} = ${v}`), ""].join("\n");
}

export class CephTestCluster {
    readonly monId = "a";
    /** What the program renders for this test's stack; set by boot(). */
    plan!: CephPlan;
    /** Everything the node scripts printed, to check that no key ever shows up. */
    readonly transcript: string[] = [];
    private readonly daemons = new Map<string, ChildProcess>();
    private holder?: ChildProcess;
    private nsPid = 0;

    /** Commands and daemons started from now on run from this root (undefined: `root`); see useRoot(). */
    private inRoot?: string;

    /**
     * `root`: the namespace's root (the shipped release); `otherRoots`: other releases' chroots
     * (an upgrade's), mounted in it at /mnt/zc-roots/<name> with the same mounts.
     */
    private constructor(readonly tmp: string, readonly root: string, readonly otherRoots: string[]) {}

    /** Runs what starts from now on (commands, daemons) from another release's root; undefined: back to `root`. */
    useRoot(root?: string): void {
        if (root !== undefined && !this.otherRoots.includes(root)) throw new Error(`${root} is not one of this cluster's roots`);
        this.inRoot = root;
    }
    /** argv run from the root in use: `chroot /mnt/zc-roots/<name>` in front for another release. */
    private inUse(argv: string[]): string[] {
        return this.inRoot === undefined ? argv : ["chroot", `/mnt/zc-roots/${path.basename(this.inRoot)}`, ...argv];
    }

    get fsid(): string {
        return this.plan.fsid;
    }
    /** The mon's address: its Service ClusterIP from the plan, on the namespace's loopback. */
    get monIp(): string {
        return this.plan.monIps[this.monId];
    }

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
    /** Settings of the test run only (bounds, poll interval, loop devices, temp files). */
    private testEnv(): Record<string, string> {
        return {
            PATH: `${process.env.PATH ?? "/usr/bin:/bin"}:/usr/sbin:/sbin`,
            ZCLOUD_CEPH_TIMEOUT: "20",
            ZCLOUD_CEPH_POLL: "1",
            CEPH_VOLUME_ALLOW_LOOP_DEVICES: "true",
            TMPDIR: path.join(this.tmp, "scratch"),
        };
    }

    /**
     * Where a container path is in this test: the ConfigMap mount is <tmp>/etc, the scripts
     * volume <tmp>/scripts/<container> (from the planned ConfigMaps), a Secret mount
     * <tmp>/keys or <tmp>/osd-keys (by Secret), /var/lib/ceph/..., /dev and /run/udev stay (the
     * namespace's /var/lib/ceph is the test's). Any other mount fails the test.
     */
    private pathMap(c: PlannedContainer): [string, string][] {
        const map: [string, string][] = [];
        for (const m of c.volumeMounts) {
            const vol = c.volumes.find((v) => v.name === m.name);
            if (!vol) throw new Error(`${c.id}: mount ${m.name} has no volume`);
            if (vol.configMap) {
                if (vol.configMap.name !== `ceph-${this.plan.stack.storage}-conf`) throw new Error(`${c.id}: unexpected ConfigMap ${vol.configMap.name}`);
                map.push([m.mountPath, path.dirname(this.conf)]);
            } else if (vol.projected) {
                map.push([m.mountPath, this.projectScripts(c, vol.projected)]);
            } else if (vol.secret) {
                const dir = { [`ceph-${this.plan.stack.storage}-keys`]: "keys", [`ceph-${this.plan.stack.storage}-osd-keys`]: "osd-keys" }[vol.secret.secretName];
                if (!dir) throw new Error(`${c.id}: unexpected Secret ${vol.secret.secretName}`);
                map.push([m.mountPath, this.projectSecret(c, path.join(this.tmp, dir), vol.secret)]);
            } else if (!(m.mountPath.startsWith("/var/lib/ceph/") || m.mountPath === "/dev" || m.mountPath === "/run/udev" || m.mountPath === osdLockDir)) {
                // osdLockDir: the host's lock directory, the namespace's own /run (shared by every "pod")
                throw new Error(`${c.id}: mount ${m.mountPath} has no place in the test`);
            }
        }
        return map;
    }

    /**
     * A Secret volume as the kubelet projects it: only its `items` (all keys without), each
     * with the volume's mode, in a directory of this container's own; a key the container does
     * not mount is not there, so a script that reads it fails.
     */
    private projectSecret(c: PlannedContainer, source: string, secret: NonNullable<Volume["secret"]>): string {
        const dir = path.join(this.tmp, "projected", c.id.replace(/[^A-Za-z0-9-]+/g, "_"));
        fs.rmSync(dir, { recursive: true, force: true });
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        const items = secret.items ?? fs.readdirSync(source).map((key) => ({ key, path: key }));
        for (const item of items) {
            fs.copyFileSync(path.join(source, item.key), path.join(dir, item.path));
            fs.chmodSync(path.join(dir, item.path), secret.defaultMode ?? 0o644);
        }
        return dir;
    }

    /**
     * A projected volume of script-set ConfigMaps as the kubelet gives it: each source's items
     * from the planned ConfigMap, with the volume's mode, in a directory of this container's own.
     * A ConfigMap the plan does not hold fails the test (the pod would not start).
     */
    private projectScripts(c: PlannedContainer, projected: NonNullable<Volume["projected"]>): string {
        const dir = path.join(this.tmp, "scripts", c.id.replace(/[^A-Za-z0-9-]+/g, "_"));
        fs.rmSync(dir, { recursive: true, force: true });
        fs.mkdirSync(dir, { recursive: true });
        const sets = this.plan.scriptSets;
        for (const source of projected.sources) {
            const cm = source.configMap;
            if (!cm || !sets[cm.name]) throw new Error(`${c.id}: projected source ${JSON.stringify(source)} is no planned script-set ConfigMap`);
            for (const item of cm.items ?? Object.keys(sets[cm.name]).map((key) => ({ key, path: key }))) {
                fs.writeFileSync(path.join(dir, item.path), sets[cm.name][item.key], { mode: projected.defaultMode ?? 0o644 });
            }
        }
        return dir;
    }

    /** A container path (or a word holding one) as the test's path. */
    private mapped(word: string, map: [string, string][]): string {
        for (const [from, to] of map) {
            if (word === from) return to;
            if (word.startsWith(from + "/")) return to + word.slice(from.length);
        }
        return word;
    }

    /**
     * The container's environment as Kubernetes would give it (values with mount paths mapped,
     * status.podIP = the mon address), plus the test's settings (testEnv).
     */
    containerEnv(c: PlannedContainer): Record<string, string> {
        const map = this.pathMap(c);
        const env: Record<string, string> = {};
        for (const e of c.env) {
            if (e.value !== undefined) env[e.name] = this.mapped(e.value, map);
            else if (e.valueFrom?.fieldRef?.fieldPath === "status.podIP") env[e.name] = this.podIp(c);
            else throw new Error(`${c.id}: env ${e.name} has no value the test can give`);
        }
        return { ...this.testEnv(), ...env };
    }

    /**
     * The pod IP the test gives a container: a mon's own advertised address (its
     * `--public-addr=<ClusterIP>`, on the namespace's loopback), else mon a's.
     */
    private podIp(c: PlannedContainer): string {
        const advertised = c.command.find((w) => w.startsWith("--public-addr="));
        return advertised ? advertised.slice("--public-addr=".length) : this.monIp;
    }

    /** The container's argv: `$(VAR)` expanded from its env as Kubernetes does, paths mapped. */
    containerArgv(c: PlannedContainer): string[] {
        const map = this.pathMap(c);
        const env = this.containerEnv(c);
        return c.command.map((w) => {
            const expanded = w.replace(/\$\((\w+)\)/g, (_, v: string) => {
                if (env[v] === undefined) throw new Error(`${c.id}: $(${v}) is not in the container's env`);
                return env[v];
            });
            return this.mapped(expanded, map);
        });
    }

    /** The environment the scripts get in the admin container, pointed at the test's files. */
    env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
        return { ...this.containerEnv(this.adminContainer), ...extra };
    }
    get adminContainer(): PlannedContainer {
        return this.plan.container(`ceph-${this.plan.stack.storage}-admin`, "admin");
    }

    /** Runs a planned container's command to its end (init containers, the Job), recorded. */
    container(c: PlannedContainer, opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RunResult> {
        const argv = this.containerArgv(c);
        return this.exec(argv[0] === "sh" ? ["/bin/sh", ...argv.slice(1)] : argv, { env: { ...this.containerEnv(c), ...opts.env }, timeoutMs: opts.timeoutMs, record: true });
    }
    /**
     * Runs a planned container's command to its end with a /var/lib/ceph/bootstrap-osd of its
     * own (a tmpfs in a mount namespace of its own), as a pod has its own container filesystem:
     * so OSD prepares (ceph-osd.sh writes the bootstrap keyring where ceph-volume reads it) can
     * run at once here, as on separate nodes.
     */
    containerOwnFs(c: PlannedContainer, opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RunResult> {
        const argv = this.containerArgv(c);
        const pod = 'mkdir -p /var/lib/ceph/bootstrap-osd && mount -t tmpfs zc-pod /var/lib/ceph/bootstrap-osd && exec "$@"';
        return this.exec(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", pod, "pod", ...(argv[0] === "sh" ? ["/bin/sh", ...argv.slice(1)] : argv)], {
            env: { ...this.containerEnv(c), ...opts.env },
            timeoutMs: opts.timeoutMs,
            record: true,
        });
    }
    /** Starts a planned container's command as a long-running daemon. */
    containerDaemon(name: string, c: PlannedContainer): ChildProcess {
        const argv = this.containerArgv(c);
        return this.daemon(name, argv[0] === "sh" ? ["/bin/sh", ...argv.slice(1)] : argv, this.containerEnv(c));
    }

    /** The temp dir (loop devices can be made); boot() then starts the namespace. */
    static create(root: string = tierRoot(), otherRoots: string[] = []): CephTestCluster {
        const missing = [root, ...otherRoots].flatMap(missingInRoot);
        if (missing.length > 0) throw new Error(`Ceph tier: the chroots lack ${missing.join(", ")}`);
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ceph-"));
        fs.chmodSync(tmp, 0o755);
        for (const d of ["etc", "data", "varlog", "log", "run", "mnt", "scratch", "img", "udev", "udev/data"]) fs.mkdirSync(path.join(tmp, d));
        return new CephTestCluster(tmp, root, otherRoots);
    }

    /**
     * Keys, ceph.conf and the namespace, from the plan of the test's stack; the namespace's
     * loopback also carries `moreMonIps` (mons of a later plan of the same storage).
     */
    async boot(plan: CephPlan, moreMonIps: string[] = []): Promise<void> {
        this.plan = plan;
        this.moreMonIps = moreMonIps;
        await this.init();
    }
    private moreMonIps: string[] = [];

    private async init(): Promise<void> {
        fs.mkdirSync(path.join(this.tmp, "keys"), { mode: 0o700 });
        fs.mkdirSync(path.join(this.tmp, "osd-keys"), { mode: 0o700 });
        fs.chmodSync(path.join(this.tmp, "scratch"), 0o700);
        const { uid, gid } = cephIds(this.root);
        for (const d of ["data", "varlog", "log", "run"]) fs.chownSync(path.join(this.tmp, d), uid, gid);
        // As the Secrets mount them: one file per key, the volume's defaultMode.
        const mode = (secret: string) => {
            const vols = [this.adminContainer, this.plan.container(this.osdWorkloads()[0], "osd")].flatMap((c) => c.volumes);
            const m = vols.find((v) => v.secret?.secretName === secret)?.secret?.defaultMode;
            if (m === undefined) throw new Error(`no Secret volume ${secret} in the plan`);
            return m;
        };
        const keyMode = mode(`ceph-${this.plan.stack.storage}-keys`);
        for (const k of KEY_NAMES) this.writeKey(k, this.genKey(k), keyMode);
        fs.writeFileSync(path.join(this.tmp, "osd-keys", "bootstrap-osd"), this.key("bootstrap-osd") + "\n", { mode: mode(`ceph-${this.plan.stack.storage}-osd-keys`) });
        this.writeConf(this.conf, this.fsid);
        await this.startHolder();
    }

    /**
     * Secret bytes of the keys boot() makes: 32 (AES-256, `Ag...=`), what the program makes for a
     * Ceph 20 image (cephKeyBytes); 16 (AES-128) for a cluster created at an older release.
     */
    keyBytes: 16 | 32 = 32;
    /**
     * Per key, when it differs from keyBytes: the CSI user's key as the program makes it for the
     * shipped image (AES-128 by default, cephKeyBytes; docs/cephfs.md "Keys on Ceph 20").
     */
    keyBytesOf: Partial<Record<KeyName, 16 | 32>> = { csi: cephKeyBytes(images.ceph, "csi") };
    /** A key as the program makes it (cephKey of keyBytes random bytes, or the named key's). */
    genKey(name?: KeyName): string {
        return cephKey(randomBytes((name && this.keyBytesOf[name]) ?? this.keyBytes).toString("base64"));
    }
    writeKey(name: string, key: string, mode = 0o600): string {
        const file = path.join(this.tmp, "keys", name);
        fs.writeFileSync(file, key + "\n", { mode });
        return file;
    }

    /** The OSD workloads the plan has, in node then device order. */
    osdWorkloads(): string[] {
        return this.osdWorkloadsOf(this.plan);
    }
    osdWorkloadsOf(plan: CephPlan): string[] {
        return Object.entries(plan.stack.hosts).flatMap(([node, devs]) => devs.map((d) => cephNames(plan.stack.storage).osd(node, d)));
    }

    /**
     * Settings of one test over TEST_CONF, set before boot(): e.g. `public_addr` on an address a
     * guest reaches (the daemons other than the mon bind there, and the maps carry it).
     */
    confOverrides: Record<string, string> = {};

    /** ceph.conf as the ConfigMap holds it (fsid replaced if asked), plus the test settings. */
    writeConf(file: string, fsid: string, plan: CephPlan = this.plan): void {
        const rendered = plan.conf.replace(/^fsid = .*$/m, `fsid = ${fsid}`);
        const test = { ...TEST_CONF, ...(this.keyBytes === 16 ? INSECURE_KEY_CONF : {}), ...this.confOverrides, run_dir: `${this.tmp}/run` };
        fs.writeFileSync(file, mergeConf(rendered, test), { mode: 0o644 });
    }

    private async startHolder(): Promise<void> {
        const script = path.join(__dirname, "ns-holder.sh");
        const holder = spawn("bash", [script, this.tmp, String(process.pid), [this.root, ...this.otherRoots].join(":"), this.monIp, ...this.moreMonIps], { stdio: ["ignore", "pipe", "pipe"] });
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

    /**
     * The node's udev database where no udevd runs on this host: ceph-volume 20 refuses any
     * device without /run/udev/data/b<major>:<minor>, and it lists every block device. Each
     * device gets the file udevd would write with the kernel's properties (its uevent) and no
     * rule results; written before every command, so loop devices made since are in it.
     */
    private udevData(): void {
        if (fs.existsSync("/run/udev/data")) return;
        for (const dev of fs.readdirSync("/sys/class/block")) {
            const sys = path.join("/sys/class/block", dev);
            let uevent: string;
            try {
                uevent = fs.readFileSync(path.join(sys, "uevent"), "utf8");
            } catch {
                continue; // gone since the listing
            }
            const major = /^MAJOR=(\d+)$/m.exec(uevent)?.[1];
            const minor = /^MINOR=(\d+)$/m.exec(uevent)?.[1];
            if (major === undefined || minor === undefined) continue;
            const lines = uevent.split("\n").filter((l) => l.includes("=")).map((l) => `E:${l}`);
            fs.writeFileSync(path.join(this.tmp, "udev", "data", `b${major}:${minor}`), lines.join("\n") + "\n");
        }
    }

    /** The namespace holder's pid (mount + network namespace, chrooted), for nsenter. */
    get nsTarget(): number {
        return this.nsPid;
    }
    /** nsenter's argv up to the command: the namespaces and root (the chroot) of the holder. */
    private get nsenter(): string[] {
        return ["-t", String(this.nsPid), "-m", "-n", "-r", "-w", "--"];
    }

    /** Runs argv inside the namespace, bounded; never throws on a non-zero exit. */
    exec(argv: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string; record?: boolean } = {}): Promise<RunResult> {
        const started = Date.now();
        this.udevData();
        return new Promise((resolve, reject) => {
            const child = spawn("nsenter", [...this.nsenter, ...this.inUse(argv)], {
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
        return renderInlineNodeCommand({ files: ["lib.sh", "ceph/ceph-lib.sh", `ceph/${name}.sh`], name, args, sudo: false });
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
    daemon(name: string, argv: string[], env: NodeJS.ProcessEnv = this.env()): ChildProcess {
        if (this.daemons.has(name)) throw new Error(`${name} is already running`);
        this.udevData();
        const fd = fs.openSync(path.join(this.tmp, "log", `${name}.out`), "a");
        const child = spawn("nsenter", [...this.nsenter, ...this.inUse(argv)], {
            env,
            stdio: ["ignore", fd, fd],
        });
        fs.closeSync(fd);
        this.daemons.set(name, child);
        child.on("exit", () => {
            if (this.daemons.get(name) === child) this.daemons.delete(name);
        });
        return child;
    }

    /** The planned daemon container of a mon, mgr or mds workload (no keys: daemons read their own keyrings). */
    cephDaemon(type: "mon" | "mgr" | "mds", id: string): ChildProcess {
        return this.containerDaemon(`${type}.${id}`, this.plan.container(`ceph-${this.plan.stack.storage}-${type}-${id}`, type));
    }
    /** The planned OSD workload's container: argv ["sh", "-c", <runner>, "/etc/zcloud/scripts/ceph-osd.sh", <library sha256>, <set sha256>, "run", ...]. */
    osdDaemon(name: string, workload: string): ChildProcess {
        return this.containerDaemon(name, this.plan.container(workload, "osd"));
    }
    /** The pid of a running daemon (the OSD script execs ceph-osd in place). */
    daemonPid(name: string): number | undefined {
        return this.daemons.get(name)?.pid;
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
