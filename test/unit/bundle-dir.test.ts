// Script bundle files are written only into a directory this user alone can write
// (components/node/shipped.ts): in a shared /tmp another local user must not be able to plant
// links the plan (often run as root) writes through, or that `pulumi up` copies to every node.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { scriptBundle } from "../../components/node/bundle";
import { bundleAssetFile, privateDir } from "../../components/node/shipped";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-bundle-dir-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const bundle = scriptBundle(["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"]);
const advice = "remove it, or set TMPDIR to a directory of your own";
/** Making a directory another user owns needs root: a non-root run outside CI skips that one case; CI runs as root and fails if it is not. */
const canChown = process.getuid?.() === 0 || process.env.CI === "true";

describe("bundle files in a private directory", () => {
    test("an absent directory is created 0700 and the bundle written 0644 with its text", () => {
        const dir = path.join(root, "fresh");
        const file = bundleAssetFile(bundle, dir);
        assert.equal(file, path.join(dir, `${bundle.sha256}.sh`));
        assert.equal(fs.statSync(dir).mode & 0o7777, 0o700);
        assert.equal(fs.statSync(file).mode & 0o777, 0o644);
        assert.equal(fs.readFileSync(file, "utf8"), bundle.text);
        assert.deepEqual(fs.readdirSync(dir), [`${bundle.sha256}.sh`], "no partial file left");
    });

    test("a directory made by the earlier program (0755, this user's) is used as it is", () => {
        const dir = path.join(root, "old");
        fs.mkdirSync(dir, { mode: 0o755 });
        fs.chmodSync(dir, 0o755);
        assert.equal(privateDir(dir), dir);
        assert.equal(fs.statSync(dir).mode & 0o7777, 0o755);
    });

    test("a symbolic link planted as the directory is refused; nothing is written where it points", () => {
        const target = path.join(root, "target");
        fs.mkdirSync(target, { mode: 0o700 });
        const dir = path.join(root, "planted");
        fs.symlinkSync(target, dir);
        assert.throws(() => bundleAssetFile(bundle, dir), { message: `${dir}: refused as the script bundles' directory: it is a symbolic link; ${advice}` });
        assert.deepEqual(fs.readdirSync(target), []);
    });

    test("a file planted as the directory is refused", () => {
        const dir = path.join(root, "a-file");
        fs.writeFileSync(dir, "x");
        assert.throws(() => privateDir(dir), { message: `${dir}: refused as the script bundles' directory: it is not a directory; ${advice}` });
    });

    test("a directory others may write in is refused", () => {
        const dir = path.join(root, "open");
        fs.mkdirSync(dir);
        fs.chmodSync(dir, 0o1777);
        assert.throws(() => privateDir(dir), { message: `${dir}: refused as the script bundles' directory: group or others may write in it (mode 1777); ${advice}` });
    });

    test("a directory of another user is refused", { skip: !canChown && "needs root to make a directory another user owns" }, () => {
        const dir = path.join(root, "theirs");
        fs.mkdirSync(dir, { mode: 0o700 });
        fs.chownSync(dir, 65534, 65534);
        assert.throws(() => privateDir(dir), { message: `${dir}: refused as the script bundles' directory: it is owned by uid 65534, not by this user (uid ${process.getuid!()}); ${advice}` });
    });

    test("a link in place of a bundle file is replaced by the file, never written through", () => {
        const dir = path.join(root, "linked-file");
        fs.mkdirSync(dir, { mode: 0o700 });
        const victim = path.join(root, "victim");
        fs.writeFileSync(victim, "keep me", { mode: 0o600 });
        const file = path.join(dir, `${bundle.sha256}.sh`);
        fs.symlinkSync(victim, file);
        assert.equal(bundleAssetFile(bundle, dir), file);
        assert.equal(fs.readFileSync(victim, "utf8"), "keep me");
        assert.ok(fs.lstatSync(file).isFile());
        assert.equal(fs.readFileSync(file, "utf8"), bundle.text);
    });
});
