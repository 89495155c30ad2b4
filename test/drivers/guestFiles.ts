/** Helpers the drivers tier's guest tests share: a rendered flag's value, files copied into a guest, polling a guest, a guest's socket here, a token kubeconfig. */
import assert from "node:assert/strict";
import { ChildProcess, execFileSync } from "node:child_process";
import * as fs from "node:fs";
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
