/**
 * Engine tier: the control plane of controlplane.sh (real etcd, kube-apiserver, controllers,
 * scheduler; kwok for kubelets) schedules workloads as a cluster does, stops without leftovers,
 * and accepts every manifest `npm run plan -- <stack> --out` writes (real server-side validation),
 * the monitoring objects too: without the Prometheus Operator's CRDs a ServiceMonitor is refused
 * naming its kind; with them (generated from the Operator's API types, build-tools.sh
 * prometheus-operator-crds) every ServiceMonitor and PrometheusRule passes their schemas and reads
 * back as planned.
 * Run: node --import tsx --test test/engine/controlplane.test.ts (builds or reuses the tools).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { Kubectl, checkOperatorCrds, missingCrdsMessage, operatorCrds } from "../../components/monitoring/operatorCrds";

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
    const built = execFileSync("bash", [path.join(engineDir, "build-tools.sh"), "node", "kubernetes", "etcd", "kwok", "prometheus-operator-crds"], {
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

// A stack with monitoring on and every storage type (LVM plain and thin, CephFS, NFS, iSCSI).
const nodeNames = ["node1", "node2", "node3", "node4", "node5", "node6", "node7"];
const monitoredStack = (monitoring: Record<string, unknown>) => ({
    "zcloud-storage:ssh": {
        user: "root",
        privateKey: { secure: "v1:test-ciphertext" },
        hostKeys: Object.fromEntries(nodeNames.map((n) => [n, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ${n}`])),
    },
    "zcloud-storage:nodes": Object.fromEntries(nodeNames.map((n, i) => [n, { address: `10.0.0.${11 + i}` }])),
    "zcloud-storage:lvm": [
        { name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] } },
        { name: "thin", hosts: { node2: ["/dev/disk/by-id/wwn-0x2"] }, thin: {} },
    ],
    "zcloud-storage:cephfs": [{ name: "shared-fs", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"] } }],
    "zcloud-storage:nfs": [{ name: "nas", server: "10.0.0.60", path: "/exports/k8s" }],
    "zcloud-storage:iscsi": [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: ["node6", "node7"] }],
    "zcloud-storage:monitoring": monitoring,
});
const monitoringCrds = ["servicemonitors", "podmonitors", "prometheusrules"].map((p) => `crd/${p}.monitoring.coreos.com`);

/** `npm run plan -- <file> --out <dir>` of a stack file written from `config`; the --out directory. */
function planStack(name: string, config: Record<string, unknown>): string {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `zcloud-plan-${name}-`));
    const file = path.join(scratch, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, yaml.dump({ config }));
    sh(`npm run --silent plan -- "${file}" --out "${path.join(scratch, "out")}" >/dev/null`);
    return path.join(scratch, "out");
}
const manifest = (out: string, file: string) => yaml.load(fs.readFileSync(path.join(out, "manifests", file), "utf8")) as Record<string, any>;

let monitored: string | undefined;
const monitoredOut = () => (monitored ??= planStack("monitored", monitoredStack({ labels: { release: "kube-prometheus-stack" } })));
/** The Prometheus Operator's objects among the plan's manifests (manifests/zcloud-storage/<kind>-<name>.yaml). */
const operatorObjects = (out: string) =>
    fs
        .readdirSync(path.join(out, "manifests", "zcloud-storage"))
        .filter((f) => /^(servicemonitor|podmonitor|prometheusrule)-/.test(f))
        .sort()
        .map((f) => `zcloud-storage/${f}`);
const serviceMonitors = [
    "zcloud-storage/servicemonitor-ceph-shared-fs-metrics.yaml",
    "zcloud-storage/servicemonitor-topolvm-controller-metrics.yaml",
    "zcloud-storage/servicemonitor-topolvm-node-metrics.yaml",
];
after(() => {
    if (monitored) fs.rmSync(path.dirname(monitored), { recursive: true, force: true });
});

test("without the Prometheus Operator's CRDs a ServiceMonitor is refused, naming its kind and version", () => {
    const out = monitoredOut();
    // The metrics Services' ServiceMonitors (TopoLVM's node and controller, the CephFS storage's) and PrometheusRules.
    assert.deepEqual(operatorObjects(out).filter((f) => !f.includes("/prometheusrule-")), serviceMonitors);
    assert.ok(operatorObjects(out).some((f) => f.includes("/prometheusrule-")), operatorObjects(out).join(" "));
    sh(`kubectl apply -f "${path.join(out, "manifests", "_cluster", "namespace-zcloud-storage.yaml")}" >/dev/null`);
    const file = path.join(out, "manifests", serviceMonitors[2]);
    const r = spawnSync("bash", ["-c", `. "${envFile}" && kubectl --kubeconfig "${dir}/kubeconfig" apply -f "${file}"`], { encoding: "utf8" });
    assert.notEqual(r.status, 0, r.stdout);
    // kubectl's words (the API server has no such resource: 404 "the server could not find the
    // requested resource"); the program will turn them into a clear line.
    assert.equal(
        r.stderr.trim(),
        `error: resource mapping not found for name: "topolvm-node-metrics" namespace: "zcloud-storage" from "${file}": ` +
            `no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"\nensure CRDs are installed first`,
    );
    // The program's own check (preview and up) asks the same API server first, with the real
    // kubectl, and stops with its one line instead.
    assert.deepEqual(checkOperatorCrds({ kubeconfigPath: `${dir}/kubeconfig` }, engineKubectl), { missing: operatorCrds });
    assert.match(missingCrdsMessage(operatorCrds), /^the cluster has no servicemonitors\.monitoring\.coreos\.com and no prometheusrules\.monitoring\.coreos\.com: /);
});

