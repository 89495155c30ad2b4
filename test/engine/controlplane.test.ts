/**
 * Engine tier: the control plane of controlplane.sh (real etcd, kube-apiserver, controllers,
 * scheduler; kwok for kubelets) schedules workloads as a cluster does, stops without leftovers,
 * and accepts every manifest `npm run plan -- <stack> --out` writes (real server-side validation).
 * Run: node --import tsx --test test/engine/controlplane.test.ts (builds or reuses the tools).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const engineDir = __dirname;
const controlplane = path.join(engineDir, "controlplane.sh");
let envFile: string;
let dir: string;
let pids: number[] = [];

/** Runs a bash command with the engine tools' env sourced; throws with its output on failure. */
function sh(command: string, timeoutMs = 180_000): string {
    const r = spawnSync("bash", ["-c", `. "${envFile}" && export KUBECONFIG="${dir}/kubeconfig" && ${command}`], {
        encoding: "utf8",
        timeout: timeoutMs,
    });
    if (r.status !== 0) {
        throw new Error(`${command} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
    }
    return r.stdout;
}

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

interface PodView {
    name: string;
    node: string;
    phase: string;
    ready: boolean;
}

function pods(selector: string): PodView[] {
    const list = JSON.parse(sh(`kubectl get pods -l ${selector} -o json`));
    return list.items.map((p: any) => ({
        name: p.metadata.name,
        node: p.spec.nodeName,
        phase: p.status.phase,
        ready: (p.status.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True"),
    }));
}

/** A workload of one placeholder container whose pods carry app=<name> (kwok runs no image). */
function workload(apiVersion: string, kind: string, name: string, spec: object, podSpec: object): object {
    const labels = { app: name };
    return {
        apiVersion,
        kind,
        metadata: { name, namespace: "default" },
        spec: {
            ...spec,
            ...(kind === "Job" ? {} : { selector: { matchLabels: labels } }),
            template: { metadata: { labels }, spec: { ...podSpec, containers: [{ name: "c", image: "example.invalid/none:1" }] } },
        },
    };
}

before(() => {
    const built = execFileSync("bash", [path.join(engineDir, "build-tools.sh"), "node", "kubernetes", "etcd", "kwok"], {
        encoding: "utf8",
        timeout: 3_600_000,
    });
    envFile = built.trim().split("\n").pop()!;
    assert.ok(fs.existsSync(envFile), `build-tools.sh printed no env file:\n${built}`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-controlplane-"));
    sh(`bash "${controlplane}" start "${dir}"`);
    pids = fs.readdirSync(path.join(dir, "pids")).map((f) => Number(fs.readFileSync(path.join(dir, "pids", f), "utf8")));
    // One node, then several at once, one of them existing already (kept, not created again).
    sh(`bash "${controlplane}" add-node "${dir}" engine-a && bash "${controlplane}" add-node "${dir}" engine-a engine-b`);
});

after(() => {
    if (dir) {
        sh(`bash "${controlplane}" stop "${dir}"`);
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the control plane serves a stamped version and both kwok nodes are Ready", () => {
    const version = JSON.parse(sh("kubectl version -o json")).serverVersion;
    assert.match(version.gitVersion, /^v\d+\.\d+\.\d+$/);
    const nodes = JSON.parse(sh("kubectl get nodes -o json")).items;
    assert.deepEqual(nodes.map((n: any) => n.metadata.name).sort(), ["engine-a", "engine-b"]);
    for (const n of nodes) {
        assert.equal(n.status.conditions.find((c: any) => c.type === "Ready")?.status, "True", n.metadata.name);
    }
});

test("a DaemonSet runs only on the selected node; a Deployment and a Job complete", () => {
    sh("kubectl label node engine-b zcloud-test/selected=yes");
    const workloads = [
        workload("apps/v1", "DaemonSet", "picky", {}, { nodeSelector: { "zcloud-test/selected": "yes" } }),
        workload("apps/v1", "Deployment", "spread", { replicas: 3 }, {}),
        workload("batch/v1", "Job", "once", {}, { restartPolicy: "Never" }),
    ];
    sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify({ apiVersion: "v1", kind: "List", items: workloads })}\nEOF`);
    sh("kubectl rollout status daemonset/picky --timeout=90s");
    sh("kubectl rollout status deployment/spread --timeout=90s");
    sh("kubectl wait --for=condition=Complete job/once --timeout=90s");
    const picky = pods("app=picky");
    assert.deepEqual(
        picky.map((p) => [p.node, p.phase, p.ready]),
        [["engine-b", "Running", true]],
    );
    const spread = pods("app=spread");
    assert.equal(spread.length, 3);
    assert.ok(spread.every((p) => p.phase === "Running" && p.ready && ["engine-a", "engine-b"].includes(p.node)), JSON.stringify(spread));
});

for (const stack of ["dev", "prod"]) {
    test(`every manifest of the ${stack} stack passes the API server's validation`, () => {
        const out = fs.mkdtempSync(path.join(os.tmpdir(), `zcloud-plan-${stack}-`));
        try {
            sh(`npm run --silent plan -- ${stack} --out "${out}" >/dev/null`);
            const result = sh(`bash "${path.join(engineDir, "dry-run-apply.sh")}" "${dir}/kubeconfig" "${out}"`);
            const lines = result.trim().split("\n");
            assert.equal(lines.length, fs.readdirSync(path.join(out, "manifests"), { recursive: true }).filter((f) => String(f).endsWith(".yaml")).length);
            assert.ok(lines.every((l) => l.startsWith("ok ")), result);
        } finally {
            fs.rmSync(out, { recursive: true, force: true });
        }
    });
}

test("stop ends every control plane process", () => {
    assert.equal(pids.length, 5);
    assert.ok(pids.every(alive), "a component died while running");
    sh(`bash "${controlplane}" stop "${dir}"`);
    assert.deepEqual(pids.filter(alive), []);
    assert.equal(fs.existsSync(path.join(dir, "pids")), false);
});
