import { after, describe, test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { renderNodeCommand, runBundleStub } from "../../components/node/shipped";
import { bundleOf } from "../helpers/bundles";

/** A bundle that shows what it got: its name ($0), its arguments and its stdin. */
const text = `printf '%s|' "$0" "$@"; printf 'stdin=%s\\n' "$(cat)"\n`;
const sum = createHash("sha256").update(text).digest("hex");
const staged = `.zcloud-storage/scripts/${sum}.sh`;

/** A node's home (the stub's working directory, where copies are staged) and a root-only store in it. */
const homes: string[] = [];
after(() => homes.forEach((h) => fs.rmSync(h, { recursive: true, force: true })));

function node(): { home: string; store: string; run(args?: string[]): ReturnType<typeof spawnSync> } {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-stub-"));
    homes.push(home);
    const store = path.join(home, "var", "scripts");
    return {
        home,
        store,
        run: (args = ["apply", "--vg", "a b"]) =>
            spawnSync("sh", ["-c", runBundleStub(), "lvm-reconcile", staged, sum, ...args], {
                cwd: home,
                input: "secret line\n",
                encoding: "utf8",
                env: { ...process.env, ZCLOUD_SCRIPT_STORE: store },
            }),
    };
}

function stage(home: string, content = text): void {
    fs.mkdirSync(path.join(home, ".zcloud-storage", "scripts"), { recursive: true });
    fs.writeFileSync(path.join(home, staged), content);
}

const refusal = (n: { home: string; store: string }) =>
    `zcloud: script bundle ${sum}: refused: missing or altered on this node (neither ${n.store}/${sum}.sh nor ${staged} holds it)\n`;

test("a staged bundle is installed into a store only root can read, then runs as NAME ARGS with the command's stdin", () => {
    const n = node();
    stage(n.home);
    const r = n.run();
    assert.equal(r.stderr, "");
    assert.equal(r.status, 0);
    assert.equal(r.stdout, "lvm-reconcile|apply|--vg|a b|stdin=secret line\n");
    assert.equal(fs.readFileSync(path.join(n.store, `${sum}.sh`), "utf8"), text);
    assert.equal(fs.statSync(n.store).mode & 0o777, 0o700);
    assert.equal(fs.statSync(path.join(n.store, `${sum}.sh`)).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(n.store), [`${sum}.sh`], "no partial copy left behind");
});

test("an installed bundle runs when the staged copy is gone (a delete long after the copy)", () => {
    const n = node();
    stage(n.home);
    assert.equal(n.run().status, 0);
    fs.rmSync(path.join(n.home, ".zcloud-storage"), { recursive: true });
    const r = n.run(["release", "--vg", "x"]);
    assert.equal(r.status, 0, String(r.stderr));
    assert.equal(r.stdout, "lvm-reconcile|release|--vg|x|stdin=secret line\n");
});

test("a bundle found nowhere is a refusal: exit 1, one line, nothing runs (a release is never skipped)", () => {
    const n = node();
    const r = n.run(["release", "--vg", "x"]);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, refusal(n));
    assert.deepEqual(fs.readdirSync(n.store), [], "nothing installed, no partial copy left");
});

test("an altered staged copy is refused, and never installed", () => {
    const n = node();
    stage(n.home, `${text}echo injected\n`);
    const r = n.run();
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, refusal(n));
    assert.equal(fs.existsSync(path.join(n.store, `${sum}.sh`)), false);
});

test("an altered installed copy is replaced from the staged one, or refused without it", () => {
    const n = node();
    stage(n.home);
    assert.equal(n.run().status, 0);
    fs.writeFileSync(path.join(n.store, `${sum}.sh`), "echo tampered\n");
    const again = n.run();
    assert.equal(again.status, 0, String(again.stderr));
    assert.equal(again.stdout, "lvm-reconcile|apply|--vg|a b|stdin=secret line\n");
    fs.writeFileSync(path.join(n.store, `${sum}.sh`), "echo tampered\n");
    fs.rmSync(path.join(n.home, staged));
    const r = n.run();
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, refusal(n));
});

test("a rendered command names the bundle of its files by sha256 and passes the arguments quoted", () => {
    const files = ["lib.sh", "lvm-reconcile.sh"];
    const { sha256 } = bundleOf(files);
    const cmd = renderNodeCommand({ files, name: "lvm-reconcile", args: ["apply", "it's"], sudo: true });
    assert.ok(cmd.startsWith("sudo -n sh -c 'set -eu\n"), cmd.slice(0, 40));
    assert.ok(cmd.endsWith(` lvm-reconcile .zcloud-storage/scripts/${sha256}.sh ${sha256} apply 'it'"'"'s'`), cmd.slice(-160));
    assert.ok(!cmd.includes("zc_log"), "no script text in the command");
    // The stub travels in every command's create and delete (state keeps each twice): 1.1 KB since
    // it checks the staged path's type and owner (0.8 KB before).
    assert.ok(cmd.length < 1152, `stub command is ${cmd.length} bytes`);
});

