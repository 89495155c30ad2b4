/**
 * zcloud-storage:monitoring in the planned graph (docs/monitoring.md): the metrics Services select
 * pods the program deploys, the ServiceMonitors select those Services, every workload an alert
 * watches is a planned workload of that kind and name, the Ceph metrics Job runs after the file
 * system; without the Operator one ConfigMap carries the same rules; and what it does to an
 * existing stack (nothing while off, only additions when turned on, a threshold change updates one
 * PrometheusRule in place).
 */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { alertNotes } from "../../tools/plan/alertNotes";
import { diffPlans } from "../../tools/plan/diff";
import { outFiles } from "../../tools/plan/outDir";
import { prometheusFiles } from "../../tools/plan/prometheusFiles";
import { CONFIG_MAP, DAEMON_SET, DEPLOYMENT, JOB, PlanRun, PlannedResource, baseConfig, nodesThrough, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { cephDaemonMoves, cephGateMoves, mergedUpdates } from "../helpers/labelMove";

const SERVICE = "kubernetes:core/v1:Service";
const SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor";
const PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule";
const MONITORING = "zcloud:storage:Monitoring";

const nodes = nodesThrough(7);
const hostKeys = Object.fromEntries(Object.keys(nodes).map((n) => [n, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ${n}`]));
const dev = (n: number) => `/dev/disk/by-id/wwn-0x${n}`;
const storages = {
    ...baseConfig,
    ssh: { ...baseConfig.ssh, hostKeys },
    nodes,
    "kubernetes:context": "prod-admin",
    lvm: [
        { name: "fast", hosts: { node1: [dev(1)] } },
        { name: "thin", hosts: { node2: [dev(2)] }, thin: {} },
    ],
    cephfs: [{ name: "shared-fs", hosts: { node3: [dev(3)], node4: [dev(4)], node5: [dev(5), dev(6)] } }],
    nfs: [{ name: "nas", server: "10.0.0.60", path: "/exports/k8s" }],
    iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", initiators: ["node6", "node7"] }],
};
const withMonitoring = (monitoring: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ ...storages, monitoring, ...extra });

/** The last commit before monitoring. */
const beforeMonitoringCommit = "aeb51a205d0f130126115ed035ac83450034d8cf";
const existing = plansBeforeAndNow(beforeMonitoringCommit, storages);

let on: PlanRun;
let files: PlanRun;
let tuned: PlanRun;
before(async () => {
    [on, files, tuned] = await Promise.all([
        planValues(withMonitoring({ labels: { release: "kube-prometheus-stack" } })),
        planValues(withMonitoring({ prometheusOperator: false, dashboards: false })),
        planValues(withMonitoring({ labels: { release: "kube-prometheus-stack" }, alerts: { volumeUsed: { warning: 70 } } })),
    ]);
    for (const r of [on, files, tuned]) assert.equal(r.error, undefined, r.error?.message);
});

type Inputs = Record<string, any>;
const inputs = (r: PlannedResource) => r.inputs as Inputs;
const matches = (selector: Record<string, string>, labels: Record<string, string> | undefined) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const podLabels = (r: PlannedResource) => inputs(r).spec.template.metadata.labels as Record<string, string>;
const workloads = (run: PlanRun) => [...resourcesOfType(run, DAEMON_SET), ...resourcesOfType(run, DEPLOYMENT)];
const rules = (run: PlanRun) => resourcesOfType(run, PROMETHEUS_RULE).flatMap((r) => inputs(r).spec.groups as Array<{ name: string; rules: Inputs[] }>);

describe("monitoring: the planned objects", () => {
    test("off: nothing of monitoring is planned", () => {
        const run = existing.now();
        assert.deepEqual(run.resources.filter((r) => [SERVICE_MONITOR, PROMETHEUS_RULE, MONITORING].includes(r.type) || /metrics/.test(r.name)).map((r) => r.name), []);
    });

    test("each metrics Service selects the pods that serve the metrics, on their port", () => {
        const services = resourcesOfType(on, SERVICE).filter((s) => s.parent === resourcesOfType(on, MONITORING)[0].urn);
        assert.deepEqual(services.map((s) => inputs(s).metadata.name).sort(), ["ceph-shared-fs-metrics", "topolvm-controller-metrics", "topolvm-node-metrics"]);
        const served = new Map([
            ["topolvm-node-metrics", { workloads: ["topolvm-node"], ports: { metrics: 8080 } }],
            // topolvm-controller's own endpoint and its sidecars' --http-endpoint (no snapshotter: no storage takes snapshots).
            ["topolvm-controller-metrics", { workloads: ["topolvm-controller"], ports: { metrics: 8080, provisioner: 9809, resizer: 9810 } }],
            ["ceph-shared-fs-metrics", { workloads: ["ceph-shared-fs-mgr-a", "ceph-shared-fs-mgr-b"], ports: { metrics: 9283 } }],
        ]);
        for (const s of services) {
            const spec = inputs(s).spec;
            const want = served.get(inputs(s).metadata.name)!;
            const selected = workloads(on).filter((w) => matches(spec.selector, podLabels(w))).map((w) => inputs(w).metadata.name).sort();
            assert.deepEqual(selected, want.workloads, inputs(s).metadata.name);
            assert.deepEqual(spec.ports, Object.entries(want.ports).map(([name, port]) => ({ name, port, targetPort: port, protocol: "TCP" })));
            assert.equal(s.parent, resourcesOfType(on, MONITORING)[0].urn);
        }
    });

    test("the controller metrics Service names each sidecar the Deployment runs on its --http-endpoint port, the snapshotter's only with snapshots", async () => {
        const snapshotting = await planValues(withMonitoring({}, { lvm: [{ name: "thin", hosts: { node2: [dev(2)] }, thin: { snapshots: true } }] }));
        assert.equal(snapshotting.error, undefined, snapshotting.error?.message);
        for (const run of [on, snapshotting]) {
            const controller = inputs(resourceNamed(run, "topolvm-controller", DEPLOYMENT)).spec.template.spec.containers as Inputs[];
            const endpoints = controller.flatMap((c) => [...(c.command ?? []), ...(c.args ?? [])].filter((a: string) => a.startsWith("--http-endpoint=:") && c.name !== "liveness-probe").map((a: string) => Number(a.split(":")[1])));
            const service = resourcesOfType(run, SERVICE).find((x) => inputs(x).metadata.name === "topolvm-controller-metrics")!;
            const ports = (inputs(service).spec.ports as Inputs[]).filter((p) => p.name !== "metrics").map((p) => p.port);
            assert.deepEqual(ports.sort(), endpoints.sort());
        }
        const service = resourcesOfType(snapshotting, SERVICE).find((x) => inputs(x).metadata.name === "topolvm-controller-metrics")!;
        assert.deepEqual((inputs(service).spec.ports as Inputs[]).map((p) => p.name), ["metrics", "provisioner", "resizer", "snapshotter"]);
        const monitor = inputs(resourceNamed(snapshotting, "topolvm-controller-metrics-servicemonitor")).spec;
        assert.deepEqual(monitor.endpoints.map((e: Inputs) => e.port), ["metrics", "provisioner", "resizer", "snapshotter"]);
    });

    test("each ServiceMonitor selects exactly its Service in the storage namespace, with the configured labels; Ceph's adds storage=<name>", () => {
        const services = resourcesOfType(on, SERVICE);
        for (const m of resourcesOfType(on, SERVICE_MONITOR)) {
            const spec = inputs(m).spec;
            assert.equal(inputs(m).metadata.labels.release, "kube-prometheus-stack");
            assert.deepEqual(spec.namespaceSelector, { matchNames: ["zcloud-storage"] });
            const selected = services.filter((s) => matches(spec.selector.matchLabels, inputs(s).metadata.labels));
            assert.deepEqual(selected.map((s) => inputs(s).metadata.name), [inputs(m).metadata.name]);
            assert.deepEqual(spec.endpoints.map((e: Inputs) => e.port), selected[0] && (inputs(selected[0]).spec.ports as Inputs[]).map((p) => p.name));
            assert.ok(m.dependencies.includes(selected[0].urn));
        }
        const ceph = inputs(resourceNamed(on, "ceph-shared-fs-metrics-servicemonitor")).spec.endpoints[0];
        assert.deepEqual(ceph.relabelings, [{ targetLabel: "storage", replacement: "shared-fs", action: "replace" }]);
        assert.equal(ceph.honorLabels, true);
    });

    test("every workload an alert watches is planned, of that kind and name", () => {
        const planned = new Set(workloads(on).map((w) => `${w.type === DAEMON_SET ? "daemonset" : "deployment"}/${inputs(w).metadata.name}`));
        const watched = rules(on).flatMap((g) =>
            g.rules.flatMap((r) => {
                const m = /kube_(daemonset|deployment)_status_[a-z_]+\{namespace="zcloud-storage",(?:daemonset|deployment)=~"([^"]+)"\}/.exec(r.expr);
                return m ? m[2].split("|").map((name) => `${m[1]}/${name}`) : [];
            }),
        );
        assert.deepEqual(watched.filter((w) => !planned.has(w)), []);
        // Every planned workload of the storages and drivers is watched by some alert.
        assert.deepEqual([...planned].filter((w) => !watched.includes(w)), []);
    });

    test("one PrometheusRule per storage and per driver, each with its one group; dashboards per type for the Grafana sidecar", () => {
        assert.deepEqual(resourcesOfType(on, PROMETHEUS_RULE).map((r) => inputs(r).metadata.name).sort(), [
            "zcloud-storage-alerts-fast",
            "zcloud-storage-alerts-nas",
            "zcloud-storage-alerts-san",
            "zcloud-storage-alerts-shared-fs",
            "zcloud-storage-alerts-thin",
            "zcloud-storage-driver-ceph-csi-cephfs",
            "zcloud-storage-driver-csi-driver-nfs",
            "zcloud-storage-driver-csi-sanlock-lvm",
            "zcloud-storage-driver-topolvm",
        ]);
        for (const r of resourcesOfType(on, PROMETHEUS_RULE)) {
            const [group] = inputs(r).spec.groups;
            assert.equal(inputs(r).spec.groups.length, 1);
            assert.ok(group.rules.every((rule: Inputs) => inputs(r).metadata.name.endsWith(`-${rule.labels.storage ?? rule.labels.driver}`)), group.name);
        }
        assert.deepEqual(rules(on).map((g) => g.name).sort(), [
            "zcloud-storage.cephfs.ceph-csi-cephfs",
            "zcloud-storage.cephfs.shared-fs",
            "zcloud-storage.iscsi.csi-sanlock-lvm",
            "zcloud-storage.iscsi.san",
            "zcloud-storage.lvm.fast",
            "zcloud-storage.lvm.thin",
            "zcloud-storage.lvm.topolvm",
            "zcloud-storage.nfs.csi-driver-nfs",
            "zcloud-storage.nfs.nas",
        ]);
        const dashboards = resourcesOfType(on, CONFIG_MAP).filter((c) => inputs(c).metadata.name.startsWith("zcloud-storage-dashboard-"));
        assert.deepEqual(dashboards.map((c) => inputs(c).metadata.labels.grafana_dashboard), ["1", "1", "1", "1"]);
        for (const c of dashboards) {
            const [file, text] = Object.entries(inputs(c).data as Record<string, string>)[0];
            const dashboard = JSON.parse(text);
            assert.equal(file, `${dashboard.uid}.json`);
            // The storage list comes from the metrics: every storage of the type, whichever stack made it.
            assert.match(dashboard.templating.list.find((v: Inputs) => v.name === "storage").query, /^label_values\(/);
        }
    });

    test("every alert has its runbook section in docs/monitoring.md, the anchor its runbook annotation names", () => {
        const doc = fs.readFileSync(path.resolve(__dirname, "../../docs/monitoring.md"), "utf8");
        const headings = new Set([...doc.matchAll(/^### (\w+)$/gm)].map((m) => m[1].toLowerCase()));
        const alerts = rules(on).flatMap((g) => g.rules);
        assert.deepEqual(alerts.filter((r) => r.annotations.runbook !== `docs/monitoring.md#${r.alert.toLowerCase()}` || !headings.has(r.alert.toLowerCase())).map((r) => r.alert), []);
    });

    test("the Ceph metrics Job turns the prometheus module on after the file system; no workload's pods change", () => {
        const job = resourceNamed(on, "shared-fs-metrics", JOB);
        assert.ok(job.dependencies.includes(resourceNamed(on, "shared-fs-filesystem", JOB).urn));
        const container = inputs(job).spec.template.spec.containers[0];
        assert.match(container.command.join(" "), /ceph-metrics\.sh/);
        assert.equal(container.command.at(-1), "enable");
        // The daemons' pods are those of a stack without monitoring.
        const before = existing.now();
        for (const w of workloads(before)) {
            assert.deepEqual(inputs(resourceNamed(on, w.name, w.type)).spec, inputs(w).spec, w.name);
        }
    });

    test("prometheusOperator: false: no CRD objects; one ConfigMap with the same rules and scrape configs for the metrics Services", () => {
        assert.deepEqual([...resourcesOfType(files, SERVICE_MONITOR), ...resourcesOfType(files, PROMETHEUS_RULE)], []);
        const maps = resourcesOfType(files, CONFIG_MAP).filter((c) => /^zcloud-storage-(driver-)?rules-/.test(inputs(c).metadata.name));
        assert.deepEqual(maps.map((c) => `${inputs(c).metadata.name}: ${Object.keys(inputs(c).data).sort().join(" ")}`).sort(), [
            "zcloud-storage-driver-rules-ceph-csi-cephfs: zcloud-storage-driver-rules-ceph-csi-cephfs.yaml",
            "zcloud-storage-driver-rules-csi-driver-nfs: zcloud-storage-driver-rules-csi-driver-nfs.yaml",
            "zcloud-storage-driver-rules-csi-sanlock-lvm: zcloud-storage-driver-rules-csi-sanlock-lvm.yaml",
            "zcloud-storage-driver-rules-topolvm: zcloud-storage-driver-rules-topolvm.yaml zcloud-storage-driver-scrape-topolvm.yaml",
            "zcloud-storage-rules-fast: zcloud-storage-rules-fast.yaml",
            "zcloud-storage-rules-nas: zcloud-storage-rules-nas.yaml",
            "zcloud-storage-rules-san: zcloud-storage-rules-san.yaml",
            "zcloud-storage-rules-shared-fs: zcloud-storage-rules-shared-fs.yaml zcloud-storage-scrape-shared-fs.yaml",
            "zcloud-storage-rules-thin: zcloud-storage-rules-thin.yaml",
        ]);
        const data = Object.assign({}, ...maps.map((c) => inputs(c).data)) as Record<string, string>;
        const ruleGroups = Object.entries(data).filter(([k]) => !k.includes("-scrape-")).flatMap(([, text]) => (yaml.load(text) as { groups: unknown[] }).groups);
        const byName = (groups: unknown[]) => [...(groups as Array<{ name: string }>)].sort((a, b) => a.name.localeCompare(b.name));
        assert.deepEqual(byName(ruleGroups), byName(rules(on)));
        const scrapes = Object.entries(data).filter(([k]) => k.includes("-scrape-")).flatMap(([, text]) => (yaml.load(text) as { scrape_configs: Inputs[] }).scrape_configs);
        assert.deepEqual(scrapes.map((c) => c.job_name).sort(), ["zcloud-storage/ceph-shared-fs-metrics", "zcloud-storage/topolvm-controller-metrics", "zcloud-storage/topolvm-node-metrics"]);
        // Each target keeps its Service's metrics ports by name: the controller's sidecars too.
        const controller = scrapes.find((c) => c.job_name.endsWith("topolvm-controller-metrics"))!;
        assert.deepEqual(controller.relabel_configs[1], { source_labels: ["__meta_kubernetes_endpoint_port_name"], regex: "metrics|provisioner|resizer", action: "keep" });
        const ceph = scrapes.find((c) => c.job_name.endsWith("ceph-shared-fs-metrics"))!;
        assert.deepEqual(ceph.relabel_configs.at(-1), { target_label: "storage", replacement: "shared-fs" });
        assert.equal(resourcesOfType(files, CONFIG_MAP).some((c) => inputs(c).metadata.name.startsWith("zcloud-storage-dashboard-")), false);
    });
});

