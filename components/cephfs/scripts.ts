import { ScriptBundle, scriptBundle } from "../node/bundle";

/** The Ceph scripts of components/node/ceph, each shipped after the shared libraries. */
export type CephScript = "ceph-mon-init.sh" | "ceph-keyring.sh" | "ceph-osd.sh" | "ceph-fs.sh" | "ceph-osd-drain.sh" | "ceph-gate.sh";

/** Where a Ceph pod finds its script sets (one file per set, from immutable ConfigMaps). */
export const cephScriptDir = "/etc/zcloud/scripts";

/** The pod annotation that names the script sets a pod runs by hash: a new set rolls the pod. */
export const scriptSetsAnnotation = "storage.zcloud.io/script-sets";

/** lib.sh + ceph-lib.sh + the script, named by its sha256: one script set. */
export function cephScriptBundle(script: CephScript): ScriptBundle {
    return scriptBundle(["lib.sh", "ceph/ceph-lib.sh", `ceph/${script}`]);
}

/** The text of a script set: what `sh` runs inside a Ceph container. */
export function cephScriptText(script: CephScript): string {
    return cephScriptBundle(script).text;
}

/**
 * The immutable ConfigMap of one script set of a storage: `ceph-<storage>-scripts-osd-<id>`. The
 * id in the name makes a changed script a new ConfigMap (the old one goes once nothing refers to
 * it), so a pod or a drain always reads exactly the text it was planned with.
 */
export function cephScriptSetName(storage: string, script: CephScript): string {
    return `ceph-${storage}-scripts-${script.replace(/^ceph-/, "").replace(/\.sh$/, "")}-${cephScriptBundle(script).id}`;
}

/**
 * A container command running a script set from the pod's scripts volume: `sh <dir>/<script>
 * <args>`. Arguments are never secrets (keys are files from Secrets).
 */
export function cephScriptCommand(script: CephScript, args: string[]): string[] {
    return ["sh", `${cephScriptDir}/${script}`, ...args];
}

/** The annotation value for the sets a pod runs: `<script>=<sha256>`, comma-separated, in order. */
export function scriptSetsValue(scripts: readonly CephScript[]): string {
    return scripts.map((s) => `${s}=${cephScriptBundle(s).sha256}`).join(",");
}
