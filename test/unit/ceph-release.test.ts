/**
 * The Ceph releases: the image the program ships (components/images.ts) and the Ceph tier's
 * chroot (test/ceph/release.ts, built by test/setup) are one release, Tentacle 20.2.4;
 * docs/cephfs.md names it.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { images } from "../../components/images";
import { imageCephVersion, TIER_RELEASE, UPGRADE_FROM, versionOutputVersion } from "../ceph/release";

describe("ceph release", () => {
    test("the shipped image and the tier run one release, Tentacle 20.2.4", () => {
        assert.equal(images.ceph, "quay.io/ceph/ceph:v20.2.4");
        assert.equal(imageCephVersion(images.ceph), TIER_RELEASE.version);
        assert.deepEqual(TIER_RELEASE, { suite: "sid", version: "20.2.4" });
        const docs = readFileSync(join(__dirname, "..", "..", "docs", "cephfs.md"), "utf8");
        const release = docs.slice(docs.indexOf("## Ceph release"));
        assert.ok(docs.includes("## Ceph release"), "docs/cephfs.md has a \"Ceph release\" section");
        assert.match(release, /quay\.io\/ceph\/ceph:v20\.2\.4/);
        assert.match(release, /Tentacle 20\.2\.4/);
        assert.doesNotMatch(release.slice(0, release.indexOf("\n## ", 3)), /quay\.io\/ceph\/ceph:v19/);
    });

    test("the upgrade test starts from the release before: Reef 18.2.7 (Debian trixie)", () => {
        assert.deepEqual(UPGRADE_FROM, { suite: "trixie", version: "18.2.7" });
        assert.ok(Number(UPGRADE_FROM.version.split(".")[0]) < Number(TIER_RELEASE.version.split(".")[0]));
    });

    test("test/setup builds the tier's chroots at those suites and versions", () => {
        const setup = readFileSync(join(__dirname, "..", "setup"), "utf8");
        const builds = [...setup.matchAll(/^\s*bash test\/ceph\/build-chroot\.sh (\S+) (\S+)$/gm)].map((m) => ({ suite: m[1], version: m[2] }));
        assert.deepEqual(builds, [TIER_RELEASE, UPGRADE_FROM]);
    });

    test("imageCephVersion reads vX.Y.Z, with or without a digest, and refuses anything else", () => {
        assert.equal(imageCephVersion("quay.io/ceph/ceph:v20.2.4"), "20.2.4");
        assert.equal(imageCephVersion(`registry.local:5000/ceph/ceph:v18.2.7@sha256:${"a".repeat(64)}`), "18.2.7");
        assert.throws(() => imageCephVersion("quay.io/ceph/ceph:v20"), { message: "quay.io/ceph/ceph:v20: not a Ceph image pinned to vX.Y.Z" });
        assert.throws(() => imageCephVersion("quay.io/ceph/ceph:latest"), { message: "quay.io/ceph/ceph:latest: not a Ceph image pinned to vX.Y.Z" });
    });

    test("versionOutputVersion reads ceph --version, Debian's build suffix aside", () => {
        assert.equal(versionOutputVersion("ceph version 20.2.4 (0123abcd) tentacle (stable)\n"), "20.2.4");
        assert.equal(versionOutputVersion("ceph version 18.2.7 (abcdef) reef (stable)"), "18.2.7");
        assert.equal(versionOutputVersion("ceph version 16.2.15-1 (abc) pacific (stable)"), "16.2.15");
        assert.throws(() => versionOutputVersion("bash: ceph: command not found"), { message: 'not a ceph --version line: "bash: ceph: command not found"' });
    });
});
