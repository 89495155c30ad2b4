/** Helpers the drivers tier's guest tests share: a rendered flag's value, files copied into a guest, polling a guest, a guest's socket here, a token kubeconfig. */
import assert from "node:assert/strict";
import { ChildProcess, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { Guest } from "../vm/harness";

/** The value of `--flag=value` in a rendered argv; fails the test when the flag is absent. */
export function flagOf(argv: string[], flag: string): string {
    const found = argv.find((a) => a.startsWith(`${flag}=`));
    assert.ok(found, `no ${flag} in ${argv.join(" ")}`);
    return found.slice(flag.length + 1);
}

/** Copies local files into the guest below `to` (tar over the SSH session's stdin); links stay links. */
export async function copyIntoGuest(g: Guest, from: string, paths: string[], to: string): Promise<void> {
    const tar = execFileSync("tar", ["-c", "-C", from, ...paths], { maxBuffer: 512 * 1024 * 1024 });
    await g.check(`mkdir -p ${to} && tar -x -C ${to}`, { stdin: tar, timeoutMs: 600_000 });
}

/** Polls a guest command every `intervalMs` until it succeeds; fails with `explain`'s output after `ms`. */
export async function guestUntil(g: Guest, check: string, ms: number, explain: string, intervalMs = 1000): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        if ((await g.run(check)).code === 0) {
            return;
        }
        await new Promise((r) => setTimeout(r, intervalMs));
    }
    assert.fail(`${check}: not true within ${ms} ms\n${(await g.run(explain)).stdout}`);
}

/** A kubeconfig that reaches `server` (its CA in base64) with a ServiceAccount's `token`: the rendered RBAC decides what it may do. */
export function tokenKubeconfig(serviceAccount: string, server: string, caData: string, token: string): string {
    return yaml.dump({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "engine", cluster: { server, "certificate-authority-data": caData } }],
        users: [{ name: serviceAccount, user: { token } }],
        contexts: [{ name: serviceAccount, context: { cluster: "engine", user: serviceAccount } }],
        "current-context": serviceAccount,
    });
}

/** A guest's unix socket at a path of this machine (ssh -L), waited for; the forward is pushed to `forwards` for the caller to end. */
export async function socketFromGuest(g: Guest, local: string, guestPath: string, forwards: ChildProcess[]): Promise<string> {
    const f = g.forwardGuestSocket(local, guestPath);
    forwards.push(f);
    let err = "";
    f.stderr!.on("data", (d) => (err += d));
    const deadline = Date.now() + 20_000;
    while (!fs.existsSync(local)) {
        assert.ok(Date.now() < deadline, `${guestPath} forwarded to ${local}: not within 20000 ms\n${err}`);
        await new Promise((r) => setTimeout(r, 200));
    }
    return local;
}

/**
 * The capacity topolvm-node publishes for a device class (the Node's `capacity.topolvm.io/<class>`),
 * from the guest's LVM: a thick class's VG free bytes; a thin class's pool size times the
 * overprovision ratio, less what the pool's data holds already.
 */
export async function topolvmCapacity(g: Guest, vg: string, thin?: { overprovisionRatio: number }): Promise<string> {
    if (!thin) {
        return (await g.check(`vgs --noheadings --units b --nosuffix -o vg_free ${vg}`)).trim();
    }
    const [size, dataPercent] = (await g.check(`lvs --noheadings --units b --nosuffix -o lv_size,data_percent ${vg}/pool`)).trim().split(/\s+/).map(Number);
    return String(Math.floor(size * thin.overprovisionRatio - size * (dataPercent / 100)));
}

/** The counts of csi-sanity's (Ginkgo's) closing summary; fails the test when there is none. */
export function csiSanitySummary(out: string): { ran: number; total: number; passed: number; failed: number; pending: number; skipped: number } {
    const m = out.match(/Ran (\d+) of (\d+) Specs.*\n.*?(\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/);
    assert.ok(m, `no csi-sanity summary in:\n${out.slice(-3000)}`);
    const [ran, total, passed, failed, pending, skipped] = m.slice(1).map(Number);
    return { ran, total, passed, failed, pending, skipped };
}

/** An LVM storage on a guest of its own, as the guest tests declare it. */
export interface GuestLvmStorage {
    name: string;
    node: string;
    /** The guest's disk serial the storage takes. */
    disk: string;
    thin?: { overprovisionRatio: number; snapshots: boolean };
    /** The storage's alert thresholds (`alerts`), as a stack sets them. */
    alerts?: Record<string, { warning: number; critical: number }>;
}

/**
 * The stack config of LVM storages on guests: each guest a node at its SSH address with its host
 * key pinned, each storage on its guest's disk (by its /dev/disk/by-id path); `extra` keys beside.
 */
export function guestLvmStackYaml<S extends GuestLvmStorage>(storages: S[], guestOf: (s: S) => Guest, privateKeyMarker: string, extra: Record<string, unknown> = {}): string {
    const hostKeys: Record<string, string> = {};
    const nodes: Record<string, unknown> = {};
    for (const s of storages) {
        const c = guestOf(s).connection;
        hostKeys[s.node] = c.hostKey;
        nodes[s.node] = { address: c.host, port: c.port };
    }
    return yaml.dump({
        config: {
            ...extra,
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: privateKeyMarker }, hostKeys },
            "zcloud-storage:nodes": nodes,
            "zcloud-storage:lvm": storages.map((s) => ({ name: s.name, hosts: { [s.node]: [guestOf(s).disks[s.disk]] }, ...(s.thin ? { thin: s.thin } : {}), ...(s.alerts ? { alerts: s.alerts } : {}) })),
        },
    });
}

/** The folder of csi-sanity's path programs (`mkpath`, `rmpath`: a new target and staging directory per spec), to copy into a guest. */
export const sanityPathPrograms = path.join(__dirname, "sanity-paths");

/**
 * csi-sanity's command line in a guest: both sockets, its work directory, 1 GiB volumes expanded
 * to 2 GiB. With `pathPrograms` (the folder sanityPathPrograms was copied to), each spec gets its
 * own target and staging directory.
 */
export function csiSanityCommand(a: { program: string; nodeSocket: string; controllerSocket: string; work: string; params: string; pathPrograms?: string; extra?: string[] }): string {
    const GiB = 1024 ** 3;
    const paths = a.pathPrograms === undefined ? [] : [
        `--csi.createmountpathcmd=${a.pathPrograms}/mkpath`,
        `--csi.createstagingpathcmd=${a.pathPrograms}/mkpath`,
        `--csi.removemountpathcmd=${a.pathPrograms}/rmpath`,
        `--csi.removestagingpathcmd=${a.pathPrograms}/rmpath`,
        // csi-sanity's 10 s is short for a busy guest under TCG
        "--csi.createpathcmdtimeout=60s",
        "--csi.removepathcmdtimeout=60s",
    ];
    return [
        a.program,
        `--csi.endpoint=unix://${a.nodeSocket}`,
        `--csi.controllerendpoint=unix://${a.controllerSocket}`,
        `--csi.mountdir=${a.work}/mount`,
        `--csi.stagingdir=${a.work}/staging`,
        ...paths,
        `--csi.testvolumesize=${GiB}`,
        `--csi.testvolumeexpandsize=${2 * GiB}`,
        `--csi.testvolumeparameters=${a.params}`,
        "--ginkgo.no-color",
        ...(a.extra ?? []),
    ].join(" ");
}
