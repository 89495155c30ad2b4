/**
 * Nodes tier, monitoring on real Kubernetes metrics: the alerts and dashboards of the NFS and
 * iSCSI storages read the kubelets' volume stats and kube-state-metrics, which only a real
 * kubelet and a real API server give. A one-node cluster (cluster.sh), a stack with an NFS and an
 * iSCSI storage and `monitoring: {prometheusOperator: false}` planned by the program, its
 * Kubernetes objects and local commands applied (the iSCSI storage's node commands, login and
 * shared VG, are not run: no target here; neither driver's pods can start: their images cannot be
 * built here), kube-state-metrics 2.20.0 on the host against the API server, and Debian's
 * Prometheus scraping it and the node's kubelet (port 10250, as the kubelet ServiceMonitor of
 * kube-prometheus does), with the rule files the program put in its ConfigMaps (every `for` at
 * 4 s: promtool proves the real ones, test/monitoring):
 * - both drivers' controller and node pods not ready (waiting on their images): their four
 *   pods-not-ready alerts fire;
 * - a claim of the NFS StorageClass on a 64 MiB ext4 volume of the node (a local PersistentVolume
 *   standing in for the driver's volume, whose stats the kubelet would ask the driver for) filled
 *   in steps: StorageVolumeFilling silent below 85 %, firing from 85 %, StorageVolumeFull from
 *   95 %, both clear once the files are removed; the used share the rules compute is the volume's
 *   statfs. A claim of the iSCSI StorageClass likewise on a volume of its own;
 * - every query of the NFS and iSCSI dashboards (and their storage variables') returns series for
 *   the storage.
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
import { volumeUsedPercent } from "../../components/monitoring/rules";

const NODE = "zm1";
const NODE_IP = "10.250.0.11";
const NS = "zcloud-storage";
const CONTEXT = "nodes-tier";
const STORAGE = "files";
const ISCSI = "san";
/** The drivers' workloads: their images cannot be built here. */
const DRIVERS = new Set(["csi-driver-nfs-controller", "csi-driver-nfs-node", "csi-sanlock-lvm-controller", "csi-sanlock-lvm-node"]);
/** Where the node mounts the volume the NFS claim's PersistentVolume names. */
const VOLUME_DIR = "/var/lib/zcloud/test-volume";
const CLAIM_NS = "default";
const CLAIM = "data";
/** The iSCSI claim and its volume. */
const ISCSI_CLAIM = "blocks";
const ISCSI_DIR = "/var/lib/zcloud/test-volume-iscsi";

let cluster: NodesCluster;
let plan: PlanRun;
const loops: string[] = [];
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
            "zcloud-storage:iscsi": [{ name: ISCSI, portals: ["10.250.0.1:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 0, chap: { username: "k8s", password: { secure: "v1:chap" } }, initiators: [NODE] }],
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

/** A PersistentVolume of the node's directory `dir` (local) and the claim bound to it, of `storageClass`. */
function localClaim(volume: string, claim: string, storageClass: string, dir: string, mib: number): object[] {
    const size = { storage: `${mib}Mi` };
    const onNode = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [NODE] }] }] } };
    return [
        { apiVersion: "v1", kind: "PersistentVolume", metadata: { name: volume }, spec: { capacity: size, accessModes: ["ReadWriteOnce"], storageClassName: storageClass, local: { path: dir }, nodeAffinity: onNode } },
        { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claim, namespace: CLAIM_NS }, spec: { storageClassName: storageClass, volumeName: volume, accessModes: ["ReadWriteOnce"], resources: { requests: size } } },
    ];
}

const selectFor = (alert: string) => (a: { labels: Record<string, string> }) => a.labels.alertname === alert && a.labels.persistentvolumeclaim === CLAIM && a.labels.namespace === CLAIM_NS;

before(async () => {
    cluster = startCluster([NODE], "zcloud-nodes-monitoring-");
    plan = await planYaml(stackYaml());
    assert.equal(plan.error, undefined, JSON.stringify(plan.error));
    // small ext4 volumes mounted in the node, where the claims' local PersistentVolumes point
    for (const [dir, mib] of [[VOLUME_DIR, 64], [ISCSI_DIR, 32]] as const) {
        const image = path.join(cluster.dir, `${path.basename(dir)}.img`);
        fs.writeFileSync(image, "");
        fs.truncateSync(image, mib * 1024 * 1024);
        execFileSync("mkfs.ext4", ["-q", "-F", image]);
        const loop = execFileSync("losetup", ["--find", "--show", image], { encoding: "utf8" }).trim();
        loops.push(loop);
        cluster.sh(`nsenter -t "$(cat "${cluster.dir}/pids/${NODE}.node")" -m -- sh -c 'mkdir -p ${dir} && mount ${loop} ${dir}'`);
    }
});

