/**
 * Pure helpers of the gated roll of a CephFS storage's daemons (no Pulumi objects): the order in
 * which daemons restart, the health gates between them (ceph-gate.sh arguments as rendered), and
 * the hash a gate carries of the pod templates it guards. Unit-tested without mocks.
 */
import { createHash } from "node:crypto";
import { cephNames, labelDomain, mdsIds, mgrIds, monPlacement } from "../naming";

/** The environment variable that carries the hash of what a gate guards (never `triggers`). */
export const gateGuardsEnv = "ZCLOUD_GATE_GUARDS";

/** What the roll of one storage is planned from: its name, fsid and node -> devices. */
export interface CephRollPlan {
    storage: string;
    fsid: string;
    hosts: Record<string, string[]>;
    /** Bound of each gate's wait, seconds. */
    timeoutSeconds: number;
}

/** A daemon workload restarting (its Deployment updated), in roll order. */
export interface CephRollRestart {
    kind: "restart";
    daemon: "mon" | "mgr" | "osd" | "mds";
    /** Daemon id (mon, mgr, mds) or the CRUSH host = node name (OSDs). */
    id: string;
    /** The Deployments restarted at this step (one, or every OSD of one host). */
    workloads: string[];
}

/** A health gate: ceph-gate.sh run with `args` in the storage's admin pod. */
export interface CephRollGate {
    kind: "gate";
    /** The gate's Pulumi resource name. */
    name: string;
    /** ceph-gate.sh's arguments exactly as the gate resource renders them. */
    args: string[];
    /** The Deployments whose pod templates the gate guards (it runs again when one changes). */
    guards: string[];
    /** The roll's first gate (see CephGateOrder.first). */
    first?: boolean;
}

export type CephRollStep = CephRollRestart | CephRollGate;

