// The stub a CephFS storage's gates and drains carry instead of their local scripts
// (components/node/run-script-set.sh, rendered by scripts.ts localScriptCommand): it reads the
// script set from its immutable ConfigMap with kubectl against the provider's cluster, checks its
// hash and runs it with the command's arguments; anything missing or altered is a refusal before
// anything runs. A stand-in kubectl serves the ConfigMaps from files and records its calls.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephScriptBundle, cephScriptSetName, localScriptCommand } from "../../components/cephfs/scripts";

const gateSet = cephScriptSetName("fs", "cephfs-gate.sh");
/** A ConfigMap's name as the program names it: the first 12 hex digits of its text's sha256. */
const idName = (prefix: string, text: string) => `${prefix}-${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;
const libraryText = "zc_lib() { :; }\n";
const cephGateText = 'zc_lib; echo gate-ran "$@"\n';
const cephGateSet = idName("ceph-fs-scripts-gate", cephGateText);
const librarySet = idName("ceph-fs-scripts-library", libraryText);
const selector = "storage.zcloud.io/storage=fs,app.kubernetes.io/component in (ceph-mon,ceph-mgr)";
const gateArgs = (target: string[]) => ["--namespace", "zcloud-storage", "--admin-selector", "app=ceph-admin", "--script-configmap", cephGateSet, "--library-configmap", librarySet, ...target, "--daemons", selector, "--", "mon-quorum", "--id", "b", "--fsid", "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90", "--timeout", "0"];

interface Kubectl {
    dir: string;
    /** Each call's arguments (NUL-separated in the log: a script may span lines). */
    calls: () => string[];
    /** sha256 of what the --kubeconfig file held at each call ("" for none). */
    kubeconfigs: () => string[];
}

/**
 * kubectl answering `get configmap NAME --output jsonpath={.data.KEY}` from DIR/cm/NAME/KEY
 * (NotFound when absent), `get deployments` with one available daemon, `get pods` with one
 * running admin pod, and `exec` by printing its arguments.
 */
function standInKubectl(configMaps: Record<string, Record<string, string>>): Kubectl {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-stub-kubectl-"));
    for (const [name, data] of Object.entries(configMaps)) {
        fs.mkdirSync(path.join(dir, "cm", name), { recursive: true });
        for (const [key, text] of Object.entries(data)) fs.writeFileSync(path.join(dir, "cm", name, key), text);
    }
    fs.writeFileSync(
        path.join(dir, "kubectl"),
        `#!/bin/sh
printf '%s\\0' "$*" >>"${dir}/calls"
kfile='' prev='' cm='' key=''
for a in "$@"; do
    [ "$prev" != --kubeconfig ] || kfile=$a
    [ "$prev" != configmap ] || cm=$a
    case $a in 'jsonpath={.data.'*) key=$(printf '%s' "$a" | sed 's/^jsonpath={.data.//; s/}$//; s/\\\\//g') ;; esac
    prev=$a
done
if [ -n "$kfile" ]; then sha256sum <"$kfile" | cut -d' ' -f1 >>"${dir}/kubeconfigs"; else echo >>"${dir}/kubeconfigs"; fi
case "$*" in
    *"get configmap"*) [ -f "${dir}/cm/$cm/$key" ] || { echo "Error from server (NotFound): configmaps \\"$cm\\" not found" >&2; exit 1; }; cat "${dir}/cm/$cm/$key" ;;
    *"get deployments"*) printf 'fs-mon-a 1\\n' ;;
    *"get pods"*) printf 'admin-0 \\n' ;;
    *" exec "*) shift 7; printf 'exec:'; printf ' [%s]' "$@"; echo ;;
