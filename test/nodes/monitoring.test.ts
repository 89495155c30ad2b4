/**
 * Nodes tier, monitoring on real Kubernetes metrics: the alerts and the dashboard an NFS storage
 * renders read the kubelets' volume stats and kube-state-metrics, which only a real kubelet and a
 * real API server give. A one-node cluster (cluster.sh), an NFS stack with
 * `monitoring: {prometheusOperator: false}` planned by the program and applied (csi-driver-nfs's
 * pods cannot start: their images cannot be built here), kube-state-metrics 2.20.0 on the host
 * against the API server, and Debian's Prometheus scraping it and the node's kubelet (port 10250,
 * as the kubelet ServiceMonitor of kube-prometheus does), with the rule files the program put in
 * its ConfigMaps (every `for` at 4 s: promtool proves the real ones, test/monitoring):
 * - csi-driver-nfs's controller and node pods not ready (waiting on their images):
 *   CsiDriverNfsPodsNotReady and CsiDriverNfsNodePodsNotReady fire;
 * - a claim of the storage's StorageClass on a 64 MiB ext4 volume of the node (a local
 *   PersistentVolume standing in for an NFS export: the kubelet reports both through statfs)
 *   filled in steps: StorageVolumeFilling silent below 85 %, firing from 85 %, StorageVolumeFull
 *   from 95 %, both clear once the files are removed; the used share the rules compute is the
 *   volume's statfs;
 * - every query of the NFS dashboard (and its storage variable's) returns series for the storage.
 * Run: node --import tsx --test test/nodes/monitoring.test.ts (root; builds or reuses the tools).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { planYaml, PlanRun } from "../helpers/plan";
import { NodesCluster, startCluster, waitFor } from "./cluster";
import { PlanApplier } from "./apply";
import { prometheus } from "../monitoring/tools";

const NODE = "zm1";
const NODE_IP = "10.250.0.11";
const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";
const STORAGE = "files";
/** csi-driver-nfs's workloads: their images cannot be built here. */
const NFS_DRIVER = new Set(["csi-driver-nfs-controller", "csi-driver-nfs-node"]);
/** Where the node mounts the volume the claim's PersistentVolume names. */
const VOLUME_DIR = "/var/lib/zcloud/test-volume";
const CLAIM_NS = "default";
const CLAIM = "data";

let cluster: NodesCluster;
let plan: PlanRun;
let loop = "";
const children: ChildProcess[] = [];
let prom = "";
const figures: string[] = [];

function stackYaml(): string {
    return yaml.dump({
        config: {
            "kubernetes:context": CONTEXT,
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:nodes-tier" } },
            "zcloud-storage:nodes": { [NODE]: { address: NODE_IP } },
            "zcloud-storage:imageRegistry": "10.250.0.1:5000",
            "zcloud-storage:nfs": [{ name: STORAGE, server: "10.250.0.1", path: "/srv/nfs" }],
            "zcloud-storage:monitoring": { prometheusOperator: false },
        },
    });
}

/** A TCP port free on the host's loopback now. */
function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once("error", reject);
        s.listen(0, "127.0.0.1", () => {
            const port = (s.address() as net.AddressInfo).port;
            s.close(() => resolve(port));
        });
    });
}

/** A program of the tools' PATH started in the background, its output in the cluster's log dir. */
function startDaemon(name: string, argv: string[]): ChildProcess {
    const log = fs.openSync(path.join(cluster.dir, "logs", `${name}.log`), "a");
    const pathLine = cluster.sh('echo "$PATH"').trim();
    const child = spawn(argv[0], argv.slice(1), { env: { ...process.env, PATH: pathLine }, stdio: ["ignore", log, log] });
    children.push(child);
    return child;
}

async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const r = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const j = (await r.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
    assert.equal(j.status, "success", `${expr}: ${JSON.stringify(j)}`);
    return j.data.result;
}

async function firing(): Promise<{ labels: Record<string, string>; state: string }[]> {
    const j = (await (await fetch(`${prom}/api/v1/alerts`)).json()) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
    return j.data.alerts.filter((a) => a.state === "firing");
}

/** Polls an async check every 0.5 s until it returns a value; fails naming `what` and the last error. */
async function waitAsync<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const v = await check();
            if (v !== undefined) return v;
        } catch (e) {
            last = e;
        }
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
        await new Promise((r) => setTimeout(r, 500));
    }
}

