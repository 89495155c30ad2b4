/**
 * A rendered pod's container started in a guest the way the container runtime and the kubelet
 * would start it, as one shell script run over SSH: the container's root is an overlay of a
 * read-only image (a 9p share of the guest) with a tmpfs on top, each volume mount of the
 * rendered container is put at its mount path in that root (hostPath: the guest's path, checked
 * or created by its type; configMap: its files, always read-only; emptyDir: a tmpfs), /proc is the
 * guest's (hostPID), and the entrypoint runs chrooted there with exactly the given env (no
 * argv secret: the env holds the rendered values only), detached, its output in <dir>/log.
 * Everything but the hostPath directories lives under <dir> on the guest's /run, so a reboot
 * takes the "container" away as it would.
 */
import type { RenderedContainer, RenderedPod } from "./prebuilt/cephCsiRig";

export interface GuestPodOptions {
    /** Runtime state in the guest (under /run: gone at a reboot). */
    dir: string;
    /** 9p tag of the image root shared into the guest. */
    imageTag: string;
    /** Files of the guest copied into the container's root (what the image has that the shared root lacks): container path -> guest path. */
    imageFiles: Record<string, string>;
    /** ConfigMap name -> data (the planned ConfigMaps the pod mounts). */
    configMaps: Record<string, Record<string, string>>;
    env: Record<string, string>;
    /** The entrypoint's argv (the image's entrypoint and the rendered args). */
    argv: string[];
}

/** A word for the shell, single-quoted. */
export function q(word: string): string {
    return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The script that starts `container` of `pod` in the guest (see the file's comment). */
export function guestPodScript(pod: RenderedPod, container: RenderedContainer, o: GuestPodOptions): string {
    const root = `${o.dir}/root`;
    const lines = [
        "set -eu",
        `d=${q(o.dir)}`,
        `r=${q(root)}`,
        'mkdir -p "$d/image" "$d/rw"',
        `mountpoint -q "$d/image" || mount -t 9p -o trans=virtio,version=9p2000.L,ro ${q(o.imageTag)} "$d/image"`,
        'mountpoint -q "$d/rw" || mount -t tmpfs zc-pod-rw "$d/rw"',
        'mkdir -p "$d/rw/up" "$d/rw/work" "$r"',
        'mountpoint -q "$r" || mount -t overlay zc-pod-root -o "lowerdir=$d/image,upperdir=$d/rw/up,workdir=$d/rw/work" "$r"',
        ...Object.entries(o.imageFiles).map(([to, from]) => `mkdir -p "$r"${q(dirname(to))} && cp ${q(from)} "$r"${q(to)}`),
        'mountpoint -q "$r/proc" || mount -t proc proc "$r/proc"',
    ];
    // Parents before children (/csi before /csi/mountinfo), as the runtime orders them.
    const mounts = [...container.volumeMounts].sort((a, b) => a.mountPath.localeCompare(b.mountPath));
    for (const m of mounts) {
        const vol = pod.volumes.find((v) => v.name === m.name);
        if (!vol) throw new Error(`${container.name}: mount ${m.name} has no volume`);
        const at = `"$r"${q(m.mountPath)}`;
        let source: string;
        if (vol.hostPath) {
            const p = q(vol.hostPath.path);
            const type = vol.hostPath.type ?? "";
            if (type === "Directory") {
                lines.push(`[ -d ${p} ] || { echo "hostPath ${vol.name}: ${vol.hostPath.path} is not a directory" >&2; exit 1; }`);
            } else if (type === "DirectoryOrCreate" || type === "") {
                lines.push(`mkdir -p ${p}`);
            } else {
                throw new Error(`${container.name}: hostPath type ${type} of ${vol.name} is not handled`);
            }
            source = p;
        } else if (vol.configMap) {
            const data = o.configMaps[vol.configMap.name];
            if (!data) throw new Error(`${container.name}: ConfigMap ${vol.configMap.name} not given`);
            source = q(`${o.dir}/configmaps/${vol.configMap.name}`);
            lines.push(`mkdir -p ${source}`);
            for (const [k, v] of Object.entries(data)) {
                lines.push(`printf %s ${q(Buffer.from(v).toString("base64"))} | base64 -d >${source}/${q(k)}`);
            }
        } else if (vol.emptyDir) {
            source = q(`${o.dir}/empty/${vol.name}`);
            lines.push(`mkdir -p ${source} && { mountpoint -q ${source} || mount -t tmpfs zc-pod-empty ${source}; }`);
        } else {
            throw new Error(`${container.name}: volume ${vol.name} is of no kind the guest runtime handles`);
        }
        lines.push(`mkdir -p ${at}`, `mountpoint -q ${at} || mount --rbind ${source} ${at}`);
        // A ConfigMap volume is read-only whatever the mount says, as the kubelet gives it.
        if (m.readOnly || vol.configMap) lines.push(`mount -o remount,bind,ro ${at}`);
        // Bidirectional: the bind joins the host path's shared peer group (the guest's / is
        // shared), so mounts made in the container show on the host path; make sure it is.
        if (m.mountPropagation === "Bidirectional") lines.push(`mount --make-rshared ${at}`);
    }
    const env = Object.entries(o.env).map(([k, v]) => q(`${k}=${v}`));
    lines.push(`setsid env -i ${env.join(" ")} chroot "$r" ${o.argv.map(q).join(" ")} >"$d/log" 2>&1 </dev/null &`, 'echo "$!" >"$d/pid"');
    return lines.join("\n") + "\n";
}

function dirname(p: string): string {
    return p.slice(0, p.lastIndexOf("/")) || "/";
}
