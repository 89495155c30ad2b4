/**
 * Nodes tier: three namespace nodes with real kubelets, containerd and kube-proxy (cluster.sh)
 * pull images from the local registry, run a DaemonSet, route a Service across nodes, project a
 * Secret, write a hostPath of their own, serve `kubectl exec`, restart a container whose liveness
 * probe fails, survive a kubelet and a containerd restart and a node reboot, and stop without
 * leftovers.
 * Run: node --import tsx --test test/nodes/smoke.test.ts (root; builds or reuses the tools).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { NodesCluster, startCluster, waitFor } from "./cluster";

const nodes = ["zn1", "zn2", "zn3"];
let cluster: NodesCluster;
let stopped = false;

before(() => {
    const began = Date.now();
    cluster = startCluster(nodes, "zcloud-nodes-smoke-");
    console.log(`# cluster of ${nodes.length} nodes up and images pushed in ${((Date.now() - began) / 1000).toFixed(1)} s`);
});

after(() => {
    if (cluster && !stopped) {
        cluster.stop();
    }
});

function apply(objects: object[]): void {
    cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify({ apiVersion: "v1", kind: "List", items: objects })}\nEOF`);
}

interface PodView {
    name: string;
    node: string;
    ip: string;
    phase: string;
    ready: boolean;
    restarts: number;
    containerId: string;
}

function pods(selector: string): PodView[] {
    return cluster.json(`get pods -l ${selector}`).items.map((p: any) => ({
        name: p.metadata.name,
        node: p.spec.nodeName,
        ip: p.status.podIP,
        phase: p.status.phase,
        ready: (p.status.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True"),
        restarts: p.status.containerStatuses?.[0]?.restartCount ?? 0,
        containerId: p.status.containerStatuses?.[0]?.containerID ?? "",
    }));
}

/** The web DaemonSet's pods, one Running and Ready on every node, or undefined. */
function webOnEveryNode(): PodView[] | undefined {
    const web = pods("app=web");
    const ready = web.filter((p) => p.phase === "Running" && p.ready);
    return ready.length === nodes.length && new Set(ready.map((p) => p.node)).size === nodes.length ? web : undefined;
}

test("three real nodes register Ready with the pinned kubelet and containerd", () => {
    const items = cluster.json("get nodes").items;
    assert.deepEqual(items.map((n: any) => n.metadata.name).sort(), nodes);
    for (const n of items) {
        assert.equal(n.status.conditions.find((c: any) => c.type === "Ready")?.status, "True", n.metadata.name);
        assert.equal(n.status.nodeInfo.kubeletVersion, "v1.35.4");
        assert.equal(n.status.nodeInfo.containerRuntimeVersion, "containerd://2.4.2");
        const index = nodes.indexOf(n.metadata.name) + 1;
        assert.deepEqual(n.status.addresses.find((a: any) => a.type === "InternalIP")?.address, `10.250.0.${10 + index}`);
    }
});

test("a DaemonSet pulled from the local registry serves on every node; its Service reaches pods on the other nodes", async () => {
    const labels = { app: "web" };
    apply([
        {
            apiVersion: "apps/v1",
            kind: "DaemonSet",
            metadata: { name: "web", namespace: "default" },
            spec: {
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: {
                        containers: [
                            {
                                name: "httpd",
                                image: cluster.images.toolbox,
                                command: ["sh", "-c", "hostname > /www/index.html && exec httpd -f -p 8080 -h /www"],
                                ports: [{ containerPort: 8080 }],
                                readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 2 },
                            },
                        ],
                    },
                },
            },
        },
        {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "web", namespace: "default" },
            spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
        },
    ]);
    const began = Date.now();
    const web = await waitFor("the web DaemonSet Running and Ready on every node", 180_000, webOnEveryNode);
    console.log(`# toolbox DaemonSet pulled and Ready on ${nodes.length} nodes in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    const clusterIp = cluster.json("get service web").spec.clusterIP;
    const client = web.find((p) => p.node === "zn1")!;
    // Each answer names the pod that served it; kube-proxy spreads the Service over all three.
    const answered = await waitFor("answers through the Service from pods on all three nodes", 60_000, () => {
        const seen = new Set<string>();
        for (let i = 0; i < 12; i++) {
            seen.add(cluster.sh(`kubectl exec ${client.name} -- timeout 5 wget -qO- http://${clusterIp}/`).trim());
        }
        return seen.size === nodes.length ? seen : undefined;
    });
    assert.deepEqual([...answered].sort(), web.map((p) => p.name).sort());
});