after(() => {
    for (const c of children) c.kill("SIGKILL");
    if (cluster) cluster.stop();
    for (const loop of loops) execFileSync("losetup", ["-d", loop]);
    if (figures.length) console.log(figures.map((f) => `# ${f}`).join("\n"));
});

test("an NFS and an iSCSI storage with monitoring applied: both drivers' pods not ready fire their alerts on kube-state-metrics; an NFS claim filling fires StorageVolumeFilling at 85 % and StorageVolumeFull at 95 % on the kubelet's volume stats, both clear when emptied; every NFS and iSCSI dashboard query returns series", async () => {
    const applier = new PlanApplier(cluster, { context: CONTEXT, nodeByAddress: { [NODE_IP]: NODE }, notAwaited: DRIVERS, log: (l) => console.log(`# ${l.slice(0, 200)}`) });
    // the iSCSI storage's node commands need a target: not run (what depends on them goes ahead)
    const remote = plan.resources.filter((x) => x.type.startsWith("command:remote:")).map((x) => x.name).sort();
    assert.deepEqual(remote, [`${ISCSI}-${NODE}-login`, `${ISCSI}-${NODE}-login-scripts`, `${ISCSI}-vg`, `${ISCSI}-vg-scripts`].sort());
    await applier.apply({ ...plan, resources: plan.resources.filter((x) => !x.type.startsWith("command:remote:")) });
    // the rule files as the program put them in its ConfigMaps, every `for` at 4 s
    const ruleMaps = (cluster.json(`get configmaps -n ${NS} -l app.kubernetes.io/component=alerts`).items as any[]).map((c) => c.metadata.name).sort();
    assert.deepEqual(ruleMaps, ["zcloud-storage-driver-rules-csi-driver-nfs", "zcloud-storage-driver-rules-csi-sanlock-lvm", `zcloud-storage-rules-${STORAGE}`, `zcloud-storage-rules-${ISCSI}`]);
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
    assert.deepEqual(alertNames.sort(), [
        "CsiDriverNfsNodePodsNotReady",
        "CsiDriverNfsPodsNotReady",
        "CsiSanlockLvmNodePodsNotReady",
        "CsiSanlockLvmPodsNotReady",
        ...["StorageVolumeFilling", "StorageVolumeFull", "StorageVolumeFullSoon"].flatMap((a) => [a, a]),
    ].sort());

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
    await waitFor("both targets up", 90_000, async () => {
        const t = (await (await fetch(`${prom}/api/v1/targets`)).json()) as { data: { activeTargets: { health: string; labels: Record<string, string>; lastError: string }[] } };
        const up = t.data.activeTargets.filter((x) => x.health === "up").map((x) => x.labels.job).sort();
        if (up.length === 2) return up;
        throw new Error(JSON.stringify(t.data.activeTargets.map((x) => [x.labels.job, x.health, x.lastError])));
    });

    // 1. the drivers' pods, waiting on their images: the four pods-not-ready alerts fire (the
    // iSCSI node plugin's DaemonSet runs on the node its label command labelled)
    const t1 = Date.now();
    const driverAlerts = async () => (await firing()).filter((a) => /^Csi(DriverNfs|SanlockLvm)/.test(a.labels.alertname)).map((a) => `${a.labels.alertname} ${a.labels.deployment ?? a.labels.daemonset}`).sort();
    const expected = [
        "CsiDriverNfsNodePodsNotReady csi-driver-nfs-node",
        "CsiDriverNfsPodsNotReady csi-driver-nfs-controller",
        "CsiSanlockLvmNodePodsNotReady csi-sanlock-lvm-node",
        "CsiSanlockLvmPodsNotReady csi-sanlock-lvm-controller",
    ];
    await waitFor("the four pods-not-ready alerts firing", 90_000, async () => {
        const now = await driverAlerts();
        if (now.length === expected.length) return now;
        throw new Error(JSON.stringify(now));
    });
    assert.deepEqual(await driverAlerts(), expected);
    figures.push(`the drivers' four pods-not-ready alerts firing ${((Date.now() - t1) / 1000).toFixed(1)} s after the targets were up`);

    // 2. a claim of the storage's StorageClass, bound to the node's volume, mounted by a pod
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
            ...localClaim("test-volume", CLAIM, STORAGE, VOLUME_DIR, 64),
            ...localClaim("test-volume-iscsi", ISCSI_CLAIM, ISCSI, ISCSI_DIR, 32),
            {
                apiVersion: "v1",
                kind: "Pod",
                metadata: { name: "writer", namespace: CLAIM_NS },
                spec: {
                    terminationGracePeriodSeconds: 0,
                    containers: [{ name: "writer", image: cluster.images.toolbox, command: ["sleep", "3600"], volumeMounts: [{ name: "data", mountPath: "/data" }, { name: "blocks", mountPath: "/blocks" }] }],
                    volumes: [{ name: "data", persistentVolumeClaim: { claimName: CLAIM } }, { name: "blocks", persistentVolumeClaim: { claimName: ISCSI_CLAIM } }],
                },
            },
        ],
    })}\nEOF`);
    await waitFor("the writer pod Running", 120_000, () => (cluster.json(`get pod writer -n ${CLAIM_NS}`).status.phase === "Running" ? true : undefined));
    // the used share as the program's rules compute it
    const usedPercent = volumeUsedPercent(STORAGE);
    /** The share the rules compute, once it is within 1 point of the volume's statfs. */
    const scrapedShare = (what: string) =>
        waitFor(`the rules' used share of ${CLAIM_NS}/${CLAIM} at the volume's (${what})`, 90_000, async () => {
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
    await waitFor("StorageVolumeFilling firing", 60_000, async () => ((await firing()).some(selectFor("StorageVolumeFilling")) ? true : undefined));
    assert.deepEqual(await volumeAlerts(), ["StorageVolumeFilling"], `at ${scrapedFilling.toFixed(1)} %`);
    const fillingSeverity = (await firing()).find(selectFor("StorageVolumeFilling"))!.labels.severity;
    figures.push(`StorageVolumeFilling firing ${((Date.now() - t2) / 1000).toFixed(1)} s after the fill to ${filling.toFixed(1)} % began (severity ${fillingSeverity}); silent at ${below.toFixed(1)} %`);
    // 95 % and more: StorageVolumeFull too
    const t3 = Date.now();
    const full = fillTo(96);
    await scrapedShare(`${full.toFixed(1)} %`);
    await waitFor("StorageVolumeFull firing", 60_000, async () => ((await firing()).some(selectFor("StorageVolumeFull")) ? true : undefined));
    assert.deepEqual(await volumeAlerts(), ["StorageVolumeFilling", "StorageVolumeFull"]);
    assert.equal((await firing()).find(selectFor("StorageVolumeFull"))!.labels.severity, "critical");
    figures.push(`StorageVolumeFull firing ${((Date.now() - t3) / 1000).toFixed(1)} s after the fill to ${full.toFixed(1)} % began`);

    // 3. every query of the NFS and iSCSI dashboards, and their storage variables', returns series
    // for the storage: the iSCSI claim's share among them
    for (const [type, storage, claim] of [["nfs", STORAGE, CLAIM], ["iscsi", ISCSI, ISCSI_CLAIM]] as const) {
        const board = cluster.json(`get configmap zcloud-storage-dashboard-${type} -n ${NS}`).data as Record<string, string>;
        const dashboard = JSON.parse(Object.values(board)[0]) as { panels: { title: string; targets?: { expr: string }[] }[]; templating: { list: { name: string; query?: string }[] } };
        const variable = dashboard.templating.list.find((v) => v.name === "storage")!.query!;
        const labelValues = /^label_values\((.+), (\w+)\)$/.exec(variable);
        assert.ok(labelValues, variable);
        assert.deepEqual((await query(labelValues[1])).map((r) => r.metric[labelValues[2]]), [storage], type);
        const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr.replaceAll("$storage", storage) })));
        assert.ok(exprs.length > 0, type);
        for (const e of exprs) {
            const result = await waitFor(`${type} dashboard "${e.title}" series`, 60_000, async () => {
                const got = await query(e.expr);
                return got.length > 0 ? got : undefined;
            });
            if (e.title === "Volumes used") assert.deepEqual(result.map((x) => x.metric.persistentvolumeclaim), [claim], `${type}: ${e.expr}`);
        }
    }

    // 4. the files removed: both volume alerts clear
    const t4 = Date.now();
    cluster.sh(`kubectl -n ${CLAIM_NS} exec writer -- sh -c 'rm -f /data/f-*; sync'`);
    await scrapedShare("emptied");
    await waitFor("the volume alerts cleared", 60_000, async () => ((await volumeAlerts()).length === 0 ? true : undefined));
    figures.push(`both volume alerts cleared ${((Date.now() - t4) / 1000).toFixed(1)} s after the files were removed`);
});
