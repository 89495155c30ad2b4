/**
 * Every container image the program deploys, pinned (DESIGN "Images"). `imageRegistry` swaps the
 * registry host for an air-gapped mirror and keeps the repository path and tag.
 */
export const images = {
    /** TopoLVM with its CSI sidecars (provisioner, resizer, snapshotter, registrar, liveness) built in. */
    topolvm: "ghcr.io/topolvm/topolvm-with-sidecar:0.41.0",
    /** csi-driver-nfs v4.13.5 and the sidecar versions that release ships with (its chart values and deploy/v4.13.5 manifests). */
    nfsPlugin: "registry.k8s.io/sig-storage/nfsplugin:v4.13.5",
    nfsProvisioner: "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
    nfsResizer: "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
    nfsLivenessProbe: "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
    nfsNodeDriverRegistrar: "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
    /**
     * Ceph Tentacle 20.2.4: mon, mgr, mds, osd and the admin tools; the release the Ceph tier runs
     * (test/ceph/release.ts) and the one ceph-csi v3.17.1 is built on. New keys are AES-256
     * (cephKeyBytes); a stack made at Squid keeps its AES-128 keys until rotated (docs/cephfs.md,
     * "Ceph release", "Upgrading Ceph", "Key rotation").
     */
    ceph: "quay.io/ceph/ceph:v20.2.4",
    /** ceph-csi v3.17.1 (CephFS) and the sidecar versions its v3.17 deployment uses. */
    cephCsi: "quay.io/cephcsi/cephcsi:v3.17.1",
    cephCsiProvisioner: "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
    cephCsiResizer: "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
    cephCsiNodeDriverRegistrar: "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
    /** csi-sanlock-lvm v0.4.6 (driver and lock daemons), with the sidecar versions the NFS driver pins. */
    sanlockDriverd: "quay.io/aleofreddi/csi-sanlock-lvm-driverd:v0.4.6",
    sanlockLvmctrld: "quay.io/aleofreddi/csi-sanlock-lvm-lvmctrld:v0.4.6",
    sanlockProvisioner: "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
    sanlockResizer: "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
    sanlockLivenessProbe: "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
    sanlockNodeDriverRegistrar: "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
} as const;

export type ImageName = keyof typeof images;

/** `ghcr.io/topolvm/x:1` with mirror `registry.local:5000` -> `registry.local:5000/topolvm/x:1`. */
export function imageRef(image: string, registry?: string): string {
    if (!registry) {
        return image;
    }
    const firstSlash = image.indexOf("/");
    const firstPart = image.slice(0, firstSlash);
    // Docker treats the first path component as a registry only when it looks like a host.
    const hasRegistry = firstSlash > 0 && (firstPart.includes(".") || firstPart.includes(":") || firstPart === "localhost");
    const path = hasRegistry ? image.slice(firstSlash + 1) : image;
    return `${registry.replace(/\/$/, "")}/${path}`;
}

/** The major release of a Ceph image pinned to a tag vX.Y.Z (20 for Tentacle 20.2.4). */
export function cephMajorRelease(image: string): number {
    const m = /:v(\d+)\.\d+\.\d+$/.exec(image);
    if (!m) {
        throw new Error(`cannot tell the Ceph release of image ${image} (expected a tag vX.Y.Z)`);
    }
    return Number(m[1]);
}