/** The volume's statfs inside the node, as the kubelet reads it: used = (blocks - free) x size. */
function statfs(): { capacity: number; used: number } {
    const [blocks, free, size] = cluster.sh(`nsenter -t "$(cat "${cluster.dir}/pids/${NODE}.node")" -m -- stat -f -c '%b %f %S' ${VOLUME_DIR}`).trim().split(" ").map(Number);
    return { capacity: blocks * size, used: (blocks - free) * size };
}

/** Writes files in the claim from its pod until the volume's used share reaches `percent`. */
function fillTo(percent: number): number {
    for (let i = 0; ; i++) {
        const { capacity, used } = statfs();
        const share = (used / capacity) * 100;
        if (share >= percent) return share;
        const mib = Math.max(1, Math.floor(((percent / 100) * capacity - used) / 1048576));
        cluster.sh(`kubectl -n ${CLAIM_NS} exec writer -- sh -c 'dd if=/dev/zero of=/data/f-${percent}-${i} bs=1048576 count=${mib} 2>/dev/null; sync'`);
    }
}

const selectFor = (alert: string) => (a: { labels: Record<string, string> }) => a.labels.alertname === alert && a.labels.persistentvolumeclaim === CLAIM && a.labels.namespace === CLAIM_NS;

before(async () => {
    cluster = startCluster([NODE], "zcloud-nodes-monitoring-");
    plan = await planYaml(stackYaml());
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
    // a small ext4 volume mounted in the node, where the claim's local PersistentVolume points
    const image = path.join(cluster.dir, "volume.img");
    fs.writeFileSync(image, "");
    fs.truncateSync(image, 64 * 1024 * 1024);
    execFileSync("mkfs.ext4", ["-q", "-F", image]);
    loop = execFileSync("losetup", ["--find", "--show", image], { encoding: "utf8" }).trim();
    cluster.sh(`nsenter -t "$(cat "${cluster.dir}/pids/${NODE}.node")" -m -- sh -c 'mkdir -p ${VOLUME_DIR} && mount ${loop} ${VOLUME_DIR}'`);
});

after(() => {
    for (const c of children) c.kill("SIGKILL");
    if (cluster) cluster.stop();
    if (loop) execFileSync("losetup", ["-d", loop]);
    if (figures.length) console.log(figures.map((f) => `# ${f}`).join("\n"));
});

