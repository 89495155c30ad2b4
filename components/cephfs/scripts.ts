import { readNodeScript } from "../node/script";

/** The Ceph scripts of components/node/ceph, each shipped after the shared libraries. */
export type CephScript = "ceph-mon-init.sh" | "ceph-keyring.sh" | "ceph-osd.sh" | "ceph-fs.sh" | "ceph-osd-drain.sh";

/** lib.sh + ceph-lib.sh + the script: the text `sh -c` runs inside a Ceph container. */
export function cephScriptText(script: CephScript): string {
    return ["lib.sh", "ceph/ceph-lib.sh", `ceph/${script}`].map(readNodeScript).join("\n");
}

/**
 * A container command running a Ceph script inline: `sh -c '<libs + script>' <name> <args>`.
 * The image needs nothing of ours, the manifest shows exactly what runs, and a changed script
 * rolls the pods. Arguments are never secrets (keys are files from Secrets).
 */
export function cephScriptCommand(script: CephScript, args: string[]): string[] {
    return ["sh", "-c", cephScriptText(script), script.replace(/\.sh$/, ""), ...args];
}
