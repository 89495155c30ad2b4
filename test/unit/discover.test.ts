import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as yaml from "js-yaml";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { StackModel } from "../../components/config/model";
import { discoverNode, proposalSection, proposalYaml } from "../../tools/discover/devices";
import { LsblkDevice, parseNodeReport, parseSize, verdictOf } from "../../tools/discover/inventory";
import { inventoryCommand } from "../../tools/discover/collect";
import { keySourceProblem, remoteFailure, sshConfigFiles, unpinnedRefusal } from "../../tools/discover/ssh";

const disk = (over: Partial<LsblkDevice>): LsblkDevice => ({ name: "sdb", path: "/dev/sdb", type: "disk", size: 100 * 1024 ** 3, model: "ST1000 ", serial: "ZX1", rota: true, wwn: null, mountpoints: [null], fstype: null, ...over });

const lsblk = JSON.stringify({
    blockdevices: [
        disk({ name: "sda", path: "/dev/sda", children: [disk({ name: "sda1", path: "/dev/sda1", type: "part", mountpoints: ["/boot"] }), disk({ name: "sda2", path: "/dev/sda2", type: "part", children: [disk({ name: "vg-root", path: "/dev/mapper/vg-root", type: "lvm", mountpoints: ["/"] })] })] }),
        disk({}),
        disk({ name: "sdc", path: "/dev/sdc", size: 1024 ** 2 }),
        disk({ name: "sdd", path: "/dev/sdd" }),
    ],
});

const output = [
    `zcloud-lsblk: ${lsblk}`,
    "zcloud-guard: /dev/sda refused /dev/sda1 is mounted at /boot",
    "zcloud-guard: /dev/sdb ok",
    "zcloud-stable: /dev/sdb /dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
    "zcloud-guard: /dev/sdc ok",
    "zcloud-guard: /dev/sdd refused is a PV of another VG (data)",
    "zcloud-byid: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4 /dev/sdb",
    "zcloud-byid: /dev/disk/by-id/ata-ST1000_ZX1 /dev/sdb",
    "zcloud-declared: /dev/disk/by-id/ata-ST1000_ZX1 /dev/sdb",
    "zcloud-declared: /dev/sdz missing",
    "zcloud-pv: /dev/sdd|data|107374182400|1073741824|3",
    "zcloud-lv: data|pool|twi-a-tz--|12.50",
    "zcloud-lv: data|lv1|-wi-a-----|",
    "some other line the shell printed",
].join("\n");

