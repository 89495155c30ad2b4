// cephfs-gate.sh, the local side of a roll gate: which cluster it asks, its script set and the
// storage's shared library (each checked against the id its ConfigMap's name ends with), waiting
// for an admin pod, and handing the gate's arguments to ceph-gate.sh in that pod. A stand-in
// kubectl records its calls (the Ceph tier runs the gates on real daemons).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

const script = path.join(__dirname, "../../components/node/cephfs-gate.sh");
const gateArgs = ["mon-quorum", "--id", "b", "--fsid", "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90", "--timeout", "0"];
/** A ConfigMap's name for a text as the program names it: the first 12 hex digits of its sha256 (the file ends in a newline). */
const named = (prefix: string, text: string) => `${prefix}-${createHash("sha256").update(text + "\n").digest("hex").slice(0, 12)}`;
const libraryText = "zc_lib() { :; }";
const setText = 'zc_lib; echo gate-ran "$@"';
const library = named("ceph-fs-scripts-library", libraryText);
const set = named("ceph-fs-scripts-gate", setText);
const base = ["--namespace", "zcloud-storage", "--admin-selector", "app=ceph-admin", "--script-configmap", set, "--library-configmap", library];

/**
 * kubectl answering: the library and the set (when ZCLOUD_TEST_CM is set; ZCLOUD_TEST_LIBRARY
 * replaces the library's text), the pods listed in ZCLOUD_TEST_PODS, exec echoing its args.
 */
function standInKubectl(): { dir: string; calls: () => string[] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-gate-kubectl-"));
    fs.writeFileSync(
        path.join(dir, "kubectl"),
        `#!/bin/sh
printf '%s\\0' "$*" >>"${dir}/calls"
case "$*" in
    *"get configmap"*"ceph-library"*) [ -n "\${ZCLOUD_TEST_CM:-}" ] || { echo 'Error from server (NotFound): configmaps "x" not found' >&2; exit 1; }; printf '%s' "\${ZCLOUD_TEST_LIBRARY:-${libraryText}}" ;;
    *"get configmap"*) [ -n "\${ZCLOUD_TEST_CM:-}" ] || { echo 'Error from server (NotFound): configmaps "x" not found' >&2; exit 1; }; printf '%s' '${setText}' ;;
    *"get pods"*) printf '%b' "\${ZCLOUD_TEST_PODS:-}" ;;
    *"get deployments"*) [ "\${ZCLOUD_TEST_DEPLOYMENTS:-}" != fail ] || { echo 'error: You must be logged in to the server (Unauthorized)' >&2; exit 1; }; printf '%b' "\${ZCLOUD_TEST_DEPLOYMENTS:-}" ;;
    *" exec "*) exit 0 ;;
esac
`,
        { mode: 0o755 },
    );
    return { dir, calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").split("\0").slice(0, -1) };
}

function gate(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env: { PATH: "/usr/bin:/bin", ...env } }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr })),
    );
}

