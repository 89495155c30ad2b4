/**
 * A pod's network namespace: its own loopback (so :8080 of one program collides with nothing),
 * and, when asked, the API server stand-in at 127.0.0.1:<port> inside it, forwarded to the
 * stand-in's unix socket outside, as a pod reaches the API server through a Service address.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";

export interface PodNetwork {
    /** Prefix that runs a command inside the namespace. */
    enter: string[];
    close(): void;
}

/** Accepts on 127.0.0.1:<port> and joins each connection to the unix socket; prints "ready". */
const forwarderSource = `
const net = require("node:net");
const [port, socket] = process.argv.slice(1);
net.createServer((c) => {
    const u = net.connect(socket);
    c.pipe(u).pipe(c);
    c.on("error", () => u.destroy());
    u.on("error", () => c.destroy());
}).listen(Number(port), "127.0.0.1", () => console.log("ready"));
`;

function waitForLine(child: ChildProcess, line: string, ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no "${line}" within ${ms} ms: ${out}`)), ms);
        child.stdout!.on("data", (d) => {
            out += d;
            if (out.split("\n").includes(line)) {
                clearTimeout(timer);
                resolve();
            }
        });
        child.stderr!.on("data", (d) => (out += d));
        child.once("exit", (code) => {
            clearTimeout(timer);
            reject(new Error(`exited ${code} before "${line}": ${out}`));
        });
    });
}

export async function podNetwork(api?: { port: number; socket: string }): Promise<PodNetwork> {
    const holder = spawn("unshare", ["--net", "--", "sh", "-c", "echo ready; exec sleep infinity"], { stdio: ["ignore", "pipe", "pipe"] });
    const children: ChildProcess[] = [holder];
    const close = () => {
        for (const c of children.reverse()) {
            if (c.exitCode === null && c.signalCode === null) {
                c.kill("SIGKILL");
            }
        }
    };
    try {
        await waitForLine(holder, "ready", 10_000);
        const netns = `/proc/${holder.pid}/ns/net`;
        if (fs.readlinkSync(netns) === fs.readlinkSync("/proc/self/ns/net")) {
            throw new Error("unshare --net gave no network namespace of its own");
        }
        const enter = ["nsenter", `--net=${netns}`, "--"];
        execFileSync(enter[0], [...enter.slice(1), "ip", "link", "set", "lo", "up"]);
        if (api) {
            const forwarder = spawn(enter[0], [...enter.slice(1), process.execPath, "-e", forwarderSource, String(api.port), api.socket], { stdio: ["ignore", "pipe", "pipe"] });
            children.push(forwarder);
            await waitForLine(forwarder, "ready", 10_000);
        }
        return { enter, close };
    } catch (e) {
        close();
        throw e;
    }
}