describe("monitoring: stacks that share the storage namespace (sharedResources: external)", () => {
    const split: Record<string, PlanRun> = {};
    before(async () => {
        const fastLvm = { name: "fast", hosts: { node1: [dev(1)] } };
        const bulk = { name: "bulk", hosts: { node2: [dev(2)] } };
        const nas = { name: "nas", server: "10.0.0.60", path: "/exports/k8s" };
        const configs = {
            owner: { drivers: ["lvm", "nfs"], monitoring: {} },
            poolA: { ...baseConfig, sharedResources: "external", lvm: [fastLvm], monitoring: {} },
            poolB: { ...baseConfig, sharedResources: "external", lvm: [bulk], nfs: [nas], monitoring: {} },
        };
        for (const [name, values] of Object.entries(configs)) {
            split[name] = await planValues(values);
            assert.equal(split[name].error, undefined, split[name].error?.message);
        }
    });

    test("no two stacks make one object: each storage's alerts in its own stack, the drivers' alerts, metrics and dashboards in the owner's", () => {
        const objects = (run: PlanRun) => run.resources.filter((r) => r.custom && (r.inputs.metadata as { name?: string } | undefined)?.name).map((r) => `${r.type} ${(r.inputs.metadata as { name: string }).name}`);
        const seen = new Map<string, string>();
        const twice: string[] = [];
        for (const [stack, run] of Object.entries(split)) {
            for (const o of objects(run)) {
                if (seen.has(o)) twice.push(`${o}: ${seen.get(o)} and ${stack}`);
                seen.set(o, stack);
            }
        }
        assert.deepEqual(twice, []);
        const monitoringObjects = (run: PlanRun) =>
            objects(run)
                .filter((o) => /PrometheusRule|ServiceMonitor|-metrics$|dashboard/.test(o))
                .map((o) => o.split(" ")[1])
                .sort();
        assert.deepEqual(monitoringObjects(split.owner), ["topolvm-controller-metrics", "topolvm-controller-metrics", "topolvm-node-metrics", "topolvm-node-metrics", "zcloud-storage-dashboard-lvm", "zcloud-storage-dashboard-nfs", "zcloud-storage-driver-csi-driver-nfs", "zcloud-storage-driver-topolvm"]);
        assert.deepEqual(monitoringObjects(split.poolA), ["zcloud-storage-alerts-fast"]);
        assert.deepEqual(monitoringObjects(split.poolB), ["zcloud-storage-alerts-bulk", "zcloud-storage-alerts-nas"]);
    });
});

