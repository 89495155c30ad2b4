/**
 * Which program inside a pinned image a rendered container runs, and where this machine has it,
 * built from the Go module at the image's version by build-drivers.sh. The cache directory is
 * named after the image's tag, so a changed pin finds no build until the script builds it.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { images } from "../../components/images";

export const driverCacheRoot = process.env.ZCLOUD_DRIVER_CACHE ?? path.join(os.homedir(), ".cache", "zcloud-storage", "drivers");

export type ProgramLookup = { program: string } | { unavailable: string };

function tagOf(image: string): string {
    const tag = image.slice(image.lastIndexOf(":") + 1);
    if (!tag || tag.includes("/")) {
        throw new Error(`image ${image} has no tag`);
    }
    return tag;
}

/** The TopoLVM build for an image tag: hypertopolvm and its program links. */
export function topolvmBuildDir(image: string = images.topolvm): string {
    return path.join(driverCacheRoot, `topolvm-v${tagOf(image)}`);
}

const notOnProxy = (module: string) => `not built here: the Go module proxy answers "not available" for ${module}`;

/** Paths in the topolvm-with-sidecar image that are links to hypertopolvm (its Dockerfile). */
const topolvmPrograms = new Set(["/lvmd", "/topolvm-node", "/topolvm-controller"]);
/** The CSI sidecars the same image carries, built from kubernetes-csi modules. */
const sidecarPrograms = new Set(["/csi-provisioner", "/csi-resizer", "/csi-snapshotter", "/livenessprobe", "/csi-node-driver-registrar"]);

/** The program a container runs, from its image (without a mirror) and its command[0] or the image's entrypoint. */
export function lookupProgram(image: string, executable: string | undefined): ProgramLookup {
    if (image === images.topolvm) {
        if (executable && topolvmPrograms.has(executable)) {
            const program = path.join(topolvmBuildDir(image), path.basename(executable));
            if (!fs.existsSync(program)) {
                throw new Error(`${program} is missing: run sh test/drivers/build-drivers.sh (it builds TopoLVM for ${image})`);
            }
            return { program };
        }
        if (executable && sidecarPrograms.has(executable)) {
            return { unavailable: notOnProxy("the kubernetes-csi sidecar modules") };
        }
        throw new Error(`${image} has no program ${executable ?? "(no command)"}`);
    }
    if (image === images.nfsPlugin) {
        return { unavailable: `${notOnProxy("github.com/kubernetes-csi/csi-driver-nfs")}; the drivers-prebuilt tier runs a binary handed in by ZCLOUD_NFSPLUGIN_BIN` };
    }
    if (image === images.cephCsi) {
        return { unavailable: notOnProxy("github.com/ceph/ceph-csi") };
    }
    if (image === images.sanlockDriverd || image === images.sanlockLvmctrld) {
        const variable = image === images.sanlockDriverd ? "ZCLOUD_SANLOCK_DRIVERD_BIN" : "ZCLOUD_SANLOCK_LVMCTRLD_BIN";
        return { unavailable: `${notOnProxy("github.com/aleofreddi/csi-sanlock-lvm")}; the drivers-prebuilt tier runs a binary handed in by ${variable}` };
    }
    if (image.startsWith("registry.k8s.io/sig-storage/")) {
        return { unavailable: notOnProxy("the kubernetes-csi sidecar modules") };
    }
    throw new Error(`no program is known for image ${image}`);
}

/** Our own CSI client as build-drivers.sh caches it: by the hash of its source files. */
export function csiCallProgram(): string {
    const source = path.join(__dirname, "csi-call");
    const hash = crypto.createHash("sha256");
    for (const f of ["go.mod", "go.sum", "main.go"]) {
        hash.update(fs.readFileSync(path.join(source, f)));
    }
    const program = path.join(driverCacheRoot, `csi-call-${hash.digest("hex").slice(0, 12)}`, "csi-call");
    if (!fs.existsSync(program)) {
        throw new Error(`${program} is missing: run sh test/drivers/build-drivers.sh (it builds csi-call from test/drivers/csi-call)`);
    }
    return program;
}

/** kubernetes-csi's csi-sanity, as build-drivers.sh pins and caches it. */
export const csiSanityVersion = "5.6.0";

export function csiSanityProgram(): string {
    const program = path.join(driverCacheRoot, `csi-sanity-v${csiSanityVersion}`, "csi-sanity");
    if (!fs.existsSync(program)) {
        throw new Error(`${program} is missing: run sh test/drivers/build-drivers.sh (it builds csi-sanity v${csiSanityVersion})`);
    }
    return program;
}
