/**
 * What an older program's plan becomes under today's, less the changes every upgrade test would
 * otherwise repeat, each asserted by a test of its own:
 * - the node labels' move: an older program's plan labels nodes by NodePatches, the program now by
 *   label commands of the same names (each NodePatch deleted, the command of its name created);
 * - script-only updates: a node command whose every changed phase runs another script set with the
 *   same arguments (a node script or the stub changed), and its script copy's new bundle. Each
 *   re-runs its idempotent apply in place; test/plan/node-scripts-upgrade.test.ts and
 *   bundle-upgrade.test.ts assert them;
 * - the mons' leave resources (a CephFS storage's `<s>-mon-<b|c>-leave`, nothing on create) and
 *   their two script sets' ConfigMaps, created once; test/plan/ceph-shrink.test.ts asserts them.
 */
import assert from "node:assert/strict";
import { nodeCommandArgs } from "../../tools/plan/describe";
import { Change, diffPlans } from "../../tools/plan/diff";
import { PlannedResource } from "../../tools/plan/model";
import { ScriptSetScript, cephScriptSetName } from "../../components/cephfs/scripts";
import { isRollGate } from "../../tools/plan/roll";

export const NODE_PATCH = "kubernetes:core/v1:NodePatch";
export const LABEL_COMMAND = "command:local:Command";

/** Asserts the move's shape (per NodePatch: its delete and one create of the command named alike) and returns the other changes. */
export function withoutLabelMove(changes: Change[]): Change[] {
    const patches = changes.filter((c) => c.resource.type === NODE_PATCH);
    for (const p of patches) {
        assert.equal(p.kind, "delete", `${p.resource.name}: the NodePatch is deleted`);
        const created = changes.filter((c) => c.resource.name === p.resource.name && c.resource.type === LABEL_COMMAND);
        assert.deepEqual(created.map((c) => c.kind), ["create"], `${p.resource.name}: its label command is created`);
    }
    const moved = new Set(patches.map((p) => p.resource.name));
    return changes.filter((c) => !moved.has(c.resource.name) || (c.resource.type !== NODE_PATCH && c.resource.type !== LABEL_COMMAND));
}

const phases = new Set(["create", "update", "delete"]);
const copyFields = new Set(["remotePath", "source.path", "source.sha256"]);
const sameRun = (a: unknown, b: unknown) =>
    typeof a === "string" && typeof b === "string" && nodeCommandArgs(a) !== "" && nodeCommandArgs(a) === nodeCommandArgs(b) && a.startsWith("sudo -n ") === b.startsWith("sudo -n ");

/** An update that only moves a node command, or its copy, to another script set. */
export function isScriptOnlyUpdate(c: Change): boolean {
    if (c.kind !== "update" || !c.before) return false;
    if (c.resource.type === "command:remote:Command") {
        return c.fields.length > 0 && c.fields.every((f) => phases.has(f) && sameRun(c.before!.inputs[f], c.resource.inputs[f]));
    }
    if (c.resource.type === "command:remote:CopyToRemote") {
        return c.fields.length > 0 && c.fields.every((f) => copyFields.has(f));
    }
    return false;
}

/** The creates that add the mons' leave resources and their script sets' ConfigMaps. */
export function isMonLeaveAddition(c: Change): boolean {
    const leave = c.resource.type === LABEL_COMMAND && /-mon-[bc]-leave$/.test(c.resource.name);
    const set = c.resource.type === "kubernetes:core/v1:ConfigMap" && /^ceph-.+-scripts-(cephfs-)?mon-remove-[0-9a-f]{12}$/.test(c.resource.name);
    if (leave || set) {
        assert.equal(c.kind, "create", `${c.resource.name}: created`);
    }
    return leave || set;
}

/** diffPlans of an older program's plan and today's, without the node labels' move (asserted), script-only updates and the mons' leave additions. */
export function upgradeDiff(before: PlannedResource[], after: PlannedResource[]): Change[] {
    return withoutLabelMove(diffPlans(before, after)).filter((c) => !isScriptOnlyUpdate(c) && !isMonLeaveAddition(c));
}

/** A script set's ConfigMap moved: this program's created, the plan's older ones of that set deleted. */
function setMoved(was: PlannedResource[], storage: string, script: ScriptSetScript): string[] {
    const configMap = "kubernetes:core/v1:ConfigMap";
    const now = cephScriptSetName(storage, script);
    const prefix = now.replace(/[0-9a-f]{12}$/, "");
    return [`create ${configMap} ${now}`, ...was.filter((r) => r.type === configMap && r.name.startsWith(prefix) && r.name !== now).map((r) => `delete ${configMap} ${r.name}`)];
}

/**
 * What the shrink change (ceph-fs.sh's fewer-copies refusal, cephfs-osd-remove.sh's drain lock)
 * brings to a CephFS storage made since its script sets had ConfigMaps, as `<kind> <type> <name>
 * [fields]` lines: both sets' ConfigMaps moved (the new created, the old deleted), the filesystem
 * Job replaced (its template names the new fs set; it re-runs ceph-fs.sh apply, idempotent), and
 * every drain's delete updated in place (nothing runs). test/plan/ceph-shrink.test.ts asserts them
 * against the program before it.
 */
export function shrinkScriptMoves(was: PlannedResource[], storage = "shared-fs"): string[] {
    const lines = [...setMoved(was, storage, "ceph-fs.sh"), ...setMoved(was, storage, "cephfs-osd-remove.sh")];
    lines.push(`replace kubernetes:batch/v1:Job ${storage}-filesystem spec.template.metadata,spec.template.spec`);
    lines.push(...was.filter((r) => r.type === LABEL_COMMAND && r.name.startsWith(`${storage}-`) && r.name.endsWith("-drain")).map((r) => `update ${LABEL_COMMAND} ${r.name} delete`));
    return lines;
}

