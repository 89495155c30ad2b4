/**
 * A CephFS storage running as pods on the nodes tier's cluster, seen the way an operator sees it:
 * `ceph` in its admin pod, health, a host's OSDs, the pods on a node, and ceph-fuse client pods of
 * the Ceph image that mount the file system as the CSI user. cephfs.test.ts drives it.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import { cephNames } from "../../components/naming";
import { NodesCluster, waitFor } from "./cluster";

export interface CephStorageArgs {
    /** The storage's name (its file system). */
    storage: string;
    namespace: string;
    /** The node whose admin pod runs `ceph`. */
    adminNode: string;
    /** The Ceph image the client pods run. */
    image: string;
    /** Workloads whose pods cannot run here (ceph-csi's), left out of runningOn. */
    notRunning: ReadonlySet<string>;
}

/** The workload a pod belongs to: its Deployment, DaemonSet or Job. */
export function workloadOf(p: any): string {
    const ref = p.metadata.ownerReferences?.[0];
    return ref?.kind === "ReplicaSet" ? ref.name.replace(/-[a-z0-9]+$/, "") : (ref?.name ?? p.metadata.name);
}

export class CephStorage {
    readonly names: ReturnType<typeof cephNames>;

    constructor(
        private readonly cluster: NodesCluster,
        private readonly a: CephStorageArgs,
    ) {
        this.names = cephNames(a.storage);
    }

    /** The storage's admin pod on `node` (default: the admin node). */
    adminPod(node = this.a.adminNode): string {
        return this.cluster.sh(`kubectl -n ${this.a.namespace} get pods -l app.kubernetes.io/component=ceph-admin --field-selector spec.nodeName=${node} -o jsonpath='{.items[0].metadata.name}'`).trim();
    }

    /** `ceph <args>` in the admin pod as client.admin with the key file the Secret mounts, as the storage's scripts call it. */
    ceph(args: string): string {
        return this.cluster.sh(`kubectl -n ${this.a.namespace} exec ${this.adminPod()} -- sh -c 'exec ceph --name client.admin --keyfile "$ZCLOUD_CEPH_KEYS/admin" "$@"' ceph ${args}`, 120_000);
    }

    /**
     * A node's OSDs as the cluster knows them: id, uuid (its bluestore's), up, in, and upFrom, the
     * osdmap epoch of its last boot (a restarted OSD is up again only once that grows).
     */
    hostOsds(node: string): Array<{ id: number; uuid: string; up: boolean; in: boolean; upFrom: number }> {
        const tree = JSON.parse(this.ceph("osd tree -f json"));
        const host = tree.nodes.find((n: any) => n.type === "host" && n.name === node);
        const dump = JSON.parse(this.ceph("osd dump -f json"));
        return (host?.children ?? []).map((id: number) => {
            const o = dump.osds.find((x: any) => x.osd === id);
            return { id, uuid: o.uuid, up: o.up === 1, in: o.in === 1, upFrom: o.up_from };
        });
    }

    /**
     * Waits (bounded) until `ceph status` says HEALTH_OK; returns the status. The mons' stores sit
     * on this machine's one disk: below Ceph's mon_data_avail_warn (30 % free) MON_DISK_LOW is the
     * truth about that disk, the only check then allowed.
     */
    async healthOk(when: string, timeoutMs = 180_000): Promise<any> {
        const disk = fs.statfsSync(this.cluster.dir);
        const freePercent = (disk.bavail / disk.blocks) * 100;
        const allowed = freePercent < 30 ? ["MON_DISK_LOW"] : [];
        console.log(`# ${when}: this machine's disk ${freePercent.toFixed(1)} % free; checks allowed besides HEALTH_OK: ${allowed.join(", ") || "none"}`);
        return waitFor(`HEALTH_OK (${when})`, timeoutMs, () => {
            const s = JSON.parse(this.ceph("status -f json"));
            const checks = Object.keys(s.health.checks ?? {});
            if (s.health.status !== "HEALTH_OK" && !(checks.length > 0 && checks.every((c) => allowed.includes(c)))) {
                throw new Error(`${s.health.status}: ${Object.entries(s.health.checks ?? {}).map(([k, v]: [string, any]) => `${k} ${v.summary?.message}`).join("; ")}`);
            }
            return s;
        });
    }

