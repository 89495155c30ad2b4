#!/usr/bin/env node
// The package.json `npm pack` ships (docs/library.md): the repository's, without `private` (the
// package is meant to be installed and may be published) and without the scripts that run files
// the tarball lacks (tools/, test/, tsconfig.json: every script of the repository today).
// `write` (the end of prepack) puts it in place of package.json, keeping the repository's in
// .cache/pack/package.json; `restore` (postpack) moves that back. Both replace the file in one
// rename, so a concurrent reader sees one or the other, never half of one. A pack that failed
// between the two leaves the copy (`git diff package.json` shows it): `node tools/pack-manifest.cjs
// restore` puts the repository's back, and `write` does so first.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const manifestFile = path.join(root, "package.json");
const kept = path.join(root, ".cache", "pack", "package.json");

/** Whether `file` (relative to the package root) is in the tarball: package.json, a README, or under `files`. */
function shipped(file, manifest) {
    const clean = path.posix.normalize(file.replace(/^\.\//, ""));
    return clean === "package.json" || /^readme(\.[^/]*)?$/i.test(clean) || (manifest.files ?? []).some((f) => clean === f || clean.startsWith(`${f.replace(/\/$/, "")}/`));
}

/** The files a script's command names: words with a "/" or a file extension (tools/plan.ts, test/run, tsconfig.json). */
function filesOfScript(command) {
    return command
        .split(/[\s;&|()<>]+/)
        .map((w) => w.replace(/^['"]|['"]$/g, ""))
        .filter((w) => !w.startsWith("-") && !/^[a-z]+:\/\//.test(w) && (w.includes("/") || /\.(c|m)?[jt]s$|\.sh$|\.json$/.test(w)));
}

/**
 * The manifest to ship: `manifest` without `private`, and without each script that names a file
 * the tarball lacks (`exists` says whether the file is in the package directory at all). No
 * `scripts` key when none is left.
 */
function packedManifest(manifest, exists = (f) => fs.existsSync(path.join(root, f))) {
    const { private: _private, scripts, ...rest } = manifest;
    const runnable = Object.entries(scripts ?? {}).filter(([, command]) => filesOfScript(command).every((f) => shipped(f, manifest) && exists(f)));
    return runnable.length > 0 ? { ...rest, scripts: Object.fromEntries(runnable) } : rest;
}

/** Writes `text` to `file` through a temporary file and one rename. */
function replace(file, text) {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
}

function restore() {
    if (fs.existsSync(kept)) {
        fs.renameSync(kept, manifestFile);
        return true;
    }
    return false;
}

function write() {
    if (restore()) {
        console.error("pack-manifest: put back the repository's package.json an earlier pack left aside");
    }
    const text = fs.readFileSync(manifestFile, "utf8");
    fs.mkdirSync(path.dirname(kept), { recursive: true });
    fs.writeFileSync(kept, text);
    replace(manifestFile, `${JSON.stringify(packedManifest(JSON.parse(text)), null, 2)}\n`);
}

module.exports = { packedManifest, filesOfScript, shipped };

if (require.main === module) {
    const command = process.argv[2];
    if (command === "write") {
        write();
    } else if (command === "restore") {
        restore();
    } else {
        console.error("usage: node tools/pack-manifest.cjs write|restore");
        process.exit(2);
    }
}
