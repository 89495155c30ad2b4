import { ScriptBundle, scriptBundle } from "../node/bundle";
import { readNodeScript, shellQuote } from "../node/script";

/** The Ceph scripts of components/node/ceph, each shipped after the shared libraries. */
export type CephScript = "ceph-mon-init.sh" | "ceph-keyring.sh" | "ceph-osd.sh" | "ceph-fs.sh" | "ceph-osd-drain.sh" | "ceph-gate.sh";

/** Where a Ceph pod finds its script sets (one file per set, from immutable ConfigMaps). */
export const cephScriptDir = "/etc/zcloud/scripts";

/** The pod annotation that names the script sets a pod runs by hash: a new set rolls the pod. */
export const scriptSetsAnnotation = "storage.zcloud.io/script-sets";

/**
 * The local scripts of components/node that act through a storage's admin pods where `pulumi up`
 * runs (the health gates, the OSD drains), each shipped after cephfs-kube.sh, their library.
 */
export type LocalScript = "cephfs-gate.sh" | "cephfs-osd-remove.sh";

/** A script set of a storage's immutable ConfigMaps: in-cluster (Ceph) or local. */
export type ScriptSetScript = CephScript | LocalScript;

const localScripts: readonly string[] = ["cephfs-gate.sh", "cephfs-osd-remove.sh"] satisfies LocalScript[];

/**
 * One script set, named by its sha256: lib.sh + ceph-lib.sh + the script (a Ceph script), or
 * cephfs-kube.sh + the script (a local one).
 */
export function cephScriptBundle(script: ScriptSetScript): ScriptBundle {
    return localScripts.includes(script) ? scriptBundle(["cephfs-kube.sh", script]) : scriptBundle(["lib.sh", "ceph/ceph-lib.sh", `ceph/${script}`]);
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
export function cephScriptSetName(storage: string, script: ScriptSetScript): string {
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

/** The local stub's text: run-script-set.sh without comment lines and indentation (every gate and drain carries it). */
let stubText: string | undefined;
function localStub(): string {
    if (stubText === undefined) {
        stubText = readNodeScript("run-script-set.sh")
            .split("\n")
            .map((line) => line.trimStart())
            .filter((line) => line !== "" && !line.startsWith("#"))
            .join("\n");
    }
    return stubText;
}

/**
 * The command string of a local script run where `pulumi up` runs (a gate's create and update, a
 * drain's delete): `sh -c '<stub>' <name> <ConfigMap> <sha256> <args>`. Only the stub (some
 * 1.3 KB), the set's ConfigMap and hash and the arguments travel in the command and the state;
 * the stub reads the set from the ConfigMap (same kubectl target options as `args`: --context,
 * --kubeconfig, --kubeconfig-from-env), checks its hash and runs it as `<name> <args>`.
 */
export function localScriptCommand(script: LocalScript, configMap: string, args: string[]): string {
    return ["sh", "-c", shellQuote(localStub()), script.replace(/\.sh$/, ""), shellQuote(configMap), cephScriptBundle(script).sha256, ...args.map(shellQuote)].join(" ");
}
