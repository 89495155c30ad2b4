// --version of the tools: the package version, every image of components/images.ts once (with
// the storage types that use it) and every @pulumi package with its resource plugin.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { images } from "../../components/images";
import { storageOfImage, versionLines } from "../../tools/version";

const root = path.resolve(__dirname, "..", "..");
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

test("--version names the package, its node engines, every pinned image once and every @pulumi package", () => {
    const lines = versionLines();
    assert.equal(lines[0], `zcloud-storage ${pkg.version}`);
    assert.equal(lines[1], `node ${pkg.engines.node}`);
    const imageStart = lines.findIndex((l) => l.startsWith("images "));
    const pulumiStart = lines.findIndex((l) => l.startsWith("pulumi packages "));
    assert.ok(imageStart > 0 && pulumiStart > imageStart, lines.join("\n"));
    const imageLines = lines.slice(imageStart + 1, pulumiStart);
    const unique = [...new Set(Object.values(images))];
    assert.deepEqual(
        imageLines.map((l) => l.trim().split(/\s+/)[0]),
        unique,
    );
    for (const image of unique) {
        const types = [...new Set(Object.entries(images).filter(([, i]) => i === image).map(([k]) => storageOfImage(k)))];
        assert.ok(!types.includes(undefined), `${image}: a key of components/images.ts without a storage type`);
        assert.match(imageLines.find((l) => l.trim().startsWith(`${image} `))!, new RegExp(`  ${types.join(", ")}$`));
    }
    const pulumiLines = lines.slice(pulumiStart + 1);
    const deps = Object.entries(pkg.dependencies as Record<string, string>).filter(([d]) => d.startsWith("@pulumi/"));
    assert.deepEqual(
        pulumiLines.map((l) => l.trim().split(/\s+/).slice(0, 2).join(" ")),
        deps.map(([d, v]) => `${d} ${v}`),
    );
    for (const [dep, version] of deps) {
        const installed = JSON.parse(fs.readFileSync(path.join(root, "node_modules", dep, "package.json"), "utf8"));
        const line = pulumiLines.find((l) => l.trim().startsWith(`${dep} `))!;
        if (installed.pulumi?.resource) {
            assert.ok(line.endsWith(`plugin: resource ${installed.pulumi.name} v${installed.pulumi.version ?? version}`), line);
        } else {
            assert.ok(!line.includes("plugin"), line);
        }
    }
    // The three providers the program uses are plugins pulumi preview downloads.
    assert.equal(pulumiLines.filter((l) => l.includes("plugin: resource")).length, 3, pulumiLines.join("\n"));
});

test("--version with the images a mirror must hold: every storage type has its images", () => {
    const types = new Set(Object.keys(images).map(storageOfImage));
    assert.deepEqual([...types].sort(), ["cephfs", "iscsi", "lvm", "nfs"]);
});

test("docs/requirements.md installs each plugin at the version package.json pins", () => {
    const doc = fs.readFileSync(path.join(root, "docs", "requirements.md"), "utf8");
    for (const [dep] of Object.entries(pkg.dependencies as Record<string, string>).filter(([d]) => d.startsWith("@pulumi/"))) {
        const installed = JSON.parse(fs.readFileSync(path.join(root, "node_modules", dep, "package.json"), "utf8"));
        if (installed.pulumi?.resource) {
            assert.ok(doc.includes(`pulumi plugin install resource ${installed.pulumi.name} ${installed.pulumi.version} `), `${dep}: docs/requirements.md`);
        }
    }
});

test("the version is one everywhere: package-lock.json's root, the docs' tarball name and --version sample", () => {
    const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8"));
    assert.deepEqual([lock.version, lock.packages[""].version], [pkg.version, pkg.version]);
    const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8");
    for (const file of ["README.md", "docs/library.md"]) {
        const tarballs = [...read(file).matchAll(/zcloud-storage-(\d+\.\d+\.\d+)\.tgz/g)].map((m) => m[1]);
        assert.ok(tarballs.length > 0, file);
        assert.deepEqual([...new Set(tarballs)], [pkg.version], file);
    }
    assert.match(read("docs/tools.md"), new RegExp(`^zcloud-storage ${pkg.version.replace(/\./g, "\\.")}$`, "m"));
});

test("CHANGELOG.md: Unreleased first, then the released version's heading, dated", () => {
    const headings = [...fs.readFileSync(path.join(root, "CHANGELOG.md"), "utf8").matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    assert.equal(headings[0], "Unreleased");
    const released = /^(\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$/.exec(headings[1] ?? "");
    assert.ok(released, `second heading: ${headings[1]}`);
    assert.equal(released[1], pkg.version);
    assert.equal(new Date(`${released[2]}T00:00:00Z`).toISOString().slice(0, 10), released[2]);
    // Every later heading is a version too, dated, each older than the one above it.
    const versions = headings.slice(1).map((h) => /^(\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$/.exec(h));
    assert.deepEqual(headings.slice(1).filter((_, i) => !versions[i]), []);
    const dates = versions.map((v) => v![2]);
    assert.deepEqual(dates, [...dates].sort().reverse());
});