describe("cephfs-gate.sh", () => {
    test("bad arguments: usage, exit 2, before any kubectl call", async () => {
        for (const args of [[...base], base.filter((a) => a !== "--admin-selector" && a !== "app=ceph-admin").concat(["--", ...gateArgs]), [...base.map((a) => (a.startsWith("ceph-fs-") ? "x;reboot" : a)), "--", ...gateArgs]]) {
            const r = await gate(args);
            assert.equal(r.code, 2, args.join(" "));
            assert.match(r.stderr, /^usage: cephfs-gate.sh /);
        }
    });

    test("no kubernetes:context or kubeconfig: refused, nothing asked of any cluster", async () => {
        const k = standInKubectl();
        const r = await gate([...base, "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin` });
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^zcloud: gate mon-quorum --id b .*: refused: cannot tell which Kubernetes cluster the stack's provider uses .*no daemon was restarted after this gate\n$/);
        assert.ok(!fs.existsSync(path.join(k.dir, "calls")));
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a missing library refuses before any pod is looked for", async () => {
        const k = standInKubectl();
        const r = await gate([...base, "--context", "prod", "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin` });
        assert.equal(r.code, 1);
        assert.match(r.stderr, new RegExp(`refused: cannot read the gate's library script set, ConfigMap ${library} \\(see above\\); no daemon was restarted after this gate\n$`));
        assert.deepEqual(k.calls(), [`--context prod --namespace zcloud-storage get configmap ${library} --output jsonpath={.data.ceph-library\\.sh}`]);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("an altered library (its text not the id its name ends with) refuses before any pod is looked for", async () => {
        const k = standInKubectl();
        const r = await gate([...base, "--context", "prod", "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "1", ZCLOUD_TEST_LIBRARY: "zc_lib() { reboot; }" });
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            `zcloud: gate ${gateArgs.join(" ")}: refused: ConfigMap ${library} does not hold the gate's library script set ${library.slice(-12)} (altered); no daemon was restarted after this gate\n`,
        );
        assert.deepEqual(
            k.calls().map((c) => c.split(" ").slice(4, 7).join(" ")),
            [`get configmap ${library}`, `get configmap ${set}`],
        );
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a set whose name names another text refuses before any pod is looked for", async () => {
        const k = standInKubectl();
        const other = [...base.slice(0, 5), "ceph-fs-scripts-gate-0123456789ab", ...base.slice(6)];
        const r = await gate([...other, "--context", "prod", "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "1" });
        assert.equal(r.code, 1);
        assert.match(r.stderr, /refused: ConfigMap ceph-fs-scripts-gate-0123456789ab does not hold the gate's script set 0123456789ab \(altered\); no daemon was restarted after this gate\n$/);
        assert.ok(!k.calls().some((c) => c.includes(" get pods ")));
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("no running admin pod within the bound: exit 3, naming the selector", async () => {
        const k = standInKubectl();
        const r = await gate([...base, "--context", "prod", "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "1" });
        assert.equal(r.code, 3);
        assert.match(r.stderr, /refused: no running admin pod of the storage \(app=ceph-admin\) after 0s/);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    test("a pod being deleted is passed over; the gate runs in a running one with its arguments as given", async () => {
        const k = standInKubectl();
        const pods = "admin-old 2026-11-26T22:00:00Z\\nadmin-new \\n";
        const r = await gate([...base, "--context", "prod", "--", ...gateArgs], { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "1", ZCLOUD_TEST_PODS: pods });
        assert.equal(r.code, 0, r.stderr);
        const exec = k.calls().find((c) => c.includes(" exec "));
        // the library, then the set, as one script
        assert.equal(exec, `--context prod --namespace zcloud-storage exec admin-new -- sh -c ${libraryText}\n${setText} ceph-gate ${gateArgs.join(" ")}`);
        fs.rmSync(k.dir, { recursive: true, force: true });
    });

    describe("--daemons (the roll's first gate): passes without asking Ceph while no daemon of the storage runs", () => {
        const selector = "storage.zcloud.io/storage=fs,app.kubernetes.io/component in (ceph-mon,ceph-mgr,ceph-osd,ceph-mds)";
        const first = [...base, "--context", "prod", "--daemons", selector, "--", "roll-start", "--fsid", "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90", "--timeout", "0"];
        const list = `--context prod --namespace zcloud-storage get deployments --selector ${selector} --output jsonpath={range .items[*]}{.metadata.name} {.status.availableReplicas}{"\\n"}{end}`;
        const withDeployments = async (deployments: string) => {
            const k = standInKubectl();
            const r = await gate(first, { PATH: `${k.dir}:/usr/bin:/bin`, ZCLOUD_TEST_CM: "1", ZCLOUD_TEST_PODS: "admin-0 \\n", ZCLOUD_TEST_DEPLOYMENTS: deployments });
            const calls = k.calls();
            fs.rmSync(k.dir, { recursive: true, force: true });
            return { ...r, calls };
        };

        test("no daemon Deployment yet (the storage's creation): passes; no script set read, no pod looked for", async () => {
            const r = await withDeployments("");
            assert.equal(r.code, 0, r.stderr);
            assert.equal(r.stdout, `zcloud: gate roll-start --fsid 0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90 --timeout 0: no daemon Deployment of the storage exists yet (${selector}): a new storage, no running daemon to disrupt; passed\n`);
            assert.deepEqual(r.calls, [list]);
        });

        test("Deployments without an available pod (a creation that failed before any daemon ran): passes naming them", async () => {
            const r = await withDeployments("ceph-fs-mon-a \\nceph-fs-mon-b 0\\n");
            assert.equal(r.code, 0, r.stderr);
            assert.match(r.stdout, /: no daemon Deployment of the storage has an available pod \(ceph-fs-mon-a ceph-fs-mon-b\): no running daemon to disrupt; passed\n$/);
            assert.deepEqual(r.calls, [list]);
        });

        test("one daemon running: Ceph is asked (the gate runs in the admin pod)", async () => {
            const r = await withDeployments("ceph-fs-mon-a 1\\nceph-fs-mon-b \\n");
            assert.equal(r.code, 0, r.stderr);
            assert.equal(r.calls[0], list);
            assert.ok(r.calls.some((c) => c.includes(` exec admin-0 -- sh -c ${libraryText}\n${setText} ceph-gate roll-start `)), r.calls.join("\n"));
        });

        test("the Deployments cannot be listed: refused, never guessed", async () => {
            const r = await withDeployments("fail");
            assert.equal(r.code, 1);
            assert.match(r.stderr, /refused: cannot list the storage's daemon Deployments \(storage\.zcloud\.io\/storage=fs,.*, see above\); no daemon was restarted after this gate\n$/);
            assert.deepEqual(r.calls, [list]);
        });
    });
});