/**
 * What the two daemon changes after 35cf797 bring to a CephFS storage made since its script sets
 * had ConfigMaps, as the lines of shrinkScriptMoves: mon-init's owner hand-over (ceph-mon-init.sh
 * gives a store of another uid to the image's ceph user) moves the mon-init set's ConfigMap and
 * updates each mon's Deployment in place (its pod template names the new set); the managers and
 * metadata servers pinned to the storage's hosts update theirs (a nodeSelector); every gate
 * guarding them (`roll-start`, `mon-<id>`, `mgr-<id>`, the mds handovers and fs-active) takes the
 * new guard. So the daemons but the OSDs restart once, one at a time through their gates.
 * test/plan/ceph-daemons-upgrade.test.ts asserts them against the program before them.
 */
export function cephDaemonMoves(was: PlannedResource[], storage = "shared-fs", mons = ["a", "b", "c"], mgrs = ["a", "b"], mdss = ["a", "b"]): string[] {
    const deployment = "kubernetes:apps/v1:Deployment";
    const gates = ["roll-start", ...mons.map((id) => `mon-${id}`), ...mgrs.map((id) => `mgr-${id}`), ...mdss.flatMap((id) => [`mds-${id}-handover`, `mds-${id}-active`])];
    return [
        ...setMoved(was, storage, "ceph-mon-init.sh"),
        ...mons.map((id) => `update ${deployment} ceph-${storage}-mon-${id} spec.template.metadata,spec.template.spec`),
        ...[...mgrs.map((id) => `mgr-${id}`), ...mdss.map((id) => `mds-${id}`)].map((d) => `update ${deployment} ceph-${storage}-${d} spec.template.spec`),
        ...gates.map((gate) => `update ${LABEL_COMMAND} ${storage}-gate-${gate} environment.ZCLOUD_GATE_GUARDS`),
    ];
}

/**
 * The roll `--diff` tells for cephDaemonMoves and cephGateMoves on the shared-fs storage (three
 * mons, two mgrs, two mdss, hosts node4, node5 and node6 with 1, 1 and 2 OSDs; tools/plan/roll.ts
 * renderRollOrder's step lines): roll-start, each mon behind its quorum gate, each mgr behind its
 * gate, the OSD hosts' gates (none of their OSDs restarts), each mds between its handover and
 * fs-active. `restarts: false`: cephGateMoves alone, every gate and no restart.
 */
export function cephDaemonRollOrder(storage = "shared-fs", timeout = 600, restarts = true): string[] {
    const restart = (workload: string) => (restarts ? [`restart ${workload}`] : []);
    const steps = [
        `gate    roll-start --timeout ${timeout}`,
        ...["a", "b", "c"].flatMap((id) => [...restart(`ceph-${storage}-mon-${id}`), `gate    mon-quorum --id ${id} --timeout ${timeout}`]),
        ...["a", "b"].flatMap((id) => [...restart(`ceph-${storage}-mgr-${id}`), `gate    mgr-available --id ${id} --timeout ${timeout}`]),
        `gate    noout set --timeout ${timeout}`,
        ...Object.entries({ node4: 1, node5: 1, node6: 2 }).flatMap(([host, osds]) => [`gate    osd-ok-to-stop --host ${host} --timeout ${timeout}`, `gate    osd-up --host ${host} --osds ${osds} --timeout ${timeout}`]),
        `gate    noout unset --timeout ${timeout}`,
        ...["a", "b"].flatMap((id) => [
            `gate    mds-handover --name ${id} --fs ${storage} --timeout ${timeout}`,
            ...restart(`ceph-${storage}-mds-${id}`),
            `gate    fs-active --fs ${storage} --name ${id} --timeout ${timeout}`,
        ]),
    ];
    return steps.map((s, i) => `${String(i + 1).padStart(6)}. ${s}`);
}

/**
 * What the gate script's change after 91b472e (ceph-gate.sh's ok-to-stop waits, bounded, for
 * placement groups inactive already instead of refusing) brings to a CephFS storage, as the lines
 * of shrinkScriptMoves: the gate set's ConfigMap moved, and every gate of the storage updated in
 * its `create` (the set it names): each runs once on the next up, in the roll's order, and no
 * daemon restarts for it. test/plan/ceph-gate-upgrade.test.ts asserts them.
 */
export function cephGateMoves(was: PlannedResource[], storage = "shared-fs"): string[] {
    const gates = was.filter((r) => isRollGate(r) && r.name.startsWith(`${storage}-gate-`));
    return [...setMoved(was, storage, "ceph-gate.sh"), ...gates.map((g) => `update ${LABEL_COMMAND} ${g.name} create`)];
}

/** Change lines (`<kind> <type> <name> [fields]`) with one update line per resource: the fields of its updates joined, sorted, as diffPlans lists them. */
export function mergedUpdates(lines: string[]): string[] {
    const updates = new Map<string, Set<string>>();
    const rest: string[] = [];
    for (const line of lines) {
        const [kind, type, name, fields] = line.split(" ");
        if (kind !== "update") {
            rest.push(line);
            continue;
        }
        const key = `${type} ${name}`;
        const set = updates.get(key) ?? new Set<string>();
        for (const f of (fields ?? "").split(",").filter(Boolean)) set.add(f);
        updates.set(key, set);
    }
    return [...rest, ...[...updates].map(([key, fields]) => `update ${key}${fields.size ? " " + [...fields].sort().join(",") : ""}`)];
}