describe("monitoring: --out writes the files a Prometheus loads", () => {
    test("without the Operator: the ConfigMap's rule file and scrape configs, as they are; listed apart in index.txt", () => {
        const cm = inputs(resourceNamed(files, "zcloud-storage-rules-shared-fs", CONFIG_MAP));
        const written = prometheusFiles(files.resources);
        assert.equal(written.length, 11);
        assert.deepEqual(written.filter((f) => f.path.includes("shared-fs")), [
            { path: "prometheus/zcloud-storage-rules-shared-fs.yaml", text: cm.data["zcloud-storage-rules-shared-fs.yaml"] },
            { path: "prometheus/zcloud-storage-scrape-shared-fs.yaml", text: cm.data["zcloud-storage-scrape-shared-fs.yaml"] },
        ]);
        const index = outFiles(files.resources, () => "").find((f) => f.path === "index.txt")!.text;
        const listed = index.slice(index.indexOf("# For Prometheus (not applied; docs/monitoring.md):\n"));
        assert.match(listed, /\n {5}prometheus\/zcloud-storage-rules-shared-fs\.yaml {4}# alert rules\n/);
        assert.match(listed, /\n {5}prometheus\/zcloud-storage-scrape-shared-fs\.yaml {4}# scrape configs of the metrics Services\n/);
        assert.equal(listed.trimEnd().split("\n").length, 12);
    });

    test("with the Operator: the PrometheusRules' groups as one rule file; no monitoring, no files", () => {
        const [file] = prometheusFiles(on.resources);
        assert.equal(file.path, "prometheus/zcloud-storage-rules.yaml");
        assert.deepEqual((yaml.load(file.text) as { groups: unknown[] }).groups, rules(on));
        assert.deepEqual(prometheusFiles(existing.now().resources), []);
    });
});

describe("monitoring: existing stacks", () => {
    test("off: the plan of a stack made before monitoring is unchanged (but for later changes to the Ceph daemons and gates)", () => {
        const later = new Set(mergedUpdates([...cephDaemonMoves(existing.before().resources), ...cephGateMoves(existing.before().resources)]));
        const changes = diffPlans(existing.before().resources, existing.now().resources);
        const line = (c: (typeof changes)[number]) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields.length ? " " + c.fields.join(",") : ""}`;
        assert.deepEqual(changes.map(line).filter((l) => !later.has(l)), []);
    });

    test("turned on: only additions (Services, ServiceMonitors, PrometheusRules, dashboards, the Ceph metrics Job and its scripts); nothing updated or replaced", () => {
        const changes = diffPlans(existing.now().resources, on.resources);
        assert.deepEqual(changes.filter((c) => c.kind !== "create").map((c) => `${c.kind} ${c.resource.name}`), []);
        const created = changes.map((c) => c.resource.type.split(":").pop()).sort();
        assert.deepEqual([...new Set(created)], ["ConfigMap", "Job", "Monitoring", "PrometheusRule", "Service", "ServiceMonitor"]);
        const configMaps = changes.filter((c) => c.resource.type === CONFIG_MAP).map((c) => inputs(c.resource).metadata.name).sort();
        assert.deepEqual(configMaps.filter((n) => !n.startsWith("zcloud-storage-dashboard-")).map((n) => n.replace(/-[0-9a-f]{12}$/, "-<id>")), ["ceph-shared-fs-scripts-metrics-<id>"]);
    });

    test("a threshold change updates one PrometheusRule in place", () => {
        const changes = diffPlans(on.resources, tuned.resources);
        // volumeUsed is read by every storage: each storage's PrometheusRule, in place; no driver's.
        assert.deepEqual(changes.map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`).sort(), [
            "update zcloud-storage-alerts-fast spec.groups",
            "update zcloud-storage-alerts-nas spec.groups",
            "update zcloud-storage-alerts-san spec.groups",
            "update zcloud-storage-alerts-shared-fs spec.groups",
            "update zcloud-storage-alerts-thin spec.groups",
        ]);
        // --diff says which alert changes, and how, under each rule.
        assert.deepEqual(alertNotes(changes.find((c) => c.resource.name === "zcloud-storage-alerts-fast")!), [
            "alert StorageVolumeFilling (fast): >= 85 -> >= 70",
            "alert StorageVolumeFullSoon (fast): >= 100, >= 42.5 -> >= 100, >= 35",
        ]);
    });
});