test("a projected Secret is readable in the pod and a hostPath lands in that node's own /var/lib", async () => {
    apply([
        { apiVersion: "v1", kind: "Secret", metadata: { name: "smoke", namespace: "default" }, stringData: { key: "s3cret-value" } },
        {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "mounts", namespace: "default" },
            spec: {
                nodeName: "zn2",
                restartPolicy: "Never",
                containers: [
                    {
                        name: "c",
                        image: cluster.images.toolbox,
                        command: ["sh", "-c", "sha256sum /secret/key > /data/key.sum"],
                        volumeMounts: [
                            { name: "secret", mountPath: "/secret", readOnly: true },
                            { name: "data", mountPath: "/data" },
                        ],
                    },
                ],
                volumes: [
                    { name: "secret", projected: { sources: [{ secret: { name: "smoke" } }] } },
                    { name: "data", hostPath: { path: "/var/lib/zcloud-smoke", type: "DirectoryOrCreate" } },
                ],
            },
        },
    ]);
    await waitFor("the mounts pod Succeeded", 90_000, () => (cluster.json("get pod mounts").status.phase === "Succeeded" ? true : undefined));
    const written = fs.readFileSync(path.join(cluster.dir, "nodes", "zn2", "var-lib", "zcloud-smoke", "key.sum"), "utf8");
    assert.match(written, /^[0-9a-f]{64} {2}\/secret\/key\n$/);
    assert.equal(written.slice(0, 64), createHash("sha256").update("s3cret-value").digest("hex"));
    assert.equal(fs.existsSync(path.join(cluster.dir, "nodes", "zn1", "var-lib", "zcloud-smoke")), false, "written on another node");
    assert.equal(fs.existsSync("/var/lib/zcloud-smoke"), false, "written on the machine itself");
});

test("a container whose liveness probe fails is restarted by its kubelet", async () => {
    apply([
        {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "unhealthy", namespace: "default", labels: { app: "unhealthy" } },
            spec: {
                nodeName: "zn3",
                // `sleep` as PID 1 ignores SIGTERM: without this each restart waits the default 30 s
                terminationGracePeriodSeconds: 1,
                containers: [
                    {
                        name: "c",
                        image: cluster.images.toolbox,
                        command: ["sleep", "3600"],
                        livenessProbe: { exec: { command: ["test", "-f", "/healthy"] }, initialDelaySeconds: 1, periodSeconds: 2, failureThreshold: 1 },
                    },
                ],
            },
        },
    ]);
    const restarted = await waitFor("the unhealthy pod restarted by its liveness probe", 120_000, () => {
        const [p] = pods("app=unhealthy");
        return p && p.restarts >= 1 ? p : undefined;
    });
    assert.equal(restarted.node, "zn3");
    const events = cluster.sh("kubectl get events --field-selector involvedObject.name=unhealthy -o jsonpath='{.items[*].message}'");
    assert.match(events, /Liveness probe failed/);
});

test("a kubelet restart and a containerd restart leave running containers running", async () => {
    const before = await waitFor("web Ready everywhere", 60_000, webOnEveryNode);
    // containerd first: the kubelet reconnects to it; a kubelet started while containerd is down exits.
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" restart "${cluster.dir}" zn2 containerd`);
    const restartedAt = Date.now();
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" restart "${cluster.dir}" zn2 kubelet`);
    // The new kubelet renews its node lease and the containers are the same ones (no restart, same IDs).
    await waitFor("zn2's node lease renewed by the new kubelet", 90_000, () => {
        const lease = cluster.json("get lease -n kube-node-lease zn2");
        return Date.parse(lease.spec.renewTime) > restartedAt ? true : undefined;
    });
    const after = await waitFor("web Ready everywhere after the restarts", 60_000, webOnEveryNode);
    const onZn2 = (list: PodView[]) => list.find((p) => p.node === "zn2")!;
    assert.equal(onZn2(after).containerId, onZn2(before).containerId);
    assert.equal(onZn2(after).restarts, onZn2(before).restarts);
});

test("a rebooted node (every process of it killed, /run gone) runs its pods again", async () => {
    const before = await waitFor("web Ready everywhere", 60_000, webOnEveryNode);
    const began = Date.now();
    cluster.sh(`bash "${path.join(__dirname, "cluster.sh")}" reboot "${cluster.dir}" zn3`);
    const after = await waitFor("web Ready on zn3 again in a new container", 180_000, () => {
        const list = webOnEveryNode();
        const onZn3 = list?.find((p) => p.node === "zn3");
        return onZn3 && onZn3.containerId !== before.find((p) => p.node === "zn3")!.containerId ? list : undefined;
    });
    console.log(`# zn3 rebooted: its DaemonSet pod Ready again in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    // The same pod object (DaemonSet pods are not replaced for a node reboot), answering again.
    assert.equal(after.find((p) => p.node === "zn3")!.name, before.find((p) => p.node === "zn3")!.name);
    const client = after.find((p) => p.node === "zn1")!;
    const zn3 = after.find((p) => p.node === "zn3")!;
    assert.equal(cluster.sh(`kubectl exec ${client.name} -- timeout 5 wget -qO- http://${zn3.ip}:8080/`).trim(), zn3.name);
});

test("stop ends every node and removes the bridge and the nodes' cgroups", () => {
    const pidFiles = fs.readdirSync(path.join(cluster.dir, "pids"));
    const pids = pidFiles.map((f) => Number(fs.readFileSync(path.join(cluster.dir, "pids", f), "utf8")));
    const parent = fs.readFileSync(path.join(cluster.dir, "cgroup-parent"), "utf8").trim();
    cluster.stop();
    assert.equal(fs.existsSync(cluster.dir), false, "the cluster's directory is left");
    stopped = true;
    const alive = pids.filter((pid) => {
        try {
            process.kill(pid, 0);
            return true;
        } catch {
            return false;
        }
    });
    assert.deepEqual(alive, []);
    assert.equal(fs.existsSync("/sys/class/net/zcn0"), false);
    assert.equal(fs.existsSync(path.join("/sys/fs/cgroup/memory", parent, "zcloud-nodes")), false);
    assert.equal(fs.existsSync(path.join("/sys/fs/cgroup/cpu", parent, "zcloud-nodes")), false);
});
