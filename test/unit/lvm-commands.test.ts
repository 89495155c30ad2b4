import { test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { lvmApplyCommand, lvmReleaseCommand } from "../../components/lvm/commands";
import { stubWords } from "../helpers/bundles";

/** The stub, then the bundle of lib.sh + partition-guard.sh + lvm-reconcile.sh it runs, by name and sha256. */
const stub = stubWords(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"], "lvm-reconcile");

/**
 * Runs a command string in a real POSIX shell with `sh` and `sudo` replaced by functions that
 * print the words they receive: what the remote shell would hand to them, quoting included.
 */
function wordsOf(command: string): string[] {
    const probe =
        `sh() { for w in "$@"; do printf '%s\\0' "$w"; done; }; ` +
        `sudo() { printf 'sudo\\0'; for w in "$@"; do printf '%s\\0' "$w"; done; }; ` +
        command;
    const out = execFileSync("/bin/sh", ["-c", probe], { encoding: "utf8" });
    return out.split("\0").slice(0, -1);
}

test("apply: the shell receives the stub, the bundle of lib.sh + partition-guard.sh + lvm-reconcile.sh and the arguments in order", () => {
    const cmd = lvmApplyCommand({ vg: "zcloud-fast", node: "node1", devices: ["/dev/sdb", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"], wipe: false }, false);
    assert.ok(cmd.startsWith("sh -c '"), cmd.slice(0, 20));
    assert.deepEqual(wordsOf(cmd), [
        ...stub,
        "apply",
        "--vg",
        "zcloud-fast",
        "--node",
        "node1",
        "/dev/sdb",
        "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
    ]);
});

test("apply with wipe, thin pool and sudo", () => {
    const cmd = lvmApplyCommand({ vg: "zcloud-a", node: "node1", devices: ["/dev/sdc"], wipe: true, thin: { pool: "thin", percent: 90 } }, true);
    assert.ok(cmd.startsWith("sudo -n sh -c '"));
    assert.deepEqual(wordsOf(cmd).slice(0, 3 + stub.length), ["sudo", "-n", "sh", ...stub]);
    assert.deepEqual(wordsOf(cmd).slice(3 + stub.length), [
        "apply",
        "--vg",
        "zcloud-a",
        "--node",
        "node1",
        "--wipe-on-create",
        "--thin-pool",
        "thin",
        "--thin-percent",
        "90",
        "/dev/sdc",
    ]);
});

test("a wipe map licenses only the devices it names for this node, each by its own --wipe-device", () => {
    const wipe = { node1: ["/dev/sdc"], node2: ["/dev/sdb"] };
    const args = (node: string) => wordsOf(lvmApplyCommand({ vg: "zcloud-a", node, devices: ["/dev/sdb", "/dev/sdc"], wipe }, false)).slice(stub.length);
    assert.deepEqual(args("node1"), ["apply", "--vg", "zcloud-a", "--node", "node1", "--wipe-device", "/dev/sdc", "/dev/sdb", "/dev/sdc"]);
    assert.deepEqual(args("node2"), ["apply", "--vg", "zcloud-a", "--node", "node2", "--wipe-device", "/dev/sdb", "/dev/sdb", "/dev/sdc"]);
    assert.deepEqual(args("node3"), ["apply", "--vg", "zcloud-a", "--node", "node3", "/dev/sdb", "/dev/sdc"]);
});

test("apply quotes device paths with shell metacharacters as single words", () => {
    const odd = "/dev/disk/by-path/x'$(touch /nonexistent);y";
    const cmd = lvmApplyCommand({ vg: "zcloud-a", node: "node1", devices: [odd], wipe: false }, false);
    assert.deepEqual(wordsOf(cmd).slice(-1), [odd]);
});

test("apply is deterministic: the same spec gives the same string (no spurious updates)", () => {
    const spec = { vg: "zcloud-a", node: "node1", devices: ["/dev/sdb", "/dev/sdc"], wipe: false };
    assert.equal(lvmApplyCommand(spec, false), lvmApplyCommand({ ...spec, devices: [...spec.devices] }, false));
    assert.notEqual(lvmApplyCommand(spec, false), lvmApplyCommand({ ...spec, devices: ["/dev/sdc", "/dev/sdb"] }, false));
});

test("apply refuses specs the script would refuse", () => {
    assert.throws(() => lvmApplyCommand({ vg: "zcloud-a", node: "node1", devices: [], wipe: false }, false), /zcloud-a: no devices/);
    for (const percent of [0, 101, 12.5]) {
        assert.throws(
            () => lvmApplyCommand({ vg: "zcloud-a", node: "node1", devices: ["/dev/sdb"], wipe: false, thin: { pool: "t", percent } }, false),
            /thin percent must be an integer 1\.\.100/,
        );
    }
});

test("release: only the VG, the same script", () => {
    const cmd = lvmReleaseCommand({ vg: "zcloud-fast" }, false);
    assert.deepEqual(wordsOf(cmd), [...stub, "release", "--vg", "zcloud-fast"]);
    assert.deepEqual(wordsOf(lvmReleaseCommand({ vg: "zcloud-fast" }, true)).slice(0, 4), ["sudo", "-n", "sh", "-c"]);
});