/** CRUSH hosts (= node names) in the roll's order: sorted, so the config's order does not matter. */
export function rollHostOrder(hosts: Record<string, string[]>): string[] {
    return Object.keys(hosts).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The gate resource name of one step of a storage: `<storage>-gate-<what>`. */
export function gateResourceName(storage: string, what: string): string {
    return `${storage}-gate-${what}`;
}

/** A gate of the roll's order, before rendering: its action and arguments without --fsid/--timeout. */
export interface CephGateOrder {
    kind: "gate";
    name: string;
    action: string[];
    guards: string[];
    /**
     * The roll's first gate: it passes, without asking Ceph, while none of the storage's daemon
     * Deployments exists (the storage's creation: no daemon runs that a restart could disrupt).
     */
    first?: boolean;
}

/** The gate before the roll's first restart (it guards every daemon workload of the storage). */
export const rollStartGate = "roll-start";

/**
 * The roll of one storage, in order: the roll-start gate (it guards every daemon, so it runs
 * before whichever daemon a change restarts first: every mon in the quorum, no OSD down but in,
 * every PG active); mon by mon, each followed by its quorum gate; mgr by mgr,
 * each followed by its availability gate; `noout set`; per CRUSH host (sorted): the ok-to-stop
 * gate, that host's OSD Deployments, the up gate; `noout unset`; then mds by mds: the handover
 * gate, the mds, the fs-active gate. The program chains its Deployments and gate resources in
 * exactly this order (each depends on the step before it). A host without devices has no step.
 */
export function cephRollOrder(storage: string, hostDevices: Record<string, string[]>): Array<CephRollRestart | CephGateOrder> {
    const names = cephNames(storage);
    const gate = (what: string, action: string[], guards: string[]): CephGateOrder => ({ kind: "gate", name: gateResourceName(storage, what), action, guards });
    const hosts = rollHostOrder(hostDevices).filter((h) => hostDevices[h].length > 0);
    const hostOsds = (h: string) => hostDevices[h].map((d) => names.osd(h, d));
    const allOsds = hosts.flatMap(hostOsds);
    const mons = monPlacement(Object.keys(hostDevices)).map((m) => m.id);
    const mgrs = mgrIds(Object.keys(hostDevices).length);
    const every = [...mons.map((id) => names.mon(id)), ...mgrs.map((id) => names.mgr(id)), ...allOsds, ...mdsIds.map((id) => names.mds(id))];
    const steps: Array<CephRollRestart | CephGateOrder> = [{ ...gate(rollStartGate, [rollStartGate], every), first: true }];
    for (const id of mons) {
        const w = names.mon(id);
        steps.push({ kind: "restart", daemon: "mon", id, workloads: [w] });
        steps.push(gate(`mon-${id}`, ["mon-quorum", "--id", id], [w]));
    }
    for (const id of mgrs) {
        const w = names.mgr(id);
        steps.push({ kind: "restart", daemon: "mgr", id, workloads: [w] });
        steps.push(gate(`mgr-${id}`, ["mgr-available", "--id", id], [w]));
    }
    steps.push(gate("noout-set", ["noout", "set"], allOsds));
    for (const h of hosts) {
        steps.push(gate(`${h}-ok-to-stop`, ["osd-ok-to-stop", "--host", h], hostOsds(h)));
        steps.push({ kind: "restart", daemon: "osd", id: h, workloads: hostOsds(h) });
        steps.push(gate(`${h}-osd-up`, ["osd-up", "--host", h, "--osds", String(hostOsds(h).length)], hostOsds(h)));
    }
    steps.push(gate("noout-unset", ["noout", "unset"], allOsds));
    for (const id of mdsIds) {
        const w = names.mds(id);
        steps.push(gate(`mds-${id}-handover`, ["mds-handover", "--name", id, "--fs", storage], [w]));
        steps.push({ kind: "restart", daemon: "mds", id, workloads: [w] });
        steps.push(gate(`mds-${id}-active`, ["fs-active", "--fs", storage, "--name", id], [w]));
    }
    return steps;
}

/** The daemon components of a storage, whose Deployments the roll restarts. */
export const cephDaemonComponents = ["ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds"];

/**
 * The label selector of a storage's daemon Deployments (its common labels): the roll's first
 * gate passes while it matches none (cephfs-gate.sh --daemons).
 */
export function daemonSelector(storage: string): string {
    return `${labelDomain}/storage=${storage},app.kubernetes.io/component in (${cephDaemonComponents.join(",")})`;
}

/** ceph-gate.sh's arguments of one gate as the gate resource renders them. */
export function renderGateArgs(action: string[], fsid: string, timeoutSeconds: number): string[] {
    if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) {
        throw new Error(`a gate's timeout must be a whole number of seconds >= 1, got ${timeoutSeconds}`);
    }
    return [...action, "--fsid", fsid, "--timeout", String(timeoutSeconds)];
}

/**
 * Every step of a roll of one planned storage, in order, each gate with ceph-gate.sh's arguments
 * exactly as its resource renders them (cephRollOrder, renderGateArgs): what the Ceph tier runs
 * to prove the roll on real daemons.
 */
export function cephRollSteps(p: CephRollPlan): CephRollStep[] {
    return cephRollOrder(p.storage, p.hosts).map((s) =>
        s.kind === "restart" ? s : { kind: "gate", name: s.name, args: renderGateArgs(s.action, p.fsid, p.timeoutSeconds), guards: s.guards, ...(s.first ? { first: true } : {}) },
    );
}

/** Object keys sorted at every level: one JSON text per value, whatever the key order. */
function canonical(v: unknown): unknown {
    if (Array.isArray(v)) {
        return v.map(canonical);
    }
    if (v !== null && typeof v === "object") {
        return Object.fromEntries(
            Object.keys(v as Record<string, unknown>)
                .sort()
                .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
                .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
        );
    }
    return v;
}

/**
 * sha256 (hex) of the pod templates a gate guards, by workload name: key order inside a template
 * and the order of the workloads do not matter; any change of a template's value does. A gate
 * carries it in its environment, so it runs again (an update, never a replace) whenever what it
 * guards changes.
 */
export function guardHash(templates: Record<string, unknown>): string {
    return createHash("sha256").update(JSON.stringify(canonical(templates))).digest("hex");
}

/** sha256 (hex) of a config text: the pod annotation that restarts daemons on a ceph.conf change. */
export function configHash(text: string): string {
    return createHash("sha256").update(text).digest("hex");
}
