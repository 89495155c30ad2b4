/**
 * The Ceph release the tier runs: Debian's packages of one suite at one X.Y.Z, in a debootstrap
 * chroot built by test/ceph/build-chroot.sh (cached outside the clone). It is the shipped
 * image's release, Tentacle 20.2.4 (components/images.ts). test/unit/ceph-release.test.ts holds
 * both pins (and test/setup's build line).
 */
import { execFileSync } from "node:child_process";
import * as path from "node:path";

export interface TierRelease {
    /** Debian suite whose ceph packages are this version. */
    suite: string;
    /** Ceph X.Y.Z (Debian's epoch and revision aside). */
    version: string;
}

/** The shipped release (quay.io/ceph/ceph:v20.2.4): Debian sid's ceph 20.2.4. */
export const TIER_RELEASE: TierRelease = { suite: "sid", version: "20.2.4" };

/** The release an upgrade starts from (test/ceph/upgrade.test.ts): Debian trixie's Reef 18.2.7. */
export const UPGRADE_FROM: TierRelease = { suite: "trixie", version: "18.2.7" };

/** X.Y.Z of a Ceph image reference `.../ceph:vX.Y.Z` (a digest after the tag is allowed). */
export function imageCephVersion(image: string): string {
    const m = /:v(\d+\.\d+\.\d+)(@sha256:[0-9a-f]{64})?$/.exec(image);
    if (!m) throw new Error(`${image}: not a Ceph image pinned to vX.Y.Z`);
    return m[1];
}

/** X.Y.Z from the first line of `ceph --version` ("ceph version 20.2.4 (<sha>) tentacle (stable)"). */
export function versionOutputVersion(output: string): string {
    const m = /^ceph version (\d+\.\d+\.\d+)[\s-]/.exec(output);
    if (!m) throw new Error(`not a ceph --version line: ${JSON.stringify(output.split("\n")[0])}`);
    return m[1];
}

/**
 * The chroot of a release, built (or taken from the cache) by build-chroot.sh; fails loudly when
 * it cannot be built or its `ceph --version` is not the release's X.Y.Z.
 */
export function tierRoot(release: TierRelease = TIER_RELEASE): string {
    let out: string;
    try {
        out = execFileSync("bash", [path.join(__dirname, "build-chroot.sh"), release.suite, release.version], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 1_800_000 });
    } catch (e) {
        const err = e as { stderr?: string; message: string };
        throw new Error(`Ceph tier: no ${release.suite} chroot with ceph ${release.version}: ${err.stderr?.trim() || err.message}`);
    }
    const root = out.trim().split("\n").pop()!;
    const got = versionOutputVersion(execFileSync("chroot", [root, "ceph", "--version"], { encoding: "utf8" }));
    if (got !== release.version) throw new Error(`Ceph tier: the chroot ${root} runs ceph ${got}, the tier is pinned to ${release.version}`);
    return root;
}