esac
`,
        { mode: 0o755 },
    );
    const lines = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), "utf8").replace(/\n$/, "").split("\n") : []);
    const calls = () => (fs.existsSync(path.join(dir, "calls")) ? fs.readFileSync(path.join(dir, "calls"), "utf8").split("\0").slice(0, -1) : []);
    return { dir, calls, kubeconfigs: () => lines("kubeconfigs") };
}

function run(command: string, k: Kubectl, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", ["-c", command], { env: { PATH: `${k.dir}:/usr/bin:/bin`, TMPDIR: k.dir, ...env } }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr })),
    );
}

const sets = (gateText = cephScriptBundle("cephfs-gate.sh").text): Record<string, Record<string, string>> => ({ [gateSet]: { "cephfs-gate.sh": gateText }, [cephGateSet]: { "ceph-gate.sh": cephGateText }, [librarySet]: { "ceph-library.sh": libraryText } });
const readLocal = (target: string) => `${target}--namespace zcloud-storage get configmap ${gateSet} --output jsonpath={.data.cephfs-gate\\.sh}`;

describe("the local script-set stub of gates and drains", () => {
    test("the command carries the stub, the set's ConfigMap and hash and the arguments, not the script", () => {
        const command = localScriptCommand("cephfs-gate.sh", gateSet, gateArgs(["--context", "prod"]));
        const bundle = cephScriptBundle("cephfs-gate.sh");
        assert.match(gateSet, /^ceph-fs-scripts-cephfs-gate-[0-9a-f]{12}$/);
        assert.equal(gateSet.slice(-12), bundle.id);
        assert.ok(command.includes(`' cephfs-gate ${gateSet} ${bundle.sha256} --namespace zcloud-storage `), command);
        assert.ok(!command.includes("ck_kube_target") && !command.includes("gs_admin_pod"), "no line of cephfs-kube.sh or cephfs-gate.sh");
        assert.ok(Buffer.byteLength(command) < 2000, `${Buffer.byteLength(command)} bytes`);
        assert.ok(bundle.text.length > 5000, "the set it replaces is the script text");
    });

    test("runs the set read from its ConfigMap as cephfs-gate with the arguments intact (the selector's spaces and parentheses)", async () => {
        const k = standInKubectl(sets());
        const r = await run(localScriptCommand("cephfs-gate.sh", gateSet, gateArgs(["--context", "prod"])), k);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(k.calls(), [
            readLocal("--context prod "),
            `--context prod --namespace zcloud-storage get deployments --selector ${selector} --output jsonpath={range .items[*]}{.metadata.name} {.status.availableReplicas}{"\\n"}{end}`,
            `--context prod --namespace zcloud-storage get configmap ${librarySet} --output jsonpath={.data.ceph-library\\.sh}`,
            `--context prod --namespace zcloud-storage get configmap ${cephGateSet} --output jsonpath={.data.ceph-gate\\.sh}`,
            `--context prod --namespace zcloud-storage get pods --selector app=ceph-admin --field-selector status.phase=Running --output jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\\n"}{end}`,
            `--context prod --namespace zcloud-storage exec admin-0 -- sh -c zc_lib() { :; }\nzc_lib; echo gate-ran "$@" ceph-gate mon-quorum --id b --fsid 0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90 --timeout 0`,
        ]);
        // the library, then the set, as one script
        assert.equal(r.stdout, 'exec: [sh] [-c] [zc_lib() { :; }\nzc_lib; echo gate-ran "$@"] [ceph-gate] [mon-quorum] [--id] [b] [--fsid] [0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90] [--timeout] [0]\n');
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a missing ConfigMap (a delete run after its set was removed): refused loudly, nothing else asked or run", async () => {
        const k = standInKubectl({});
        const r = await run(localScriptCommand("cephfs-osd-remove.sh", "ceph-fs-scripts-cephfs-osd-remove-000000000000", ["--namespace", "zcloud-storage", "--fsid", "x", "--context", "prod"]), k);
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            'Error from server (NotFound): configmaps "ceph-fs-scripts-cephfs-osd-remove-000000000000" not found\nzcloud: cephfs-osd-remove: refused: cannot read its script set, ConfigMap ceph-fs-scripts-cephfs-osd-remove-000000000000 (see above); nothing was run\n',
        );
        assert.deepEqual(k.calls(), ["--context prod --namespace zcloud-storage get configmap ceph-fs-scripts-cephfs-osd-remove-000000000000 --output jsonpath={.data.cephfs-osd-remove\\.sh}"]);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("an altered or empty set: refused before it runs", async () => {
        for (const [text, reason] of [
            [cephScriptBundle("cephfs-gate.sh").text.replace("set -eu", "set -u"), `ConfigMap ${gateSet} does not hold script set ${cephScriptBundle("cephfs-gate.sh").sha256} (altered)`],
            ["", `ConfigMap ${gateSet} holds no cephfs-gate.sh`],
        ]) {
            const k = standInKubectl(sets(text));
            const r = await run(localScriptCommand("cephfs-gate.sh", gateSet, gateArgs(["--context", "prod"])), k);
            assert.equal(r.code, 1);
            assert.equal(r.stderr, `zcloud: cephfs-gate: refused: ${reason}; nothing was run\n`);
            assert.deepEqual(k.calls(), [readLocal("--context prod ")]);
            fs.rmSync(k.dir, { recursive: true, force: true });
        }
    });

    test("no kubernetes:context or kubeconfig: refused without asking any cluster", async () => {
        const k = standInKubectl(sets());
        const r = await run(localScriptCommand("cephfs-gate.sh", gateSet, gateArgs([])), k);
        assert.equal(r.code, 1);
        assert.equal(r.stderr, "zcloud: cephfs-gate: refused: cannot tell which Kubernetes cluster the stack's provider uses (neither kubernetes:context nor kubernetes:kubeconfig is set); nothing was run\n");
        assert.deepEqual(k.calls(), []);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a kubeconfig's content comes from the environment into a private file, never argv, and is removed", async () => {
        const k = standInKubectl(sets());
        const content = "apiVersion: v1\nkind: Config\n# token-abc123\n";
        const r = await run(localScriptCommand("cephfs-gate.sh", gateSet, gateArgs(["--kubeconfig-from-env"])), k, { ZCLOUD_DRAIN_KUBECONFIG: content });
        assert.equal(r.code, 0, r.stderr);
        const calls = k.calls();
        assert.equal(calls.length, 6);
        assert.ok(calls.every((c) => !c.includes("token-abc123")));
        assert.match(calls[0], new RegExp(`^--kubeconfig ${k.dir}/zcloud-kubeconfig\\.\\w+ --namespace zcloud-storage get configmap ${gateSet} `));
        // every call, the stub's and the set's, read the same content from its file
        // (written with printf '%s\n': one newline added to the content)
        assert.deepEqual(k.kubeconfigs(), Array(6).fill(createHash("sha256").update(`${content}\n`).digest("hex")));
        assert.deepEqual(fs.readdirSync(k.dir).filter((f) => f.startsWith("zcloud-kubeconfig.")), [], "no kubeconfig file left");
        fs.rmSync(k.dir, { recursive: true, force: true });
    });
});
