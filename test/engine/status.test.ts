/**
 * `npm run status` against a real API server (the sandbox's control plane: etcd, kube-apiserver,
 * controller-manager, scheduler, kwok nodes) and real SSH nodes (sshd on 127.0.0.1 with loop
 * devices and their own LVM view), after the stack was applied the way `pulumi up` applies it:
 * each node's planned disk command run over SSH, then every manifest the plan renders
 * (`npm run plan -- <stack> --out`) applied with kubectl; kwok runs the pods. Healthy first, then
 * each hand-made fault is reported with its node, exit 1, and gone once undone: a node label
 * removed, a PV added to the storage's VG outside the config, a node daemon (lvmd) not Ready.
 *
 * Only the control plane's binaries are needed (test/engine/build-tools.sh node kubernetes etcd
 * kwok), not the Pulumi CLI and provider plugins.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { SandboxNode, startNodes, stopNodes } from "./nodes";
import { ToolRun, runTool, stackForNodes } from "../helpers/day2";
import { lvmQuiet, sh, tryRun } from "../helpers/sshNode";

const here = __dirname;
const root = path.resolve(here, "..", "..");
const storage = "local-fast";
const vg = `zcloud-${storage}`;
const namespace = "zcloud-storage";
let dir: string;
let env: NodeJS.ProcessEnv;
let nodes: Record<string, SandboxNode>;
let stackFile: string;
let controlPlane: string;

/** The environment the engine tools' env file gives (binaries first on PATH). */
function toolsEnv(): NodeJS.ProcessEnv {
    const out = execFileSync("bash", [path.join(here, "build-tools.sh"), "node", "kubernetes", "etcd", "kwok"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    const file = out.trim().split("\n").pop()!;
    const dump = execFileSync("bash", ["-c", 'set -a; . "$1"; env -0', "env", file], { encoding: "utf8" });
    return Object.fromEntries(
        dump
            .split("\0")
            .filter(Boolean)
            .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
}

const kubectl = (args: string[]) => execFileSync("kubectl", args, { encoding: "utf8", env });
const lvmOn = (node: string, args: string[]) => sh(args[0], args.slice(1), { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", node, "lvm") });

/** Runs a planned node command file on its node over SSH, as the command provider would. */
function runOnNode(node: string, file: string): void {
    const n = nodes[node];
    execFileSync("ssh", ["-F", "/dev/null", "-i", path.join(dir, "id_ed25519"), "-p", String(n.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", `root@${n.address}`, "sh -s"], {
        input: fs.readFileSync(file),
        stdio: ["pipe", "ignore", "pipe"],
    });
}

/** Applies the plan's manifests: Namespaces and CRDs first (established), then everything. */
function applyManifests(manifests: string): void {
    const files = fs.readdirSync(manifests).sort().map((f) => path.join(manifests, f));
    const first = files.filter((f) => /^kind: (Namespace|CustomResourceDefinition)$/m.test(fs.readFileSync(f, "utf8")));
    for (const f of first) {
        kubectl(["apply", "-f", f]);
    }
    kubectl(["wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"]);
    for (const f of files.filter((f) => !first.includes(f))) {
        kubectl(["apply", "--server-side", "--force-conflicts", "-f", f]);
    }
}

before(async () => {
    env = { ...toolsEnv(), ...lvmQuiet };
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-status-engine-"));
    controlPlane = path.join(dir, "controlplane");
    execFileSync("bash", [path.join(here, "controlplane.sh"), "start", controlPlane], { env, stdio: ["ignore", "ignore", "inherit"] });
    env.KUBECONFIG = path.join(controlPlane, "kubeconfig");
    nodes = await startNodes(dir, 2, 2, 64);
    for (const n of Object.keys(nodes)) {
        execFileSync("bash", [path.join(here, "controlplane.sh"), "add-node", controlPlane, n], { env, stdio: ["ignore", "ignore", "inherit"] });
    }
    const hosts = ["  zcloud-storage:lvm:", `    - name: ${storage}`, "      default: true", "      hosts:", ...Object.keys(nodes).map((n) => `        ${n}: [${nodes[n].devices[0]}]`)];
    stackFile = path.join(dir, "Pulumi.status.yaml");
    fs.writeFileSync(stackFile, stackForNodes(nodes, hosts));
    const out = path.join(dir, "out");
    execFileSync(process.execPath, ["--import", "tsx", path.join(root, "tools", "plan.ts"), stackFile, "--out", out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    // Disk commands first, then the objects (labels included), as the dependency graph orders them.
    for (const n of Object.keys(nodes)) {
        runOnNode(n, path.join(out, "node-commands", `${storage}-${n}-disks.create.sh`));
    }
    applyManifests(path.join(out, "manifests"));
});

after(() => {
    if (controlPlane) {
        tryRun("bash", [path.join(here, "controlplane.sh"), "stop", controlPlane], env);
    }
    if (dir) {
        stopNodes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

function status(json = true): Promise<ToolRun> {
    return runTool("status", [stackFile, "--identity", path.join(dir, "id_ed25519"), ...(json ? ["--json"] : [])], env);
}

/** Problem lines as `kind: storage: node: object: message`. */
function problems(r: ToolRun): string[] {
    const out = JSON.parse(r.stdout) as { storages: Array<{ name: string; problems: Array<{ kind: string; node: string | null; object: string; message: string }> }> };
    return out.storages.flatMap((s) => s.problems.map((p) => `${p.kind}: ${s.name}: ${p.node ?? "-"}: ${p.object}: ${p.message}`));
}

/** Status until healthy: the scheduler, the DaemonSet controller and kwok take a few seconds. */
async function healthy(): Promise<ToolRun> {
    let r = await status();
    for (let i = 0; i < 30 && r.code !== 0; i++) {
        await new Promise((res) => setTimeout(res, 2000));
        r = await status();
    }
    assert.equal(r.code, 0, `not healthy:\n${r.code === 2 ? r.stdout : problems(r).join("\n")}\n${r.stderr}`);
    return r;
}

test("after the stack is applied: every storage healthy, exit 0, VG per node in the table", async () => {
    const r = await healthy();
    const out = JSON.parse(r.stdout) as { storages: Array<{ name: string; type: string; healthy: boolean }> };
    assert.deepEqual(out.storages.map((s) => [s.name, s.type, s.healthy]), [[storage, "lvm", true]]);
    const table = await status(false);
    assert.equal(table.code, 0, table.stderr);
    assert.ok(table.stdout.includes(`${storage} (lvm): healthy; StorageClass ${storage} (default)`), table.stdout);
    assert.match(table.stdout, new RegExp(`node1 +yes +yes +yes +60 MiB +60 MiB +0 +- +${nodes.node1.devices[0]}`));
});

test("a node label removed by hand: reported on its node, exit 1", async () => {
    kubectl(["label", "node", "node1", "storage.zcloud.io/lvm-"]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        const lines = problems(r);
        assert.ok(lines.includes(`drift: ${storage}: node1: label storage.zcloud.io/lvm: missing (expected ${storage})`), lines.join("\n"));
        // The DaemonSets select on the label: once their pods have left node1, status names that
        // too (how soon is the controller's business), always on node1.
        assert.ok(lines.every((l) => l.includes(": node1: ")), `only node1 is affected:\n${lines.join("\n")}`);
    } finally {
        kubectl(["label", "node", "node1", `storage.zcloud.io/lvm=${storage}`]);
    }
    await healthy();
});

test("a PV added to the storage's VG outside the config: reported with its node and device, exit 1", async () => {
    const extra = nodes.node2.devices[1];
    lvmOn("node2", ["vgextend", "-q", vg, extra]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`drift: ${storage}: node2: ${extra}: in VG ${vg} but not declared`]);
    } finally {
        lvmOn("node2", ["vgreduce", "-q", vg, extra]);
        lvmOn("node2", ["pvremove", "-q", extra]);
    }
    await healthy();
});

test("a node daemon not Ready: reported with its node and pod, exit 1", async () => {
    const pods = JSON.parse(kubectl(["get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=lvmd", "--field-selector", "spec.nodeName=node2", "-o", "json"])) as {
        items: Array<{ metadata: { name: string } }>;
    };
    assert.equal(pods.items.length, 1, "one lvmd pod on node2");
    const pod = pods.items[0].metadata.name;
    const setReady = (value: string) => kubectl(["patch", "pod", pod, "-n", namespace, "--subresource=status", "-p", JSON.stringify({ status: { conditions: [{ type: "Ready", status: value }] } })]);
    setReady("False");
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`degraded: ${storage}: node2: pod ${pod}: lvmd pod is not Ready (phase Running)`]);
    } finally {
        setReady("True");
    }
    await healthy();
});