/** What a refusal of the staged path says (`parts`: each part's type and owner, as stat names them). */
const untrusted = (parts: string) => `zcloud: script bundle ${sum}: refused: ${staged}: not the SSH user's (uid ${process.getuid!()}) directories and file: ${parts}\n`;
const me = () => process.getuid!();

describe("the staged path: only the SSH user's own directories and a regular file, never through a link (a home others can write)", () => {
    test("a link to /dev/zero in place of the staged copy: refused at once, nothing copied or run", () => {
        const n = node();
        fs.mkdirSync(path.join(n.home, ".zcloud-storage", "scripts"), { recursive: true });
        fs.symlinkSync("/dev/zero", path.join(n.home, staged));
        const r = n.run();
        assert.equal(r.status, 1);
        assert.equal(r.stdout, "");
        assert.equal(r.stderr, untrusted(`directory ${me()}/directory ${me()}/symbolic link ${me()}/`));
        assert.equal(fs.existsSync(n.store), false, "no store made, nothing copied");
    });

    test("a FIFO in place of the staged copy: refused at once, never opened", () => {
        const n = node();
        fs.mkdirSync(path.join(n.home, ".zcloud-storage", "scripts"), { recursive: true });
        execFileSync("mkfifo", [path.join(n.home, staged)]);
        const started = Date.now();
        const r = n.run();
        assert.ok(Date.now() - started < 5000, "the stub did not block on the FIFO");
        assert.equal(r.status, 1);
        assert.equal(r.stderr, untrusted(`directory ${me()}/directory ${me()}/fifo ${me()}/`));
    });

    test("a linked directory on the way (scripts -> elsewhere holding the right bundle): refused", () => {
        const n = node();
        const elsewhere = path.join(n.home, "elsewhere");
        fs.mkdirSync(elsewhere);
        fs.writeFileSync(path.join(elsewhere, `${sum}.sh`), text);
        fs.mkdirSync(path.join(n.home, ".zcloud-storage"));
        fs.symlinkSync(elsewhere, path.join(n.home, ".zcloud-storage", "scripts"));
        const r = n.run();
        assert.equal(r.status, 1);
        assert.equal(r.stderr, untrusted(`directory ${me()}/symbolic link ${me()}/regular file ${me()}/`));
    });

    test("a staged copy owned by another user: refused, though its text is the bundle's", { skip: !(process.getuid?.() === 0 || process.env.CI === "true") && "needs root to give a file to another user" }, () => {
        const n = node();
        stage(n.home);
        fs.chownSync(path.join(n.home, staged), 65534, 65534);
        const r = n.run();
        assert.equal(r.status, 1);
        assert.equal(r.stderr, untrusted(`directory ${me()}/directory ${me()}/regular file 65534/`));
    });

    test("under sudo the SSH user is sudo's caller (SUDO_UID): the caller's own copy runs, root's is refused", () => {
        const n = node();
        stage(n.home);
        const asCaller = spawnSync("sh", ["-c", runBundleStub(), "lvm-reconcile", staged, sum, "apply"], { cwd: n.home, input: "", encoding: "utf8", env: { ...process.env, ZCLOUD_SCRIPT_STORE: n.store, SUDO_UID: "4242" } });
        assert.equal(asCaller.status, 1);
        assert.equal(asCaller.stderr, `zcloud: script bundle ${sum}: refused: ${staged}: not the SSH user's (uid 4242) directories and file: directory ${me()}/directory ${me()}/regular file ${me()}/\n`);
        const asSelf = spawnSync("sh", ["-c", runBundleStub(), "lvm-reconcile", staged, sum, "apply"], { cwd: n.home, input: "", encoding: "utf8", env: { ...process.env, ZCLOUD_SCRIPT_STORE: n.store, SUDO_UID: String(me()) } });
        assert.equal(asSelf.status, 0, asSelf.stderr);
    });

    test("a copy longer than any bundle is cut at 1 MiB and then fails the hash check", () => {
        const n = node();
        stage(n.home, text + "#".repeat(2 << 20));
        const r = n.run();
        assert.equal(r.status, 1);
        assert.equal(r.stderr, refusal(n));
        assert.deepEqual(fs.readdirSync(n.store), [], "no partial copy left");
    });
});