test("the NFS stack with monitoring applied: its driver's pods not ready fire their alerts on kube-state-metrics; a claim of its StorageClass filling fires StorageVolumeFilling at 85 % and StorageVolumeFull at 95 %, both clear when emptied; every dashboard query returns series", async () => {
    const applier = new PlanApplier(cluster, { context: CONTEXT, nodeByAddress: { [NODE_IP]: NODE }, notAwaited: NFS_DRIVER, log: (l) => console.log(`# ${l.slice(0, 200)}`) });
    await applier.apply(plan);
    // the rule files as the program put them in its ConfigMaps, every `for` at 4 s
    const ruleMaps = (cluster.json(`get configmaps -n ${NS} -l app.kubernetes.io/component=alerts`).items as any[]).map((c) => c.metadata.name).sort();
    assert.deepEqual(ruleMaps, ["zcloud-storage-driver-rules-csi-driver-nfs", `zcloud-storage-rules-${STORAGE}`]);
    const dir = path.join(cluster.dir, "prometheus");
    fs.mkdirSync(dir);
    const ruleFiles: string[] = [];
    const alertNames: string[] = [];
    for (const name of ruleMaps) {
        const data = cluster.json(`get configmap ${name} -n ${NS}`).data as Record<string, string>;
        for (const [key, text] of Object.entries(data)) {
            const doc = yaml.load(text) as { groups: { rules: { alert?: string; for?: string }[] }[] };
            for (const g of doc.groups) for (const r of g.rules) if (r.alert) {
                alertNames.push(r.alert);
                if (r.for) r.for = "4s";
            }
            const file = path.join(dir, `${name}-${key}`);
            fs.writeFileSync(file, yaml.dump(doc));
            ruleFiles.push(file);
        }
    }
    assert.deepEqual(alertNames.sort(), ["CsiDriverNfsNodePodsNotReady", "CsiDriverNfsPodsNotReady", "StorageVolumeFilling", "StorageVolumeFull", "StorageVolumeFullSoon"]);

    // kube-state-metrics on the host, against the API server, for the objects the rules read
    const [ksmPort, ksmTelemetry, promPort] = [await freePort(), await freePort(), await freePort()];
    startDaemon("kube-state-metrics", [
        "kube-state-metrics",
        `--kubeconfig=${path.join(cluster.dir, "kubeconfig")}`,
        "--host=127.0.0.1",
        `--port=${ksmPort}`,
        "--telemetry-host=127.0.0.1",
        `--telemetry-port=${ksmTelemetry}`,
        "--resources=daemonsets,deployments,persistentvolumeclaims,storageclasses",
    ]);
    // Prometheus scraping it and the node's kubelet (a client certificate the kubelet's webhook
    // authorizer lets read /metrics: the API server's own, system:masters)
    const pki = path.join(cluster.dir, "cp", "pki");
    fs.writeFileSync(
        path.join(dir, "prometheus.yml"),
        yaml.dump({
            global: { scrape_interval: "2s", scrape_timeout: "2s", evaluation_interval: "2s" },
            rule_files: ruleFiles,
            scrape_configs: [
                { job_name: "kube-state-metrics", honor_labels: true, static_configs: [{ targets: [`127.0.0.1:${ksmPort}`] }] },
                {
                    job_name: "kubelet",
                    scheme: "https",
                    tls_config: { cert_file: path.join(pki, "apiserver-kubelet-client.crt"), key_file: path.join(pki, "apiserver-kubelet-client.key"), insecure_skip_verify: true },
                    static_configs: [{ targets: [`${NODE_IP}:10250`], labels: { node: NODE } }],
                },
            ],
        }),
    );
    prom = `http://127.0.0.1:${promPort}`;
    startDaemon("prometheus", [prometheus(), `--config.file=${path.join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${path.join(dir, "data")}`, `--web.listen-address=127.0.0.1:${promPort}`]);
    await waitAsync("both targets up", 90_000, async () => {
        const t = (await (await fetch(`${prom}/api/v1/targets`)).json()) as { data: { activeTargets: { health: string; labels: Record<string, string>; lastError: string }[] } };
        const up = t.data.activeTargets.filter((x) => x.health === "up").map((x) => x.labels.job).sort();
        if (up.length === 2) return up;
        throw new Error(JSON.stringify(t.data.activeTargets.map((x) => [x.labels.job, x.health, x.lastError])));
    });

    // 1. the driver's pods, waiting on their images: both pods-not-ready alerts fire
    const t1 = Date.now();
    await waitAsync("CsiDriverNfsPodsNotReady and CsiDriverNfsNodePodsNotReady firing", 90_000, async () => {
        const names = (await firing()).map((a) => a.labels.alertname);
        return names.includes("CsiDriverNfsPodsNotReady") && names.includes("CsiDriverNfsNodePodsNotReady") ? true : undefined;
    });
    const driverAlerts = (await firing()).filter((a) => a.labels.alertname.startsWith("CsiDriverNfs")).map((a) => `${a.labels.alertname} ${a.labels.deployment ?? a.labels.daemonset}`).sort();
    assert.deepEqual(driverAlerts, ["CsiDriverNfsNodePodsNotReady csi-driver-nfs-node", "CsiDriverNfsPodsNotReady csi-driver-nfs-controller"]);
    figures.push(`the NFS driver's two pods-not-ready alerts firing ${((Date.now() - t1) / 1000).toFixed(1)} s after the targets were up`);

    // 2. a claim of the storage's StorageClass, bound to the node's volume, mounted by a pod
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
            {
                apiVersion: "v1",
                kind: "PersistentVolume",
                metadata: { name: "test-volume" },
                spec: {
                    capacity: { storage: "64Mi" },
                    accessModes: ["ReadWriteOnce"],
                    storageClassName: STORAGE,
                    local: { path: VOLUME_DIR },
                    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [NODE] }] }] } },
                },
            },
            { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: CLAIM, namespace: CLAIM_NS }, spec: { storageClassName: STORAGE, volumeName: "test-volume", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } } },
            {
                apiVersion: "v1",
                kind: "Pod",
                metadata: { name: "writer", namespace: CLAIM_NS },
                spec: {
                    terminationGracePeriodSeconds: 0,
                    containers: [{ name: "writer", image: cluster.images.toolbox, command: ["sleep", "3600"], volumeMounts: [{ name: "data", mountPath: "/data" }] }],
                    volumes: [{ name: "data", persistentVolumeClaim: { claimName: CLAIM } }],
                },
            },
        ],
    })}\nEOF`);
    await waitFor("the writer pod Running", 120_000, () => (cluster.json(`get pod writer -n ${CLAIM_NS}`).status.phase === "Running" ? true : undefined));
    const usedPercent = `max by (namespace, persistentvolumeclaim) (kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes * 100 * on (namespace, persistentvolumeclaim) group_left () kube_persistentvolumeclaim_info{storageclass="${STORAGE}"})`;
    /** The share the rules compute, once it is within 1 point of the volume's statfs. */
    const scrapedShare = (what: string) =>
        waitAsync(`the rules' used share of ${CLAIM_NS}/${CLAIM} at the volume's (${what})`, 90_000, async () => {
            const s = statfs();
            const want = (s.used / s.capacity) * 100;
            const r = await query(usedPercent);
            const got = Number(r.find((x) => x.metric.persistentvolumeclaim === CLAIM)?.value[1]);
            if (Math.abs(got - want) < 1) return got;
            throw new Error(`scraped ${got}, statfs ${want.toFixed(2)}`);
        });
    const volumeAlerts = async () => (await firing()).filter((a) => a.labels.persistentvolumeclaim === CLAIM).map((a) => a.labels.alertname).sort();

    // below 85 %: silent (the share's value known first, then two rule evaluations after its `for`)
    const below = fillTo(70);
    const scrapedBelow = await scrapedShare(`${below.toFixed(1)} %`);
    await new Promise((r) => setTimeout(r, 8000));
    assert.deepEqual(await volumeAlerts(), [], `at ${scrapedBelow.toFixed(1)} %`);
    // 85 % and more: StorageVolumeFilling alone
    const t2 = Date.now();
    const filling = fillTo(87);
    const scrapedFilling = await scrapedShare(`${filling.toFixed(1)} %`);
    await waitAsync("StorageVolumeFilling firing", 60_000, async () => ((await firing()).some(selectFor("StorageVolumeFilling")) ? true : undefined));
    assert.deepEqual(await volumeAlerts(), ["StorageVolumeFilling"], `at ${scrapedFilling.toFixed(1)} %`);
    const fillingSeverity = (await firing()).find(selectFor("StorageVolumeFilling"))!.labels.severity;
    figures.push(`StorageVolumeFilling firing ${((Date.now() - t2) / 1000).toFixed(1)} s after the fill to ${filling.toFixed(1)} % began (severity ${fillingSeverity}); silent at ${below.toFixed(1)} %`);
    // 95 % and more: StorageVolumeFull too
    const t3 = Date.now();
    const full = fillTo(96);
    await scrapedShare(`${full.toFixed(1)} %`);
    await waitAsync("StorageVolumeFull firing", 60_000, async () => ((await firing()).some(selectFor("StorageVolumeFull")) ? true : undefined));
    assert.deepEqual(await volumeAlerts(), ["StorageVolumeFilling", "StorageVolumeFull"]);
    assert.equal((await firing()).find(selectFor("StorageVolumeFull"))!.labels.severity, "critical");
    figures.push(`StorageVolumeFull firing ${((Date.now() - t3) / 1000).toFixed(1)} s after the fill to ${full.toFixed(1)} % began`);

    // 3. every query of the NFS dashboard, and its storage variable's, returns series for the storage
    const board = cluster.json(`get configmap zcloud-storage-dashboard-nfs -n ${NS}`).data as Record<string, string>;
    const dashboard = JSON.parse(Object.values(board)[0]) as { panels: { title: string; targets?: { expr: string }[] }[]; templating: { list: { name: string; query?: string }[] } };
    const variable = dashboard.templating.list.find((v) => v.name === "storage")!.query!;
    const labelValues = /^label_values\((.+), (\w+)\)$/.exec(variable);
    assert.ok(labelValues, variable);
    assert.deepEqual((await query(labelValues[1])).map((r) => r.metric[labelValues[2]]), [STORAGE]);
    for (const p of dashboard.panels) {
        for (const t of p.targets ?? []) {
            const result = await query(t.expr.replaceAll("$storage", STORAGE));
            assert.ok(result.length > 0, `${p.title}: ${t.expr}`);
        }
    }

    // 4. the files removed: both volume alerts clear
    const t4 = Date.now();
    cluster.sh(`kubectl -n ${CLAIM_NS} exec writer -- sh -c 'rm -f /data/f-*; sync'`);
    await scrapedShare("emptied");
    await waitAsync("the volume alerts cleared", 60_000, async () => ((await volumeAlerts()).length === 0 ? true : undefined));
    figures.push(`both volume alerts cleared ${((Date.now() - t4) / 1000).toFixed(1)} s after the files were removed`);
});
