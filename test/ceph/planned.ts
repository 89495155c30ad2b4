/**
 * What the program renders for the Ceph tier's stack, taken from the offline plan (the real
 * program under the mock runtime): container commands, env and mounts of the mon, mgr, mds, OSD
 * workloads, the admin DaemonSet and the filesystem Job; the ConfigMap's ceph.conf; the script
 * sets' ConfigMaps (what the pods mount and the drain reads); the node disk commands; the
 * delete-time drain. The tier runs these, substituting only paths and devices.
 */
import * as assert from "node:assert/strict";
import * as yaml from "js-yaml";
import { deviceSlug } from "../../components/cephfs/cluster";
import { planYaml, PlanRun, PlannedResource } from "../helpers/plan";
import { PlannedCopy, plannedCopy } from "../helpers/planned";

export interface EnvVar {
    name: string;
    value?: string;
    valueFrom?: { fieldRef?: { fieldPath: string } };
}
export interface VolumeMount {
    name: string;
    mountPath: string;
    readOnly?: boolean;
}
export interface Volume {
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string; defaultMode?: number; items?: Array<{ key: string; path: string }> };
    hostPath?: { path: string; type?: string };
    emptyDir?: Record<string, never>;
    projected?: { defaultMode?: number; sources: Array<{ configMap?: { name: string; items?: Array<{ key: string; path: string }> } }> };
}
export interface PlannedContainer {
    /** `<workload>/<container>`, for messages. */
    id: string;
    command: string[];
    env: EnvVar[];
    volumeMounts: VolumeMount[];
    /** The pod's volumes (what each mount is). */
    volumes: Volume[];
}
export interface PlannedDisks {
    create: string;
    update: string;
    delete: string;
    /** The script copy the command runs (the engine makes it first). */
    copy: PlannedCopy;
}
export interface PlannedDrain {
    /** The local command's delete string (`sh -c '<cephfs-osd-remove.sh>' cephfs-osd-remove ...`). */
    delete: string;
    /** Its environment (only a kubeconfig's content, when the stack gives one). */
    environment?: Record<string, string>;
}

export interface PlannedGate {
    /** The local command's create string (the stub naming cephfs-gate's set, then its arguments). */
    create: string;
    /** Its environment (the guard hash; a kubeconfig's content when the stack gives one). */
    environment?: Record<string, string>;
}

/** The tier's stack: one cephfs storage on the test host as two nodes (+ a wipe storage). */
export interface TierStack {
    storage: string;
    /** node -> devices of the main storage (crush hosts of the test cluster). */
    hosts: Record<string, string[]>;
    /** A second storage with `wipe: true` on its own node, only for its disk command. */
    wipeStorage: string;
    wipeHosts: Record<string, string[]>;
    kubeContext: string;
    /** The main storage's `replicas`, when the config sets it (left out: its default). */
    replicas?: number;
    /** `zcloud-storage:monitoring: {}` (its defaults): the metrics Job, Services and rules are planned. */
    monitoring?: boolean;
}

export function tierStackYaml(s: TierStack): string {
    // One loopback address per node (distinct nodes are distinct SSH endpoints); the tier runs the
    // planned commands locally, so the addresses are never dialled.
    const nodes = Object.fromEntries([...Object.keys(s.hosts), ...Object.keys(s.wipeHosts)].map((n, i) => [n, { address: `127.0.0.${i + 1}` }]));
    return yaml.dump({
        config: {
            "kubernetes:context": s.kubeContext,
            "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:ceph-tier" } },
            "zcloud-storage:nodes": nodes,
            "zcloud-storage:cephfs": [
                { name: s.storage, hosts: s.hosts, ...(s.replicas === undefined ? {} : { replicas: s.replicas }) },
                { name: s.wipeStorage, hosts: s.wipeHosts, wipe: true },
            ],
            ...(s.monitoring ? { "zcloud-storage:monitoring": {} } : {}),
        },
    });
}

export class CephPlan {
    private constructor(
        readonly stack: TierStack,
        readonly run: PlanRun,
    ) {}

    static async plan(stack: TierStack): Promise<CephPlan> {
        const run = await planYaml(tierStackYaml(stack));
        assert.equal(run.error, undefined, `the tier's stack does not plan: ${JSON.stringify(run.error)}`);
        return new CephPlan(stack, run);
    }

    resource(name: string, type?: string): PlannedResource {
        const found = this.run.resources.filter((r) => r.name === name && (!type || r.type === type));
        assert.equal(found.length, 1, `expected one planned ${name}${type ? ` (${type})` : ""}, found ${found.length}`);
        return found[0];
    }

    /** ceph.conf as the storage's ConfigMap holds it. */
    get conf(): string {
        const cm = this.resource(`${this.stack.storage}-ceph-conf`, "kubernetes:core/v1:ConfigMap").inputs as { data: Record<string, string> };
        return cm.data["ceph.conf"];
    }
    get fsid(): string {
        return /^fsid = (\S+)$/m.exec(this.conf)![1];
    }
    /** The one mon's address in ceph.conf (the mon Service's ClusterIP). */
    get monIp(): string {
        const m = /^mon_host = \[v2:([0-9.]+):3300,v1:([0-9.]+):6789\]$/m.exec(this.conf);
        assert.ok(m && m[1] === m[2], `mon_host of one mon on one address expected:\n${this.conf}`);
        return m[1];
    }

