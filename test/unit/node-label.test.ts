import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { nodeLabelFieldManager, nodeLabelManifest, nodeLabelScripts } from "../../components/node/nodeLabel";

describe("node label command", () => {
    it("applies a Node with only the storage's label and devices annotation", () => {
        assert.deepEqual(JSON.parse(nodeLabelManifest({ node: "n1", type: "cephfs", storage: "fs", devices: ["/dev/sdb", "/dev/sdc"] })), {
            apiVersion: "v1",
            kind: "Node",
            metadata: { name: "n1", labels: { "storage.zcloud.io/cephfs": "fs" }, annotations: { "storage.zcloud.io/cephfs-devices": "/dev/sdb,/dev/sdc" } },
        });
    });

    it("has a field manager of its own, not the NodePatch's zcloud-<storage>", () => {
        assert.equal(nodeLabelFieldManager("fast"), "zcloud-storage/fast");
        assert.notEqual(nodeLabelFieldManager("fast"), "zcloud-fast");
    });

    it("targets the provider's cluster: context and kubeconfig path in argv, a kubeconfig's content only from the environment", () => {
        const withPath = nodeLabelScripts("n1", "fast", { context: "prod admin", kubeconfigPath: "/srv/kube/prod.yaml" });
        assert.match(withPath.create, /^set -eu;n=\$\(kubectl --context 'prod admin' --kubeconfig \/srv\/kube\/prod.yaml get node n1 .*;kubectl --context 'prod admin' --kubeconfig \/srv\/kube\/prod.yaml apply --server-side --field-manager=zcloud-storage\/fast -f - >\/dev\/null$/);
        const withContent = nodeLabelScripts("n1", "fast", { kubeconfigContent: "apiVersion: v1\nsecret" });
        assert.ok(!withContent.create.includes("secret") && !withContent.delete.includes("secret"), "the content is not in the command");
        assert.match(withContent.create, /^set -eu;f=\$\(umask 077;mktemp\);trap 'rm -f "\$f"' 0;printf '%s\\n' "\$ZCLOUD_DRAIN_KUBECONFIG" >"\$f";n=\$\(kubectl --kubeconfig "\$f" get node n1 /);
        assert.match(withContent.delete, /^set -eu;f=\$\(umask 077;mktemp\);.*n=\$\(kubectl --kubeconfig "\$f" get node n1 --ignore-not-found /);
    });

    // The scripts run by a POSIX shell against a kubectl that records its calls: what each phase
    // asks of the API server, and that an unreachable cluster fails the delete instead of skipping it.
    const runWith = (script: string, kubectl: string, stdin = "", env: NodeJS.ProcessEnv = {}) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-label-"));
        try {
            fs.writeFileSync(path.join(dir, "kubectl"), `#!/bin/sh\n{ printf '%s\\n' "$*"; [ "$1" != --kubeconfig ] || { stat -c %a "$2"; cat "$2"; }; cat; } >>"${dir}/calls"\n${kubectl}\n`, { mode: 0o755 });
            let status = 0;
            let stdout = "";
            try {
                stdout = execFileSync("/bin/sh", ["-c", script], { input: stdin, env: { PATH: `${dir}:/usr/bin:/bin`, ...env }, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
            } catch (e) {
                status = (e as { status: number }).status;
            }
            const calls = fs.existsSync(path.join(dir, "calls")) ? fs.readFileSync(path.join(dir, "calls"), "utf8") : "";
            return { status, stdout, calls };
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    };

    const GET = "get node n1 --ignore-not-found -o jsonpath={.metadata.name}{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}";

    it("create: checks the node exists and was not made by client-side apply, then applies its stdin; prints nothing", () => {
        const { create } = nodeLabelScripts("n1", "fast", {});
        const ok = runWith(create, 'case "$1" in get) printf n1 ;; esac', '{"kind":"Node"}');
        assert.deepEqual([ok.status, ok.stdout], [0, ""]);
        assert.equal(ok.calls, `${GET}\napply --server-side --field-manager=zcloud-storage/fast -f -\n{"kind":"Node"}`);
        for (const answer of ["true", "printf 'n1{\"apiVersion\":\"v1\"}'", "exit 1"]) {
            const refused = runWith(create, `case "$1" in get) ${answer} ;; esac`, '{"kind":"Node"}');
            assert.equal(refused.status, 1, answer);
            assert.equal(refused.calls, `${GET}\n`, `no apply after: ${answer}`);
        }
    });

    it("delete: applies the bare Node under the same manager, skips a node that is gone, fails when the cluster cannot be asked", () => {
        const { delete: del } = nodeLabelScripts("n1", "fast", {});
        const ok = runWith(del, 'case "$1" in get) printf n1 ;; esac');
        assert.equal(ok.status, 0);
        assert.equal(ok.calls, `${GET}\napply --server-side --field-manager=zcloud-storage/fast -f -\n{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`);
        const gone = runWith(del, "true");
        assert.deepEqual([gone.status, gone.calls], [0, `${GET}\n`]);
        const unreachable = runWith(del, 'case "$1" in get) exit 1 ;; esac');
        assert.equal(unreachable.status, 1);
        assert.equal(unreachable.calls, `${GET}\n`);
        const clientSide = runWith(del, `case "$1" in get) printf 'n1{}' ;; esac`);
        assert.deepEqual([clientSide.status, clientSide.calls], [1, `${GET}\n`]);
    });

    it("a kubeconfig's content reaches kubectl as a private file, removed afterwards", () => {
        const { create } = nodeLabelScripts("n1", "fast", { kubeconfigContent: "x" });
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-label-tmp-"));
        try {
            const r = runWith(create, 'case "$3" in get) printf n1 ;; esac', "{}", { ZCLOUD_DRAIN_KUBECONFIG: "apiVersion: v1 # the content", TMPDIR: tmp });
            assert.equal(r.status, 0);
            assert.match(r.calls, /^--kubeconfig \/\S+ get node n1 --ignore-not-found -o \S+\n600\napiVersion: v1 # the content\n--kubeconfig \S+ apply --server-side/);
            assert.deepEqual(fs.readdirSync(tmp), [], "the file is gone after the command");
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });
});