/** The engine tools' kubectl, as the program's CRD check runs it. */
const engineKubectl: Kubectl = (args) => {
    const r = spawnSync("bash", ["-c", `. "${envFile}" && kubectl "$@"`, "kubectl", ...args], { encoding: "utf8" });
    return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
};

test("with the CRDs, every manifest of a stack with monitoring on passes; the CRD schemas are enforced", () => {
    sh(`kubectl apply --server-side -f "$ZCLOUD_PROMETHEUS_OPERATOR_CRDS" >/dev/null`);
    sh(`kubectl wait --for condition=Established --timeout 60s ${monitoringCrds.join(" ")} >/dev/null`);
    assert.deepEqual(checkOperatorCrds({ kubeconfigPath: `${dir}/kubeconfig` }, engineKubectl), { missing: [] });
    const out = monitoredOut();
    const result = sh(`bash "${path.join(engineDir, "dry-run-apply.sh")}" "${dir}/kubeconfig" "${out}"`);
    const lines = result.trim().split("\n");
    assert.ok(lines.every((l) => l.startsWith("ok ")), result);
    for (const f of operatorObjects(out)) assert.ok(lines.includes(`ok ${f}`), `${f} not checked:\n${result}`);
    // The schema bites: an unknown field and an action the Operator does not know are refused.
    const sm = fs.readFileSync(path.join(out, "manifests", serviceMonitors[0]), "utf8");
    for (const [from, to, refusal] of [
        ["honorLabels:", "honourLabels:", 'strict decoding error: unknown field "spec.endpoints[0].honourLabels"'],
        ["action: replace", "action: substitute", 'spec.endpoints[0].relabelings[0].action: Unsupported value: "substitute"'],
    ]) {
        assert.ok(sm.includes(from), `${from} not in the ServiceMonitor:\n${sm}`);
        const r = spawnSync("bash", ["-c", `. "${envFile}" && kubectl --kubeconfig "${dir}/kubeconfig" apply --dry-run=server -f -`], { input: sm.replace(from, to), encoding: "utf8" });
        assert.notEqual(r.status, 0, r.stdout);
        assert.ok(r.stderr.includes(refusal), r.stderr);
    }
});

test("with prometheusOperator: false every manifest passes, the rule files in ConfigMaps, no Operator object", () => {
    const out = planStack("files", monitoredStack({ prometheusOperator: false }));
    try {
        const result = sh(`bash "${path.join(engineDir, "dry-run-apply.sh")}" "${dir}/kubeconfig" "${out}"`);
        const lines = result.trim().split("\n");
        assert.ok(lines.every((l) => l.startsWith("ok ")), result);
        // The rule files (and scrape configs) travel in ConfigMaps instead (docs/monitoring.md).
        assert.ok(lines.some((l) => /^ok zcloud-storage\/configmap-zcloud-storage-\S*(rules|prometheus)/.test(l)), result);
        assert.deepEqual(lines.filter((l) => /servicemonitor|prometheusrule|podmonitor/.test(l)), []);
    } finally {
        fs.rmSync(path.dirname(out), { recursive: true, force: true });
    }
});

test("applied for real, the ServiceMonitors and PrometheusRules read back as planned", () => {
    const out = monitoredOut();
    for (const f of operatorObjects(out)) {
        sh(`kubectl apply --server-side --field-manager "zcloud-${path.basename(f, ".yaml")}" -f "${path.join(out, "manifests", f)}" >/dev/null`);
    }
    for (const f of operatorObjects(out)) {
        const planned = manifest(out, f);
        const live = JSON.parse(sh(`kubectl -n zcloud-storage get ${planned.kind.toLowerCase()} ${planned.metadata.name} -o json`));
        assert.deepEqual(live.spec, planned.spec, f);
        assert.deepEqual(live.metadata.labels, planned.metadata.labels, f);
    }
    const sm = JSON.parse(sh("kubectl -n zcloud-storage get servicemonitor ceph-shared-fs-metrics -o json"));
    assert.equal(sm.metadata.labels.release, "kube-prometheus-stack");
    assert.deepEqual(sm.spec.endpoints[0].relabelings, [{ targetLabel: "storage", replacement: "shared-fs", action: "replace" }]);
    const rules = JSON.parse(sh("kubectl -n zcloud-storage get prometheusrules -o json")).items;
    assert.equal(rules.length, operatorObjects(out).filter((f) => f.includes("/prometheusrule-")).length);
    for (const rule of rules) {
        assert.equal(rule.metadata.labels.release, "kube-prometheus-stack", rule.metadata.name);
        assert.ok(rule.spec.groups.length > 0 && rule.spec.groups.every((g: any) => g.rules.length > 0), JSON.stringify(rule.spec));
    }
});

test("stop ends every control plane process", () => {
    assert.equal(pids.length, 5);
    assert.ok(pids.every(alive), "a component died while running");
    sh(`bash "${controlplane}" stop "${dir}"`);
    assert.deepEqual(pids.filter(alive), []);
    assert.equal(fs.existsSync(path.join(dir, "pids")), false);
});
