/**
 * Node tier: the device classes the shared guards (lib.sh) refuse before any change, proven on
 * real devices of this kernel: active swap (a loop device after mkswap + swapon, by kernel name
 * and by a /dev/disk/by-id link), a zram device (hot-added for the test), and a loop device
 * without the ZCLOUD_ALLOW_LOOP=1 switch. LVM logical volumes and multipath devices need
 * device-mapper: the VM tier proves those. Run as root: node --import tsx --test test/node/device-classes.test.ts
 */
import { after, before, beforeEach, test } from "node:test";
import * as assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { execFileSync } from "node:child_process";
import { NodeHarness, RunResult, assertRefused, localLvmStack, startNodeHarness, zcloudLines } from "./harness";
import { PlannedNodeCommand, performCopies, plannedNodeCommands, removeCopiesCommand } from "../helpers/planned";

let h: NodeHarness;
let a: string;
let b: string;
const suffix = randomBytes(3).toString("hex");
const storage = `classtest-${suffix}`;
const vg = `zcloud-${storage}`;
const swapLinkName = `wwn-0xzcloudswap${suffix}`;
let zram: { index: string; dev: string } | undefined;
let planned: Map<string, PlannedNodeCommand>;

/** A zram device of its own (the kernel's zram-control), removed after the file. */
function addZram(): { index: string; dev: string } {
    const control = "/sys/class/zram-control/hot_add";
    if (!fs.existsSync(control)) {
        execFileSync("modprobe", ["zram", "num_devices=0"], { stdio: "ignore" });
    }
    const index = fs.readFileSync(control, "utf8").trim();
    return { index, dev: `/dev/zram${index}` };
}

before(async () => {
    h = await startNodeHarness({ loops: 2 });
    [a, b] = h.loops;
    zram = addZram();
    assert.ok(fs.statSync(zram.dev).isBlockDevice(), `${zram.dev} is not a block device`);
    const nodes: Record<string, string[]> = {
        "n-a": [a],
        "n-ab": [a, b],
        "n-swap-byid": [`/dev/disk/by-id/${swapLinkName}`, a],
        "n-zram": [zram.dev],
    };
    const yaml = localLvmStack(h.port, [{ name: storage, hosts: nodes, wipe: true }]);
    planned = new Map((await plannedNodeCommands(yaml)).map((cmd) => [cmd.node, cmd]));
    // What the engine does first: each command's script copy.
    await performCopies((command, stdin) => h.run(command, stdin), [...planned.values()].map((c) => c.copy));
});
after(async () => {
    if (h && planned) {
        await h.run(removeCopiesCommand([...planned.values()].map((c) => c.copy)));
    }
    h?.close();
    if (zram) {
        fs.writeFileSync("/sys/class/zram-control/hot_remove", zram.index);
    }
});
beforeEach(() => h.reset());

/** Runs a node's planned update, optionally after a shell prefix (which sets the session's environment). */
function apply(node: string, prefix = ""): Promise<RunResult> {
    return h.run(`${prefix}${planned.get(node)!.update}`);
}

const refused = assertRefused;

function vgExists(): boolean {
    return h.local("vgs", ["--noheadings", "-o", "vg_name"]).split(/\s+/).includes(vg);
}

function swapOn(dev: string): void {
    h.local("mkswap", ["-q", dev]);
    h.local("swapon", [dev]);
    assert.ok(fs.readFileSync("/proc/swaps", "utf8").includes(`${dev} `), `${dev} is not in /proc/swaps`);
}

test("active swap is refused by its kernel name, even with wipe, and stays swap", async () => {
    swapOn(b);
    refused(await apply("n-ab"), `zcloud: ${b}: refused: ${b} is active swap (listed in /proc/swaps)`);
    assert.ok(fs.readFileSync("/proc/swaps", "utf8").includes(`${b} `));
    assert.equal(h.local("wipefs", ["--noheadings", "--output", "TYPE", b]).trim(), "swap");
    assert.equal(h.local("wipefs", ["--noheadings", "--output", "TYPE", a]).trim(), "");
    assert.ok(!vgExists());
});

test("active swap is refused by a /dev/disk/by-id link to it", async () => {
    swapOn(b);
    const link = h.byIdLink(swapLinkName, b);
    refused(await apply("n-swap-byid"), `zcloud: ${link}: refused: ${b} is active swap (listed in /proc/swaps)`);
    assert.ok(!vgExists());
});

test("a swap signature that is not active swap is only a signature: wipe takes the device", async () => {
    h.local("mkswap", ["-q", b]);
    const r = await apply("n-ab");
    assert.equal(r.code, 0, r.stderr);
    assert.ok(zcloudLines(r.stdout).includes(`zcloud: ${b}: wiped signatures (swap)`), r.stdout);
    assert.ok(vgExists());
});

test("a zram device is refused", async () => {
    refused(await apply("n-zram"), `zcloud: ${zram!.dev}: refused: ${zram!.dev} is a zram device (compressed RAM, empty after a reboot)`);
});

test("a loop device is refused without ZCLOUD_ALLOW_LOOP=1, and with any other value", async () => {
    const line = `zcloud: ${a}: refused: ${a} is a loop device (a file, not a disk); loop devices are taken only with ZCLOUD_ALLOW_LOOP=1 in the node's environment`;
    refused(await apply("n-a", "unset ZCLOUD_ALLOW_LOOP; "), line);
    refused(await apply("n-a", "export ZCLOUD_ALLOW_LOOP=yes; "), line);
    assert.ok(!vgExists());
    const r = await apply("n-a");
    assert.equal(r.code, 0, r.stderr);
    assert.ok(vgExists());
});
