import { test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { chapStdin, iscsiInitiatorCommands, iscsiVgCommands, parseLunReport, parseVgReport, sanlockIoTimeout } from "../../components/iscsi/commands";
import { hostIdClashes, sanlockAllowedTopologies, sanlockHostId } from "../../components/iscsi/hostId";
import { stageBundle, stubWords } from "../helpers/bundles";

const nodeDir = path.join(__dirname, "..", "..", "components", "node");

/** The words a real POSIX shell hands to `sh`/`sudo` for a command string. */
function wordsOf(command: string): string[] {
    const probe =
        `sh() { for w in "$@"; do printf '%s\\0' "$w"; done; }; ` +
        `sudo() { printf 'sudo\\0'; for w in "$@"; do printf '%s\\0' "$w"; done; }; ` +
        command;
    return execFileSync("/bin/sh", ["-c", probe], { encoding: "utf8" }).split("\0").slice(0, -1);
}

const target = { storage: "san", portals: ["10.0.0.50:3260", "10.0.1.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234", lun: 1 };
const targetWords = ["--storage", "san", "--vg", "zcloud-san", "--target", target.iqn, "--lun", "1", "--portal", "10.0.0.50:3260", "--portal", "10.0.1.50:3260", "--wait", "90"];

test("login: lib + iscsi-lib + iscsi-initiator, target options, the CHAP user (no secret) as an argument", () => {
    const { apply, release } = iscsiInitiatorCommands({ ...target, chapUser: "k8s" }, false);
    const files = ["lib.sh", "iscsi-lib.sh", "iscsi-initiator.sh"];
    assert.deepEqual(wordsOf(apply), [...stubWords(files, "iscsi-initiator"), "apply", ...targetWords, "--chap-user", "k8s"]);
    assert.deepEqual(wordsOf(release), [...stubWords(files, "iscsi-initiator"), "release", ...targetWords]);
    const open = iscsiInitiatorCommands(target, true);
    assert.deepEqual(wordsOf(open.apply).slice(0, 2), ["sudo", "-n"]);
    assert.ok(!wordsOf(open.apply).includes("--chap-user"));
});

test("VG: lib + iscsi-lib + iscsi-vg, sanlock io timeout, --wipe only on apply when asked", () => {
    const files = ["lib.sh", "iscsi-lib.sh", "iscsi-vg.sh"];
    const { apply, release } = iscsiVgCommands({ ...target, wipe: true }, false);
    const timeout = ["--io-timeout", String(sanlockIoTimeout)];
    assert.deepEqual(wordsOf(apply), [...stubWords(files, "iscsi-vg"), "apply", ...targetWords, ...timeout, "--wipe"]);
    assert.deepEqual(wordsOf(release), [...stubWords(files, "iscsi-vg"), "release", ...targetWords, ...timeout]);
    assert.ok(!wordsOf(iscsiVgCommands({ ...target, wipe: false }, false).apply).includes("--wipe"));
});

test("no portals or a bad LUN is refused before any command exists", () => {
    assert.throws(() => iscsiVgCommands({ ...target, portals: [], wipe: false }, false), /iscsi san: no portals/);
    assert.throws(() => iscsiInitiatorCommands({ ...target, lun: -1 }, false), /lun must be a non-negative integer, got -1/);
});

test("CHAP stdin: the password, one line; a line break inside or an empty one is refused", () => {
    assert.equal(chapStdin("p a$s'w\"d"), "p a$s'w\"d\n");
    assert.throws(() => chapStdin("two\nlines"), /CHAP password must be one non-empty line/);
    assert.throws(() => chapStdin(""), /CHAP password must be one non-empty line/);
});

test("the script reads the CHAP password from stdin into a variable, never from argv or env", () => {
    const script = fs.readFileSync(path.join(nodeDir, "iscsi-initiator.sh"), "utf8");
    assert.match(script, /IFS= read -r zi_chap_password/);
    // The password goes only into the record through the printf builtin, never into a command's words.
    const uses = script.split("\n").filter((l) => l.includes("zi_chap_password") && !/^\s*#/.test(l));
    assert.deepEqual(
        uses.map((l) => l.trim()),
        [
            "printf 'node.session.auth.password = %s\\n' \"$zi_chap_password\"",
            "zi_chap_password=''",
            "IFS= read -r zi_chap_password || true",
            'if [ -z "$zi_chap_password" ]; then',
        ],
    );
});

test("a login refuses a CHAP user with an empty stdin before touching anything", () => {
    const { apply } = iscsiInitiatorCommands({ ...target, chapUser: "k8s" }, false);
    // A node's home with the bundle staged, as its copy leaves it; the stub installs it in a temp store.
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-iscsi-home-"));
    stageBundle(home, ["lib.sh", "iscsi-lib.sh", "iscsi-initiator.sh"]);
    const env = { ...process.env, ZCLOUD_SCRIPT_STORE: path.join(home, "store") };
    const r = spawnSync("/bin/sh", ["-c", apply], { input: "", encoding: "utf8", cwd: home, env });
    fs.rmSync(home, { recursive: true, force: true });
    assert.equal(r.status, 1);
    assert.equal(r.stderr, "zcloud: iscsi san: refused: --chap-user given but stdin holds no password line\n");
});

test("reports of the node commands parse; other lines are ignored", () => {
    assert.deepEqual(parseLunReport("zcloud: x: login\nzcloud-iscsi-lun: 360000000000000000e00000000010001 /dev/disk/by-id/dm-uuid-mpath-3600\n"), {
        wwid: "360000000000000000e00000000010001",
        device: "/dev/disk/by-id/dm-uuid-mpath-3600",
    });
    assert.deepEqual(parseVgReport("zcloud-iscsi-vg: zcloud-san Abc-123 3600\n"), { vg: "zcloud-san", uuid: "Abc-123", wwid: "3600" });
    assert.equal(parseVgReport("nothing"), undefined);
});

test("sanlock host id as csi-sanlock-lvm derives it: low 11 bits of the IPv4 address, mod 1999, plus one", () => {
    assert.equal(sanlockHostId("10.0.0.11"), 12);
    assert.equal(sanlockHostId("10.0.7.255"), (2047 % 1999) + 1);
    assert.equal(sanlockHostId("node1.example"), undefined);
    assert.deepEqual(hostIdClashes({ a: "10.0.0.11", b: "10.0.8.11", c: "10.0.0.12" }), ["a and b get the same sanlock host id 12 from their addresses"]);
    assert.deepEqual(hostIdClashes({ a: "10.0.0.11", b: "10.0.0.12" }), []);
});

test("sanlockAllowedTopologies: the driver's key, one value per initiator's host id; none when an address has no id", () => {
    assert.deepEqual(sanlockAllowedTopologies(["10.0.0.12", "10.0.0.11", "10.8.0.11"]), [{ matchLabelExpressions: [{ key: "csi-sanlock-lvm/topology", values: ["12", "13"] }] }]);
    assert.equal(sanlockAllowedTopologies(["10.0.0.11", "node2.example"]), undefined);
    assert.equal(sanlockAllowedTopologies([]), undefined);
});

