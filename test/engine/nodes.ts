/**
 * Sandbox SSH nodes: each a real sshd on 127.0.0.1 (own port, own pinned host key) with loop
 * devices of its own and an LVM view that sees only them, so two nodes can each hold a VG of the
 * same name, as real nodes do. The sshd daemons outlive this process; `stop` ends them and
 * releases every device, from what `start` recorded as it went (so also after a failed start).
 *
 *   tsx test/engine/nodes.ts start <dir> --nodes N --devices M [--size-mib S]
 *   tsx test/engine/nodes.ts stop <dir>
 *
 * Writes <dir>/id_ed25519 (the key every node accepts), <dir>/nodes.json and <dir>/nodes/<node>/.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { freePort } from "../helpers/net";
import { attachLoop, lvmQuiet, newKey, publicKeyOf, removeVgs, sh, sshdConfig, sshdPath, tryRun, wipeLoop, writeLvmView } from "../helpers/sshNode";

export interface SandboxNode {
    address: string;
    port: number;
    user: string;
    hostKey: string;
    devices: string[];
}

const nodeDirs = (dir: string) => path.join(dir, "nodes");
/** Loop devices of a node, one a line, appended as each is attached. */
const loopsFile = (nodeDir: string) => path.join(nodeDir, "loops");
const lvmDirOf = (nodeDir: string) => path.join(nodeDir, "lvm");
const pidFileOf = (nodeDir: string) => path.join(nodeDir, "sshd.pid");

/** Starts sshd as a daemon: it returns once listening, or fails (port taken: the caller retries). */
function startSshdDaemon(config: string, log: string): void {
    sh(sshdPath(), ["-f", config, "-E", log]);
}

async function startNode(dir: string, name: string, devices: number, sizeMiB: number): Promise<SandboxNode> {
    const nodeDir = path.join(nodeDirs(dir), name);
    fs.mkdirSync(nodeDir, { recursive: true });
    const loops: string[] = [];
    for (let i = 0; i < devices; i++) {
        const loop = attachLoop(path.join(nodeDir, `disk${i}.img`), sizeMiB);
        fs.appendFileSync(loopsFile(nodeDir), `${loop}\n`);
        loops.push(loop);
    }
    const lvmEnv = writeLvmView(lvmDirOf(nodeDir), loops);
    // The loop devices are new, but a reused /dev/loopN may show an old signature: start clean.
    for (const loop of loops) {
        wipeLoop(loop, lvmEnv);
    }
    const hostKey = path.join(nodeDir, "host_ed25519");
    newKey(hostKey, `zcloud-sandbox-${name}`);
    const config = path.join(nodeDir, "sshd_config");
    for (let attempt = 0; ; attempt++) {
        const port = await freePort();
        fs.writeFileSync(
            config,
            sshdConfig({ port, hostKey, pidFile: pidFileOf(nodeDir), authorizedKeys: path.join(dir, "authorized_keys"), sessionEnv: { ...lvmEnv, ZCLOUD_ALLOW_LOOP: "1", ZCLOUD_SCRIPT_STORE: path.join(nodeDir, "scripts") } }),
        );
        try {
            startSshdDaemon(config, path.join(nodeDir, "sshd.log"));
            return { address: "127.0.0.1", port, user: "root", hostKey: publicKeyOf(`${hostKey}.pub`), devices: loops };
        } catch (err) {
            if (attempt >= 4) {
                throw new Error(`${name}: sshd did not start: ${fs.readFileSync(path.join(nodeDir, "sshd.log"), "utf8")}`, { cause: err });
            }
        }
    }
}

export async function startNodes(dir: string, count: number, devices: number, sizeMiB: number): Promise<Record<string, SandboxNode>> {
    if (process.getuid?.() !== 0) {
        throw new Error("sandbox nodes need root (loop devices, LVM, root SSH login)");
    }
    fs.mkdirSync(dir, { recursive: true });
    const key = path.join(dir, "id_ed25519");
    newKey(key, "zcloud-sandbox");
    fs.copyFileSync(`${key}.pub`, path.join(dir, "authorized_keys"));
    fs.chmodSync(path.join(dir, "authorized_keys"), 0o600);
    const nodes: Record<string, SandboxNode> = {};
    for (let i = 1; i <= count; i++) {
        nodes[`node${i}`] = await startNode(dir, `node${i}`, devices, sizeMiB);
    }
    fs.writeFileSync(path.join(dir, "nodes.json"), JSON.stringify(nodes, null, 2) + "\n");
    return nodes;
}

/** The pid in a pid file, if that process is still an sshd. */
function runningSshd(pidFile: string): number | undefined {
    if (!fs.existsSync(pidFile)) {
        return undefined;
    }
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("sshd") ? pid : undefined;
    } catch {
        return undefined;
    }
}

/** Ends each node's sshd, removes the VGs its LVM view shows, wipes and detaches its loops. */
export function stopNodes(dir: string): void {
    const root = nodeDirs(dir);
    if (!fs.existsSync(root)) {
        return;
    }
    for (const name of fs.readdirSync(root).sort()) {
        const nodeDir = path.join(root, name);
        const pid = runningSshd(pidFileOf(nodeDir));
        if (pid !== undefined) {
            process.kill(pid, "SIGTERM");
        }
        const lvmEnv = { ...lvmQuiet, LVM_SYSTEM_DIR: lvmDirOf(nodeDir) };
        removeVgs(lvmEnv);
        const loops = fs.existsSync(loopsFile(nodeDir)) ? fs.readFileSync(loopsFile(nodeDir), "utf8").split("\n").filter(Boolean) : [];
        for (const loop of loops) {
            wipeLoop(loop, lvmEnv);
            tryRun("losetup", ["-d", loop]);
        }
        fs.rmSync(nodeDir, { recursive: true, force: true });
    }
}

function usage(): never {
    console.error("usage: nodes.ts start <dir> --nodes N --devices M [--size-mib S] | stop <dir>");
    process.exit(2);
}

async function main(argv: string[]): Promise<void> {
    const [verb, dir, ...rest] = argv;
    if (!dir) {
        usage();
    }
    if (verb === "stop") {
        stopNodes(dir);
        return;
    }
    if (verb !== "start") {
        usage();
    }
    const opt = (flag: string, fallback: number) => {
        const i = rest.indexOf(flag);
        const n = i >= 0 ? Number(rest[i + 1]) : fallback;
        if (!Number.isInteger(n) || n < 1) {
            usage();
        }
        return n;
    };
    const nodes = await startNodes(dir, opt("--nodes", 2), opt("--devices", 2), opt("--size-mib", 128));
    for (const [name, n] of Object.entries(nodes)) {
        console.log(`${name}: ssh root@${n.address} -p ${n.port}, devices ${n.devices.join(" ")}`);
    }
}

if (require.main === module) {
    main(process.argv.slice(2)).catch((e) => {
        console.error(e instanceof Error ? e.message : e);
        process.exit(1);
    });
}
