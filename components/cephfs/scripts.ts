import { ScriptBundle, scriptBundle } from "../node/bundle";
import { readNodeScript, shellQuote } from "../node/script";

/** The Ceph scripts of components/node/ceph, each run after the storage's shared library. */
export type CephScript = "ceph-mon-init.sh" | "ceph-keyring.sh" | "ceph-osd.sh" | "ceph-fs.sh" | "ceph-osd-drain.sh" | "ceph-gate.sh" | "ceph-mon-remove.sh" | "ceph-metrics.sh";

/** Where a Ceph pod finds the shared library and its script sets (one file each, from immutable ConfigMaps). */
export const cephScriptDir = "/etc/zcloud/scripts";

/** The pod annotation that names the script sets a pod runs by hash: a new set rolls the pod. */
export const scriptSetsAnnotation = "storage.zcloud.io/script-sets";

/**
 * The local scripts of components/node that act through a storage's admin pods where `pulumi up`
 * runs (the health gates, the OSD drains, the mons' leave), each shipped after cephfs-kube.sh, their library.
 */
export type LocalScript = "cephfs-gate.sh" | "cephfs-osd-remove.sh" | "cephfs-mon-remove.sh";

/** A script set of a storage's immutable ConfigMaps: in-cluster (Ceph) or local. */
export type ScriptSetScript = CephScript | LocalScript;

const localScripts: readonly string[] = ["cephfs-gate.sh", "cephfs-osd-remove.sh", "cephfs-mon-remove.sh"] satisfies LocalScript[];

/**
 * The shared library of a storage's Ceph script sets, once per storage in its own immutable
 * ConfigMap (key `ceph-library.sh`): lib.sh + ceph-lib.sh. Each Ceph set carries only its script;
 * pods mount both and the runner (ceph/ceph-run.sh) checks both hashes; the gates and drains
 * read both from their ConfigMaps (cephfs-kube.sh ck_ceph_set).
 */
export function cephLibraryBundle(): ScriptBundle {
    return scriptBundle(["lib.sh", "ceph/ceph-lib.sh"]);
}

/** The library's file in a pod's scripts volume and its key in the library ConfigMap. */
export const cephLibraryFile = "ceph-library.sh";

/**
 * One script set, named by its sha256: the script alone (a Ceph script: the library travels
 * once, cephLibraryBundle), or cephfs-kube.sh + the script (a local one).
 */
export function cephScriptBundle(script: ScriptSetScript): ScriptBundle {
    return localScripts.includes(script) ? scriptBundle(["cephfs-kube.sh", script]) : scriptBundle([`ceph/${script}`]);
}

/**
 * The text a Ceph script set runs as inside a Ceph container: the library, then the set, as the
 * runner and the gates' and drains' scripts join them (trailing newlines dropped, as `$(...)` does).
 */
export function cephScriptText(script: CephScript): string {
    return (cephLibraryBundle().text + cephScriptBundle(script).text).replace(/\n+$/, "");
}

/**
 * The immutable ConfigMap of one script set of a storage: `ceph-<storage>-scripts-osd-<id>`. The
 * id in the name makes a changed script a new ConfigMap (the old one goes once nothing refers to
 * it), so a pod or a drain always reads exactly the text it was planned with.
 */
export function cephScriptSetName(storage: string, script: ScriptSetScript): string {
    return `ceph-${storage}-scripts-${script.replace(/^ceph-/, "").replace(/\.sh$/, "")}-${cephScriptBundle(script).id}`;
}

/** The immutable ConfigMap of a storage's shared library: `ceph-<storage>-scripts-library-<id>`. */
export function cephLibraryName(storage: string): string {
    return `ceph-${storage}-scripts-library-${cephLibraryBundle().id}`;
}

/**
 * A container command running a script set from the pod's scripts volume: `sh -c '<runner>'
 * <dir>/<script> <library sha256> <set sha256> <args>`: the runner (ceph/ceph-run.sh, some 600
 * bytes) checks the library's and the set's hashes and runs them as `<name> <args>`. Arguments
 * are never secrets (keys are files from Secrets).
 */
export function cephScriptCommand(script: CephScript, args: string[]): string[] {
    return ["sh", "-c", compactScript("ceph/ceph-run.sh"), `${cephScriptDir}/${script}`, cephLibraryBundle().sha256, cephScriptBundle(script).sha256, ...args];
}

/** A container command of cephScriptCommand, read back: the script's path, the two hashes, the arguments. */
export interface CephScriptCall {
    path: string;
    librarySha256: string;
    setSha256: string;
    args: string[];
}

/** Reads a container command made by cephScriptCommand; undefined for any other command. */
export function cephScriptCall(command: readonly string[]): CephScriptCall | undefined {
    const [sh, c, runner, path, librarySha256, setSha256, ...args] = command;
    const sha = /^[0-9a-f]{64}$/;
    if (sh !== "sh" || c !== "-c" || runner !== compactScript("ceph/ceph-run.sh") || !path?.startsWith(`${cephScriptDir}/`) || !sha.test(librarySha256 ?? "") || !sha.test(setSha256 ?? "")) {
        return undefined;
    }
    return { path, librarySha256, setSha256, args };
}

/**
 * The annotation value for the library and the sets a pod runs: `<file>=<sha256>`,
 * comma-separated, the library first, then the sets in order.
 */
export function scriptSetsValue(scripts: readonly CephScript[]): string {
    return [`${cephLibraryFile}=${cephLibraryBundle().sha256}`, ...scripts.map((s) => `${s}=${cephScriptBundle(s).sha256}`)].join(",");
}

/** A stub's text: the node script without comment lines and indentation (what every command carries). */
const compacted = new Map<string, string>();
export function compactScript(file: string): string {
    let text = compacted.get(file);
    if (text === undefined) {
        text = readNodeScript(file)
            .split("\n")
            .map((line) => line.trimStart())
            .filter((line) => line !== "" && !line.startsWith("#"))
            .join("\n");
        compacted.set(file, text);
    }
    return text;
}

/**
 * The command string of a local script run where `pulumi up` runs (a gate's create and update, a
 * drain's delete): `sh -c '<stub>' <name> <ConfigMap> <sha256> <args>`. Only the stub (some
 * 1.3 KB), the set's ConfigMap and hash and the arguments travel in the command and the state;
 * the stub reads the set from the ConfigMap (same kubectl target options as `args`: --context,
 * --kubeconfig, --kubeconfig-from-env), checks its hash and runs it as `<name> <args>`.
 */
export function localScriptCommand(script: LocalScript, configMap: string, args: string[]): string {
    return ["sh", "-c", shellQuote(compactScript("run-script-set.sh")), script.replace(/\.sh$/, ""), shellQuote(configMap), cephScriptBundle(script).sha256, ...args.map(shellQuote)].join(" ");
}
