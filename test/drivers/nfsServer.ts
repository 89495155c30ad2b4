/**
 * Debian's nfs-kernel-server in a guest of the VM tier (this machine's kernel has no nfsd): the
 * packages the VM image lacks are downloaded here with apt-get (the image's Debian suite) and
 * installed in the guest, which then exports one directory to everyone, root not squashed.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Guest } from "../vm/harness";
import { copyIntoGuest } from "./guestFiles";

/** The packages the VM image lacks for an NFS server (the same Debian suite as the image). */
export const nfsServerPackages = ["nfs-kernel-server", "netbase"];

/** Downloads the server's packages into `<dir>/debs`; fails with apt's answer when it cannot. */
export function downloadNfsServer(dir: string): void {
    const debs = path.join(dir, "debs");
    fs.mkdirSync(debs, { recursive: true });
    try {
        execFileSync("apt-get", ["download", ...nfsServerPackages], { cwd: debs, stdio: "pipe" });
    } catch (e: any) {
        throw new Error(`apt-get download ${nfsServerPackages.join(" ")} failed (the guest image lacks them; this machine's apt must reach Debian bookworm): ${e.stderr ?? e}`);
    }
}

/** Installs the downloaded packages in the guest and exports `exportPath` (rw, sync, no_root_squash). */
export async function startNfsServer(g: Guest, dir: string, exportPath: string): Promise<void> {
    await copyIntoGuest(g, dir, fs.readdirSync(path.join(dir, "debs")).map((f) => path.join("debs", f)), dir);
    await g.check(`DEBIAN_FRONTEND=noninteractive dpkg -i ${dir}/debs/*.deb`, { timeoutMs: 600_000 });
    await g.check(`mkdir -p ${exportPath} && echo '${exportPath} *(rw,sync,no_subtree_check,no_root_squash)' >/etc/exports && systemctl restart nfs-server`, { timeoutMs: 300_000 });
    assert.match(await g.check("exportfs -v"), new RegExp(`^${exportPath}\\s`, "m"));
}
