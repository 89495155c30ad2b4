/** Helpers the drivers tier's guest tests share: a rendered flag's value, files copied into a guest. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
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
