/**
 * A Ceph container's command as the program renders it (components/cephfs/scripts.ts
 * cephScriptCommand): the runner, the script's path, the library's and the set's sha256, the
 * arguments. scriptArgv checks the runner and that the hashes are this program's library and
 * that script's set, and gives the script's path and its arguments: what tests compare.
 */
import assert from "node:assert/strict";
import * as path from "node:path";
import { osdLockDir } from "../../components/cephfs/osds";
import { CephScript, cephLibraryBundle, cephLibraryFile, cephLibraryName, cephScriptBundle, cephScriptCall, cephScriptCommand, cephScriptDir, cephScriptSetName, scriptSetsValue } from "../../components/cephfs/scripts";

export function scriptArgv(command: readonly string[] | undefined): string[] {
    const call = cephScriptCall(command ?? []);
    assert.ok(call, `not a Ceph script-set command: ${JSON.stringify(command)?.slice(0, 200)}`);
    assert.equal(call.librarySha256, cephLibraryBundle().sha256, `${call.path}: the library's hash`);
    assert.equal(call.setSha256, cephScriptBundle(path.basename(call.path) as CephScript).sha256, `${call.path}: the set's hash`);
    return [call.path, ...call.args];
}

const setsAnnotation = "storage.zcloud.io/script-sets";
type Json = any;

/**
 * A workload's planned inputs as made by a program whose Ceph sets each carried lib.sh +
 * ceph-lib.sh (`sh <dir>/<script> <args>`), moved to the shared library as this program makes
 * them: each Ceph container command through the runner (cephScriptCommand), the library first in
 * the scripts volume, each set's ConfigMap under this program's name, the sets' annotation with
 * the library's hash first. What a test expects a pod template to become, nothing else.
 */
export function movedToLibrary(inputs: unknown, storage: string): Json {
    const copy: Json = JSON.parse(JSON.stringify(inputs));
    const template = copy.spec?.template;
    if (!template) return copy;
    const spec = template.spec;
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
        const [sh, file, ...args] = c.command ?? [];
        if (sh === "sh" && typeof file === "string" && file.startsWith(`${cephScriptDir}/`)) c.command = cephScriptCommand(path.basename(file) as CephScript, args);
    }
    const scripts = (spec.volumes ?? []).find((v: Json) => v.name === "scripts");
    if (scripts) {
        const sources = scripts.projected.sources.map((s: Json) => ({ configMap: { ...s.configMap, name: cephScriptSetName(storage, s.configMap.items[0].key) } }));
        scripts.projected.sources = [{ configMap: { name: cephLibraryName(storage), items: [{ key: cephLibraryFile, path: cephLibraryFile }] } }, ...sources];
        template.metadata.annotations[setsAnnotation] = scriptSetsValue(sources.map((s: Json) => s.configMap.items[0].key));
    }
    return copy;
}

/**
 * An OSD workload's expected inputs with the host's prepare-lock directory mounted (the prepare
 * Jobs' change to an OSD pod template: test/plan/ceph-osd-prepare.test.ts), before the scripts
 * volume, as components/cephfs/osds.ts mounts it. Other workloads are returned as they are.
 */
export function withPrepareLocks(expected: Json, name: string): Json {
    if (!/-osd-/.test(name) || !expected.spec?.template) return expected;
    const spec = expected.spec.template.spec;
    spec.volumes.splice(spec.volumes.length - 1, 0, { name: "osd-locks", hostPath: { path: osdLockDir, type: "DirectoryOrCreate" } });
    spec.containers[0].volumeMounts.push({ name: "osd-locks", mountPath: osdLockDir });
    return expected;
}

/**
 * A mgr's or mds's expected inputs with the storage's node label as its nodeSelector (the
 * managers and mdss pinned to the storage's hosts: test/plan/ceph-daemons-upgrade.test.ts).
 * Other workloads are returned as they are.
 */
export function onStorageHosts(expected: Json, name: string, storage: string): Json {
    if (!/-(mgr|mds)-[a-z]$/.test(name) || !expected.spec?.template) return expected;
    expected.spec.template.spec.nodeSelector = { "storage.zcloud.io/cephfs": storage };
    return expected;
}