    /** Running pods of the storage on `node`, by name: container IDs with restart counts, and readiness. */
    runningOn(node: string): Record<string, { containers: string; ready: boolean }> {
        const pods = (this.cluster.json(`get pods -n ${this.a.namespace} --field-selector spec.nodeName=${node}`).items as any[]).filter(
            (p) => p.status.phase === "Running" && !this.a.notRunning.has(workloadOf(p)),
        );
        return Object.fromEntries(
            pods.map((p) => [
                p.metadata.name,
                {
                    containers: (p.status.containerStatuses ?? []).map((c: any) => `${c.name}=${c.containerID}#${c.restartCount}`).join(","),
                    ready: (p.status.containerStatuses ?? []).every((c: any) => c.ready),
                },
            ]),
        );
    }

    /**
     * A pod of the Ceph image on `node` that mounts the file system with ceph-fuse as the CSI user,
     * in its subvolume group (the only path that user may write), at /mnt/fs, runs `script`,
     * unmounts and waits for ceph-fuse to exit (`mount_fs` and `unmount_fs` for the script).
     */
    clientPod(name: string, node: string, script: string[]): object {
        const mount = `ceph-fuse -c /etc/ceph/ceph.conf -n client.csi -k /tmp/keyring --client_fs ${this.a.storage} -r /volumes/csi /mnt/fs`;
        return {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: this.a.namespace },
            spec: {
                nodeName: node,
                restartPolicy: "Never",
                containers: [
                    {
                        name: "client",
                        image: this.a.image,
                        securityContext: { privileged: true },
                        env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: this.names.csiSecret, key: "userKey" } } }],
                        command: [
                            "bash",
                            "-c",
                            [
                                "set -eu",
                                'printf "[client.csi]\\n\\tkey = %s\\n" "$KEY" > /tmp/keyring',
                                "mkdir -p /mnt/fs",
                                `mount_fs() { ${mount}; }`,
                                // ceph-fuse closes its MDS session as it exits after the unmount; a pod
                                // that ended first would leave the session for the next mds to wait out
                                "fuse_running() { grep -qx ceph-fuse /proc/[0-9]*/comm 2>/dev/null; }",
                                'unmount_fs() { umount /mnt/fs; n=0; while fuse_running; do n=$((n + 1)); [ "$n" -le 100 ] || { echo "ceph-fuse still running 20 s after the unmount" >&2; exit 1; }; sleep 0.2; done; }',
                                "mount_fs",
                                ...script,
                                "unmount_fs",
                            ].join("\n"),
                        ],
                        volumeMounts: [
                            { name: "conf", mountPath: "/etc/ceph" },
                            { name: "fuse", mountPath: "/dev/fuse" },
                        ],
                    },
                ],
                volumes: [
                    { name: "conf", configMap: { name: this.names.conf } },
                    { name: "fuse", hostPath: { path: "/dev/fuse", type: "CharDevice" } },
                ],
            },
        };
    }

    /** Starts a client pod (clientPod). */
    startClient(name: string, node: string, script: string[]): void {
        this.cluster.sh(`kubectl apply -f - <<'EOF'\n${JSON.stringify(this.clientPod(name, node, script))}\nEOF`);
    }

    /** Runs a client pod to its end; returns its log (the pod must succeed). */
    async runClient(name: string, node: string, script: string[], timeoutMs = 240_000): Promise<string> {
        this.startClient(name, node, script);
        const phase = await waitFor(`the client pod ${name} finished`, timeoutMs, () => {
            const p = this.cluster.json(`get pod ${name} -n ${this.a.namespace}`).status.phase;
            return p === "Succeeded" || p === "Failed" ? p : undefined;
        });
        const logs = this.cluster.sh(`kubectl -n ${this.a.namespace} logs ${name}`);
        assert.equal(phase, "Succeeded", logs);
        return logs;
    }

    /** The files under /mnt/fs/<dir> read back by a client pod: how many match their `sums`, of how many listed. */
    async readBack(name: string, node: string, dir: string): Promise<{ ok: number; listed: number }> {
        const check = await this.runClient(name, node, [`cd /mnt/fs/${dir}`, "echo checked: $(sha256sum -c sums | grep -c ': OK$') of $(wc -l < sums)", "cd /"]);
        const m = /^checked: (\d+) of (\d+)$/m.exec(check);
        assert.ok(m, check);
        return { ok: Number(m[1]), listed: Number(m[2]) };
    }
}
