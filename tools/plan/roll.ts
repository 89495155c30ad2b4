import { gateGuardsEnv } from "../../components/cephfs/gates";
import { Change } from "./diff";
import { urnName } from "./describe";
import { PlannedResource } from "./model";

/**
 * A roll gate of the plan: a local command that runs cephfs-gate.sh (its environment, which
 * carries the guard hash, is one "[secret]" where the kubeconfig travels in it).
 */
export function isRollGate(r: PlannedResource): boolean {
    const env = (r.inputs as { environment?: unknown }).environment;
    const create = (r.inputs as { create?: unknown }).create;
    return (
        r.type === "command:local:Command" &&
        typeof create === "string" &&
        create.includes("' cephfs-gate ") &&
        (typeof env !== "object" || env === null || gateGuardsEnv in env)
    );
}

/**
 * How an updated roll gate's command changed, in words: its check's arguments (`osd-up --host n4
 * --osds 2` -> `... --osds 1`), or what runs it (its script set, the local script, the kubectl
 * target). `told`: the fields the note tells (the diff then shows no raw "create changed").
 */
export function gateChangeNote(c: Change): { told: string[]; note?: string } {
    if (c.kind !== "update" || !c.before || !isRollGate(c.resource) || !isRollGate(c.before)) {
        return { told: [] };
    }
    const phases = c.fields.filter((f) => f === "create" || f === "update");
    if (phases.length === 0) {
        return { told: [] };
    }
    const check = (r: PlannedResource) => gateArgs(r).replace(/ --fsid \S+/, "");
    const runner = (r: PlannedResource) => {
        const run = String((r.inputs as { create?: unknown }).create ?? "");
        return run.slice(0, run.lastIndexOf(" -- "));
    };
    const parts = [
        ...(check(c.before) !== check(c.resource) ? [`its check changes: ${check(c.before)} -> ${check(c.resource)}`] : []),
        ...(runner(c.before) !== runner(c.resource) ? ["its script set or kubectl target changes"] : []),
    ];
    return { told: phases, note: `${parts.join("; ")}; the gate runs again` };
}

/** ceph-gate.sh's arguments a gate renders (its command after `--`). */
export function gateArgs(r: PlannedResource): string {
    const run = String((r.inputs as { create?: unknown }).create ?? "");
    const at = run.lastIndexOf(" -- ");
    return at < 0 ? "" : run.slice(at + 4);
}

/**
 * The rolls of a plan, per storage: its daemon Deployments and gates in the order `pulumi up`
 * runs them (each depends on the one before it), a plan's order among equals.
 */
export function rollChains(resources: PlannedResource[]): Map<string, PlannedResource[]> {
    const gates = resources.filter(isRollGate);
    const parents = new Set(gates.map((g) => g.parent));
    const chains = new Map<string, PlannedResource[]>();
    for (const parent of parents) {
        const members = resources.filter((r) => r.parent === parent && (isRollGate(r) || r.type === "kubernetes:apps/v1:Deployment"));
        const urns = new Set(members.map((m) => m.urn));
        const placed = new Set<string>();
        const order: PlannedResource[] = [];
        while (order.length < members.length) {
            const next = members.find((m) => !placed.has(m.urn) && m.dependencies.every((d) => !urns.has(d) || placed.has(d)));
            if (next === undefined) {
                throw new Error(`the roll of ${urnName(parent)} has a dependency cycle`);
            }
            placed.add(next.urn);
            order.push(next);
        }
        chains.set(urnName(parent), order);
    }
    return chains;
}

/**
 * What `--diff` adds under the changes when Ceph daemons restart: per storage, the restarts and
 * the gates that run, numbered in the order `pulumi up` runs them. A storage whose gates run
 * again with no restart (a change of the gate script alone) gets its own block: the gates act too
 * (noout set and cleared, each mds handover moves an active rank to its standby). Empty when
 * neither.
 */
export function renderRollOrder(changes: Change[], resources: PlannedResource[]): string {
    const changed = new Map(changes.filter((c) => c.kind !== "delete").map((c) => [c.resource.urn, c.kind]));
    const restarts: string[] = [];
    const gatesOnly: string[] = [];
    for (const [storage, chain] of rollChains(resources)) {
        const steps = chain.filter((r) => changed.has(r.urn) && (isRollGate(r) || changed.get(r.urn) !== "create"));
        const restarting = steps.some((r) => !isRollGate(r));
        // gates only created (a new storage, or its gates' first up) check nothing worth telling
        if (!restarting && !steps.some((r) => changed.get(r.urn) !== "create")) {
            continue;
        }
        (restarting ? restarts : gatesOnly).push(
            `  ${storage}:`,
            ...steps.map((r, i) => `    ${String(i + 1).padStart(2)}. ${isRollGate(r) ? `gate    ${gateArgs(r).replace(/ --fsid \S+/, "")}` : `restart ${r.name}`}`),
        );
    }
    return [
        ...(restarts.length ? ["Ceph daemons restart one at a time, in this order (each gate waits, bounded, for the cluster's health):", ...restarts] : []),
        ...(gatesOnly.length ? ["Ceph health gates run again, in this order, with no daemon restart (each acts as in a roll: noout set and unset set and clear the flag, an mds handover fails its MDS over to the standby when it holds a rank, a pause of a few seconds for clients):", ...gatesOnly] : []),
    ].join("\n");
}

/**
 * Storages whose gates have no kubectl target (neither kubernetes:context nor
 * kubernetes:kubeconfig): the first gate will refuse at `pulumi up` (as a drain does), so the
 * plan says so before anything runs.
 */
export function rollAdvisories(resources: PlannedResource[]): string[] {
    const untargeted = new Set(
        resources
            .filter(isRollGate)
            .filter((g) => {
                const run = String((g.inputs as { create?: unknown }).create ?? "");
                const opts = run.slice(run.lastIndexOf("' cephfs-gate "), run.lastIndexOf(" -- "));
                return !/ --(context|kubeconfig|kubeconfig-from-env)( |$)/.test(opts);
            })
            .map((g) => urnName(g.parent)),
    );
    return [...untargeted].map(
        (s) =>
            `cephfs storage ${s}: neither kubernetes:context nor kubernetes:kubeconfig is set, so its health gates (and drains) cannot tell which cluster to ask: at pulumi up the first gate (roll-start) refuses and no daemon starts or restarts. Set one of them (docs/cephfs.md "Rolling restarts behind health gates").`,
    );
}