test("parses every fact line of discover.sh", () => {
    const r = parseNodeReport(output);
    assert.deepEqual(r.devices.map((d) => d.path), ["/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sdd"]);
    assert.deepEqual(r.guards.get("/dev/sdd"), { ok: false, reason: "is a PV of another VG (data)" });
    assert.deepEqual(r.byId.get("/dev/sdb"), ["/dev/disk/by-id/ata-ST1000_ZX1", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"]);
    assert.deepEqual([...r.declared], [["/dev/disk/by-id/ata-ST1000_ZX1", "/dev/sdb"], ["/dev/sdz", null]]);
    assert.deepEqual(r.pvs, [{ pv: "/dev/sdd", vg: "data", vgSize: 107374182400, vgFree: 1073741824, lvCount: 3 }]);
    assert.deepEqual(r.lvs, [{ vg: "data", lv: "pool", attr: "twi-a-tz--", dataPercent: 12.5 }, { vg: "data", lv: "lv1", attr: "-wi-a-----" }]);
});

test("an answer without the device list is an error, not an empty node", () => {
    assert.throws(() => parseNodeReport("bash: lsblk: command not found\n"), /zcloud-lsblk line missing/);
});

test("verdicts: no medium, system disk, guard refusal, too small, clean", () => {
    const g = 1024 ** 3;
    assert.deepEqual(verdictOf(disk({ size: 0 }), undefined, g), { verdict: "not clean", reason: "no medium (size 0)" });
    const sda = parseNodeReport(output).devices[0];
    assert.deepEqual(verdictOf(sda, { ok: false, reason: "x" }, g), { verdict: "not clean", reason: "system disk (holds /boot, /)" });
    assert.deepEqual(verdictOf(disk({}), { ok: false, reason: "carries signatures (ext4); set wipe: true to allow wiping them" }, g), { verdict: "not clean", reason: "carries signatures (ext4); set wipe: true to allow wiping them" });
    assert.deepEqual(verdictOf(disk({ size: 512 * 1024 ** 2 }), { ok: true }, g), { verdict: "not clean", reason: "too small (512 MiB < 1 GiB)" });
    assert.deepEqual(verdictOf(disk({}), { ok: true }, g), { verdict: "clean", reason: null });
    assert.deepEqual(verdictOf(disk({}), undefined, g), { verdict: "not clean", reason: "the node did not report its guard verdict" });
});

test("sizes for --min-size", () => {
    assert.equal(parseSize("1GiB"), 1024 ** 3);
    assert.equal(parseSize("16M"), 16 * 1024 ** 2);
    assert.equal(parseSize("512"), 512);
    assert.throws(() => parseSize("lots"), /not a size: lots/);
});

test("node result marks declared devices and lists declared paths missing on the node; proposal is YAML of clean devices", () => {
    const found = discoverNode(parseNodeReport(output), [
        { path: "/dev/disk/by-id/ata-ST1000_ZX1", by: "lvm fast", type: "lvm", storage: "fast" },
        { path: "/dev/sdz", by: "lvm fast", type: "lvm", storage: "fast" },
    ], 1024 ** 3);
    const sdb = found.devices[1];
    assert.deepEqual([sdb.verdict, sdb.stableName, sdb.declaredBy, sdb.model, sdb.rotational], ["clean", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", ["lvm fast"], "ST1000", true]);
    assert.deepEqual(found.missingDeclared, ["/dev/sdz (lvm fast)"]);
    const text = proposalYaml([["node1", found], ["node2", { devices: [], missingDeclared: [] }]]);
    assert.equal(text, "hosts:\n  node1:\n    - /dev/disk/by-id/wwn-0x5000c500a1b2c3d4  # already declared: lvm fast\n");
    assert.deepEqual(yaml.load(text), { hosts: { node1: ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"] } });
    assert.equal(proposalYaml([]), "hosts: {}\n");
    // As printed: under its heading, or one line saying why there is none (never an empty hosts: {}).
    assert.equal(
        proposalSection([["node1", found]]),
        "Proposal (clean devices by stable name; paste into an lvm or cephfs entry):\n\n  hosts:\n    node1:\n      - /dev/disk/by-id/wwn-0x5000c500a1b2c3d4  # already declared: lvm fast",
    );
    assert.equal(proposalSection([]), "No proposal: no node answered.");
    assert.equal(proposalSection([["node2", { devices: [], missingDeclared: [] }]]), "No proposal: no clean device on the nodes that answered.");
});

const model = (over: Partial<StackModel> = {}): StackModel => ({
    namespace: "zcloud-storage",
    ssh: { user: "root", port: 22, privateKey: "offline", agent: false, hostKeys: { node1: "ssh-ed25519 AAAAkey1 comment" } },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12", port: 2222, user: "ops" } },
    lvm: [{ name: "fast", default: false, wipe: false, hosts: { node2: ["/dev/sdb", "/dev/disk/by-id/x"] } }],
    cephfs: [],
    iscsi: [],
    nfs: [],
    ...over,
});

test("ssh_config: pinned hosts checked strictly against their key only, unpinned accept-new, key from --identity only", () => {
    const files = sshConfigFiles(model(), { identity: "id key", acceptUnpinned: true, connectTimeout: 10, commandTimeout: 60 }, "/tmp/kh");
    assert.equal(files.knownHosts, "zcloud.node.node1 ssh-ed25519 AAAAkey1\n");
    const config = files.config.split("\n");
    const block = (alias: string) => config.slice(config.indexOf(`Host ${alias}`), config.indexOf(`Host ${alias}`) + 7);
    assert.deepEqual(block("zcloud.node.node1"), ["Host zcloud.node.node1", "  HostName 10.0.0.11", "  Port 22", "  User root", "  HostKeyAlias zcloud.node.node1", "  StrictHostKeyChecking yes", "Host zcloud.node.node2"]);
    assert.ok(config.includes("  StrictHostKeyChecking accept-new"));
    for (const line of ["  BatchMode yes", '  UserKnownHostsFile "/tmp/kh"', "  GlobalKnownHostsFile /dev/null", "  IdentitiesOnly yes", "  ForwardAgent no"]) {
        assert.ok(config.includes(line), line);
    }
    assert.ok(config.some((l) => /^ {2}IdentityFile ".*\/id key"$/.test(l)));
});

test("ssh_config: nodes go through the bastion, whose key is pinned too", () => {
    const m = model();
    m.ssh!.bastion = { host: "jump.example", port: 22, user: "ops", hostKey: "ssh-ed25519 AAAAjump" };
    const files = sshConfigFiles(m, { acceptUnpinned: false, connectTimeout: 10, commandTimeout: 60 }, "/tmp/kh");
    assert.ok(files.config.includes("Host zcloud.bastion\n  HostName jump.example\n  Port 22\n  User ops\n  HostKeyAlias zcloud.bastion\n  StrictHostKeyChecking yes\n"));
    assert.ok(files.config.includes("  ProxyJump zcloud.bastion\n"));
    assert.ok(files.knownHosts.includes("zcloud.bastion ssh-ed25519 AAAAjump\n"));
    assert.ok(!files.config.includes("IdentityFile"), "agent keys when no --identity");
});

// The stack config refuses zone ids; the generated file must still never let a `%` of a value
// (a host, the key or known_hosts path under a TMPDIR holding `%`) become an ssh_config token.
test("ssh_config: a % in a host name or a path is literal (%%), as OpenSSH's own parser reads it back", () => {
    const m = model({ nodes: { node1: { address: "fe80::1%eth0" }, node2: { address: "10.0.0.12" } } });
    m.ssh!.bastion = { host: "fe80::2%br-ops.7", port: 22, user: "ops", hostKey: "ssh-ed25519 AAAAjump" };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ssh-%d-"));
    try {
        const knownHosts = path.join(dir, "known_hosts");
        const identity = path.join(dir, "id %h");
        const files = sshConfigFiles(m, { identity, acceptUnpinned: false, connectTimeout: 10, commandTimeout: 60 }, knownHosts);
        assert.ok(files.config.includes("Host zcloud.node.node1\n  HostName fe80::1%%eth0\n"), files.config);
        assert.ok(files.config.includes("Host zcloud.bastion\n  HostName fe80::2%%br-ops.7\n"), files.config);
        assert.ok(files.config.includes(`  UserKnownHostsFile "${knownHosts.replace(/%/g, "%%")}"\n`), files.config);
        // IdentityFile is expanded when the key is loaded (after what -G prints): checked as written.
        assert.ok(files.config.includes(`  IdentityFile "${identity.replace(/%/g, "%%")}"\n`), files.config);
        const config = path.join(dir, "config");
        fs.writeFileSync(config, files.config);
        // `ssh -G` prints the configuration it would use, without connecting.
        const effective = (alias: string) => execFileSync("ssh", ["-F", config, "-G", alias], { encoding: "utf8" }).split("\n");
        const node1 = effective("zcloud.node.node1");
        for (const line of ["hostname fe80::1%eth0", `userknownhostsfile ${knownHosts}`, "proxyjump zcloud.bastion"]) {
            assert.ok(node1.includes(line), `${line}\n${node1.join("\n")}`);
        }
        assert.ok(effective("zcloud.bastion").includes("hostname fe80::2%br-ops.7"));
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("unpinned hosts and a missing key source are refused before connecting", () => {
    assert.equal(unpinnedRefusal(model(), "node1", { acceptUnpinned: false }), undefined);
    assert.equal(unpinnedRefusal(model(), "node2", { acceptUnpinned: false }), "host key not pinned (ssh.hostKeys.node2); pin it, or pass --accept-unpinned to trust the key the host shows");
    assert.equal(unpinnedRefusal(model(), "node2", { acceptUnpinned: true }), undefined);
    assert.match(keySourceProblem({}, {}) ?? "", /^no SSH key: pass --identity FILE or load the key into ssh-agent/);
    assert.equal(keySourceProblem({}, { SSH_AUTH_SOCK: "/run/agent" }), undefined);
    assert.equal(keySourceProblem({ identity: "/nonexistent/key" }, {}), "--identity /nonexistent/key: no such file");
});

test("inventory command: lib.sh and discover.sh inline, declared paths as arguments, sudo -n for non-root", () => {
    const cmd = inventoryCommand(model(), "node2");
    assert.match(cmd, /^sudo -n sh -c '/);
    assert.ok(cmd.includes("zc_guard_device()"), "ships the guards");
    assert.ok(cmd.endsWith(" discover.sh /dev/sdb /dev/disk/by-id/x"), cmd.slice(-80));
    assert.match(inventoryCommand(model(), "node1"), /^sh -c '.* discover\.sh$/s);
    assert.ok(inventoryCommand(model(), "node2", false).endsWith(" discover.sh --no-guards /dev/sdb /dev/disk/by-id/x"), "status asks without verdicts");
});

test("remote failures read as one line", () => {
    assert.equal(remoteFailure({ code: 255, stdout: "", stderr: "ssh: connect to host 10.0.0.12 port 22: Connection refused\n" }), "unreachable: ssh: connect to host 10.0.0.12 port 22: Connection refused");
    assert.equal(remoteFailure({ code: 1, stdout: "", stderr: "sudo: a password is required\n" }), "command failed (exit 1): sudo: a password is required");
});

test("CLI: usage and config errors exit 3 before anything is contacted", async () => {
    const { runTool } = await import("../helpers/day2");
    const unknownNode = await runTool("discover", ["dev", "--node", "nope", "--identity", "package.json"]);
    assert.deepEqual([unknownNode.code, unknownNode.stderr.trim()], [3, "--node nope: not in zcloud-storage:nodes (dev1, dev2)"]);
    const noKey = await runTool("discover", ["dev"], { ...process.env, SSH_AUTH_SOCK: "" });
    assert.equal(noKey.code, 3);
    assert.match(noKey.stderr, /^no SSH key: pass --identity FILE or load the key into ssh-agent/);
    const badFlag = await runTool("status", ["dev", "--watch", "0"]);
    assert.equal(badFlag.code, 3);
    assert.match(badFlag.stderr, /^--watch needs a positive whole number, got 0\n\nusage: npm run status/);
});