    /** Every mon's address (id -> its Service's ClusterIP) in ceph.conf's mon_host, in order. */
    get monIps(): Record<string, string> {
        const hosts = /^mon_host = (.*)$/m.exec(this.conf)![1];
        const ips = [...hosts.matchAll(/\[v2:([0-9.]+):3300,v1:\1:6789\]/g)].map((m) => m[1]);
        assert.ok(ips.length > 0, `mon_host of v2+v1 addresses expected:\n${this.conf}`);
        return Object.fromEntries(ips.map((ip, i) => [String.fromCharCode(97 + i), ip]));
    }

    /** The planned script-set ConfigMaps (`ceph-<storage>-scripts-<set>-<id>`): name -> data. */
    get scriptSets(): Record<string, Record<string, string>> {
        const sets = this.run.resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && /-scripts-[a-z-]+-[0-9a-f]{12}$/.test(r.name));
        assert.ok(sets.length > 0, "no script-set ConfigMaps in the plan");
        return Object.fromEntries(sets.map((r) => {
            const inputs = r.inputs as { metadata: { name: string }; data: Record<string, string>; immutable?: boolean };
            assert.equal(inputs.immutable, true, `${r.name} is immutable`);
            return [inputs.metadata.name, inputs.data];
        }));
    }

    /** A container (or init container) of a planned Deployment, DaemonSet or Job. */
    container(resourceName: string, containerName: string): PlannedContainer {
        const workloads = this.run.resources.filter((r) => r.name === resourceName && /^kubernetes:(apps\/v1:(Deployment|DaemonSet)|batch\/v1:Job)$/.test(r.type));
        assert.equal(workloads.length, 1, `expected one planned workload ${resourceName}, found ${workloads.length}`);
        const inputs = workloads[0].inputs as {
            spec: { template: { spec: { containers: Array<PlannedContainer & { name: string }>; initContainers?: Array<PlannedContainer & { name: string }>; volumes: Volume[] } } };
        };
        const pod = inputs.spec.template.spec;
        const found = [...(pod.initContainers ?? []), ...pod.containers].filter((c) => c.name === containerName);
        assert.equal(found.length, 1, `${resourceName}: no single container ${containerName}`);
        const c = found[0];
        for (const word of c.command) assert.equal(typeof word, "string", `${resourceName}/${containerName}: command has a non-string word`);
        return { id: `${resourceName}/${containerName}`, command: c.command, env: c.env ?? [], volumeMounts: c.volumeMounts ?? [], volumes: pod.volumes };
    }

    /** The `<storage>-<node>-disks` remote command of a node. */
    disks(storage: string, node: string): PlannedDisks {
        const resource = this.resource(`${storage}-${node}-disks`, "command:remote:Command");
        const inputs = resource.inputs as Record<string, unknown>;
        const get = (k: string) => {
            const v = inputs[k];
            assert.ok(typeof v === "string" && v !== "[secret]", `${storage}-${node}-disks: ${k} is not a plain string`);
            return v;
        };
        // An unset `update` makes the command provider run `create` again on an update.
        return { create: get("create"), update: get(inputs.update === undefined ? "create" : "update"), delete: get("delete"), copy: plannedCopy(this.run.resources, resource) };
    }

    /** A gate local command of the roll (`<storage>-gate-<step>`): its create and environment. */
    gate(name: string): PlannedGate {
        const inputs = this.resource(name, "command:local:Command").inputs as unknown as PlannedGate;
        assert.equal(typeof inputs.create, "string");
        return inputs;
    }

    /** The leave local command of mon `id` (its delete takes the mon out of the monmap). */
    monLeave(id: string): PlannedDrain {
        const inputs = this.resource(`${this.stack.storage}-mon-${id}-leave`, "command:local:Command").inputs as unknown as PlannedDrain;
        assert.equal(typeof inputs.delete, "string");
        return inputs;
    }

    /** The drain local command of (node, declared device). */
    drain(node: string, device: string): PlannedDrain {
        const inputs = this.resource(`${this.stack.storage}-${node}-osd-${deviceSlug(device)}-drain`, "command:local:Command").inputs as unknown as PlannedDrain;
        assert.equal(typeof inputs.delete, "string");
        return inputs;
    }
}

/**
 * A planned node command with its device list replaced: the string must end with
 * ` <declared devices>` (the script's last arguments); only those words change.
 */
export function withDevices(command: string, declared: string[], devices: string[]): string {
    const tail = " " + declared.join(" ");
    assert.ok(command.endsWith(tail), `planned command does not end with its devices ${tail}`);
    return command.slice(0, -tail.length) + " " + devices.join(" ");
}
