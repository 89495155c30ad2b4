/**
 * Shrinking a CephFS storage (hosts removed): what the graph makes Pulumi do and what the diff
 * refuses. The mons that no longer have a place (three hosts shrunk below three: b and c) leave
 * the monmap through their leave resource before their workload goes, one at a time; the OSD
 * drains run before the mons leave; a pool size that would fall only because replicas is left to
 * its default is refused. The cluster side is proven in the Ceph tier (test/ceph/roll.test.ts).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { diffPlans } from "../../tools/plan/diff";
import { monLeaveRefusals, replicaRefusals } from "../../tools/plan/cephShrink";
import { CONFIG_MAP, DAEMON_SET, DEPLOYMENT, LOCAL, PlanRun, PlannedResource, baseConfig, nodesThrough, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";
import { plan as planCli } from "../helpers/planCli";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { cephDaemonMoves, cephGateMoves, isMonLeaveAddition, mergedUpdates, shrinkScriptMoves, withoutLabelMove } from "../helpers/labelMove";
import { cephScriptSetName } from "../../components/cephfs/scripts";

const nodes = nodesThrough(6);
const hostKeys = Object.fromEntries(["node3", "node4", "node5", "node6"].map((n) => [n, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ${n}`]));
const ssh = { ...baseConfig.ssh, hostKeys: { ...baseConfig.ssh.hostKeys, ...hostKeys } };
const dev = (n: number) => `/dev/disk/by-id/wwn-0x${n}`;
const fourHosts = { node3: [dev(3)], node4: [dev(4)], node5: [dev(5)], node6: [dev(6)] };
/** Two of the four hosts removed, not next to each other in the roll (a kept host's gates between them). */
const twoHosts = { node3: [dev(3)], node5: [dev(5)] };
const cephfs = (hosts: Record<string, string[]>, extra: Record<string, unknown> = {}) => ({ ...baseConfig, "kubernetes:context": "prod-admin", ssh, nodes, cephfs: [{ name: "shared-fs", hosts, ...extra }] });

/** The last commit before the shrink change. */
const beforeShrinkCommit = "f53637da3844ec8ec765f556454b4eaa9c2f5282";
const existing = plansBeforeAndNow(beforeShrinkCommit, { ...cephfs({ node3: [dev(3)], node4: [dev(4)], node5: [dev(5), dev(6)] }), "kubernetes:context": "prod-admin" });

let four: PlanRun;
let two: PlanRun;
let twoExplicit: PlanRun;
before(async () => {
    [four, two, twoExplicit] = await Promise.all([planValues(cephfs(fourHosts)), planValues(cephfs(twoHosts)), planValues(cephfs(twoHosts, { replicas: 2 }))]);
    for (const r of [four, two, twoExplicit]) assert.equal(r.error, undefined, r.error?.message);
});

const dependsOn = (r: PlannedResource, on: PlannedResource) => r.dependencies.includes(on.urn);
const leaves = (run: PlanRun) => resourcesOfType(run, LOCAL).filter((r) => /-mon-[a-z]+-leave$/.test(r.name));

/**
 * The order Pulumi deletes the resources a change drops (its step generator's ScheduleDeletes):
 * rounds of resources none of whose dependents, by the old state's direct dependencies, are still
 * to be deleted. Returns each resource's round (0 first).
 */
function deleteRounds(old: PlanRun, next: PlanRun): Map<string, number> {
    const kept = new Set(next.resources.map((r) => r.urn));
    const condemned = new Map(old.resources.filter((r) => !kept.has(r.urn) && r.type !== "pulumi:pulumi:Stack").map((r) => [r.urn, r]));
    const rounds: string[][] = [];
    // Scheduled as Pulumi does it, backwards: a resource whose own dependencies are no longer condemned goes last.
    while (condemned.size) {
        const last = [...condemned.values()].filter((r) => ![...r.dependencies, ...(r.parent ? [r.parent] : [])].some((d) => condemned.has(d))).map((r) => r.urn);
        assert.ok(last.length, "a dependency cycle among deleted resources");
        last.forEach((u) => condemned.delete(u));
        rounds.push(last);
    }
    rounds.reverse();
    return new Map(rounds.flatMap((urns, k) => urns.map((u) => [u, k] as const)));
}

describe("CephFS shrink: mons leave the monmap, drains run first, fewer copies only on purpose", () => {
    test("a mon that can go (b, c; never the initial a) has a leave resource: nothing on create, its delete runs cephfs-mon-remove.sh for this cluster, after its workload, its Service and the leave before it", () => {
        assert.deepEqual(leaves(four).map((r) => r.name).sort(), ["shared-fs-mon-b-leave", "shared-fs-mon-c-leave"]);
        assert.deepEqual(leaves(two), [], "one mon (two hosts): nothing can leave");
        const named = (name: string, type?: string) => resourceNamed(four, name, type);
        for (const id of ["b", "c"]) {
            const leave = named(`shared-fs-mon-${id}-leave`, LOCAL);
            const inputs = leave.inputs as { create?: string; delete?: string };
            assert.equal(inputs.create, undefined, "nothing runs on create");
            assert.match(String(inputs.delete), /^sh -c '.*' cephfs-mon-remove ceph-shared-fs-scripts-cephfs-mon-remove-[0-9a-f]{12} [0-9a-f]{64} --namespace zcloud-storage --fsid \S+ --mon (')?[bc]\1 --admin-selector \S+ --script-configmap ceph-shared-fs-scripts-mon-remove-[0-9a-f]{12} --library-configmap ceph-shared-fs-scripts-library-[0-9a-f]{12} --timeout 600 --context prod-admin$/s);
            assert.ok(dependsOn(leave, named(`ceph-shared-fs-mon-${id}`, DEPLOYMENT)), "deleted before the mon's workload");
            assert.ok(dependsOn(leave, named(`shared-fs-mon-${id}-service`, "kubernetes:core/v1:Service")), "deleted before the mon's Service (its address)");
            assert.ok(dependsOn(leave, named("ceph-shared-fs-admin", DAEMON_SET)), "the admin pods outlive it");
            for (const set of ["mon-remove", "cephfs-mon-remove", "library"]) {
                const cm = resourcesOfType(four, CONFIG_MAP).find((r) => new RegExp(`^ceph-shared-fs-scripts-${set}-[0-9a-f]{12}$`).test(r.name));
                assert.ok(cm && dependsOn(leave, cm), `the ${set} set outlives the leave that names it`);
            }
        }
        assert.ok(dependsOn(named("shared-fs-mon-c-leave", LOCAL), named("shared-fs-mon-b-leave", LOCAL)), "c leaves before b: one at a time");
        for (const drain of resourcesOfType(four, LOCAL).filter((r) => r.name.endsWith("-drain"))) {
            for (const id of ["b", "c"]) assert.ok(dependsOn(drain, named(`shared-fs-mon-${id}-leave`, LOCAL)), `${drain.name} is deleted before mon ${id} leaves`);
        }
    });

    test("four hosts shrunk to two (node4 and node6 removed): Pulumi's delete order starts both hosts' drains together, then c leaves, then b, then their workloads go", () => {
        const rounds = deleteRounds(four, twoExplicit);
        const round = (name: string, type: string) => {
            const r = resourceNamed(four, name, type);
            assert.ok(rounds.has(r.urn), `${name} is deleted`);
            return rounds.get(r.urn)!;
        };
        const drains = ["node4", "node6"].map((n) => round(`shared-fs-${n}-osd-wwn-0x${n.slice(-1)}-drain`, LOCAL));
        const leaveC = round("shared-fs-mon-c-leave", LOCAL);
        const leaveB = round("shared-fs-mon-b-leave", LOCAL);
        assert.ok(Math.max(...drains) < leaveC, `drains ${drains} before mon c leaves (${leaveC})`);
        assert.ok(leaveC < leaveB, `c (${leaveC}) before b (${leaveB})`);
        assert.ok(leaveB < round("ceph-shared-fs-mon-b", DEPLOYMENT) && leaveC < round("ceph-shared-fs-mon-c", DEPLOYMENT), "a mon leaves before its workload goes");
        assert.ok(leaveB < round("shared-fs-mon-b-service", "kubernetes:core/v1:Service"));
        // The two hosts' drains share a round: Pulumi starts them together; the drain script
        // serializes them (one OSD of a storage at a time, proven in the Ceph tier).
        assert.equal(drains[0], drains[1]);
    });

    test("pools losing copies by default are refused by the diff; replicas set in the config lowers them on purpose", () => {
        assert.deepEqual(replicaRefusals(diffPlans(four.resources, two.resources)), [
            "cephfs shared-fs: its pools would keep 2 copies (min_size 1) instead of 3 copies (min_size 2): replicas is not set, and its default, min(3, hosts), falls with the hosts removed. Set replicas: 2 on this storage in the stack config to lower it on purpose, or keep the hosts; pulumi up refuses this change too (ceph-fs.sh, before any pool changes).",
        ]);
        assert.deepEqual(replicaRefusals(diffPlans(four.resources, twoExplicit.resources)), []);
        assert.deepEqual(replicaRefusals(diffPlans(two.resources, four.resources)), [], "growing never refuses");
        const fsArgs = (run: PlanRun) => (resourceNamed(run, "shared-fs-filesystem", "kubernetes:batch/v1:Job").inputs as any).spec.template.spec.initContainers[0].command.slice(6);
        assert.deepEqual(fsArgs(two), ["apply", "--fs", "shared-fs", "--hosts", "2", "--replicas", "2"]);
        assert.deepEqual(fsArgs(twoExplicit), ["apply", "--fs", "shared-fs", "--hosts", "2", "--replicas", "2", "--replicas-configured"]);
    });

    test("npm run plan --diff: the refusal after the changes and exit 1; --json carries it; the explicit shrink plans with exit 0 and says the mons leave", async (t) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ceph-shrink-"));
        t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
        const stack = (name: string, config: Record<string, unknown>) => {
            const file = path.join(dir, `Pulumi.${name}.yaml`);
            const values = Object.fromEntries(Object.entries(config).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v]));
            fs.writeFileSync(file, yaml.dump({ config: values }));
            return file;
        };
        const { ssh: s, nodes: n, cephfs: c, ...rest } = cephfs(fourHosts);
        const config = (hosts: Record<string, string[]>, extra: Record<string, unknown> = {}) => ({ ...rest, ssh: { ...s, privateKey: { secure: "v1:x" } }, nodes: n, cephfs: [{ ...c[0], hosts, ...extra }] });
        const old = stack("four", config(fourHosts));
        const refused = await planCli(stack("two", config(twoHosts)), "--diff", old);
        assert.equal(refused.code, 1, refused.stderr);
        const tail = refused.stdout.slice(refused.stdout.indexOf("\nrefused: "));
        assert.match(tail, /^\nrefused: cephfs shared-fs: its pools would keep 2 copies \(min_size 1\) instead of 3 copies \(min_size 2\): replicas is not set/);
        assert.match(tail, /\n\nPolicies: no violations\n$/);
        const json = await planCli(path.join(dir, "Pulumi.two.yaml"), "--diff", old, "--json");
        assert.equal(json.code, 1);
        assert.deepEqual(JSON.parse(json.stdout).refusals, replicaRefusals(diffPlans(four.resources, two.resources)));
        const explicit = await planCli(stack("two-explicit", config(twoHosts, { replicas: 2 })), "--diff", old);
        assert.equal(explicit.code, 0, explicit.stderr);
        assert.doesNotMatch(explicit.stdout, /refused:/);
        for (const id of ["b", "c"]) {
            assert.match(explicit.stdout, new RegExp(`-  delete +shared-fs-mon-${id}-leave  Command shared-fs-mon-${id}-leave\\n +note: mon\\.${id} leaves the monmap \\(ceph mon remove\\) before its workload and Service are deleted, after this change's OSD drains, and only while the mons that stay hold a quorum without it \\(else refused, nothing removed\\)\\n`));
        }
    });

    test("an existing three-host stack (made before this change): the two leaves and their sets created (nothing runs), the fs and drain sets moved, the filesystem Job replaced (it re-runs the idempotent ceph-fs.sh apply), each drain's delete updated; no daemon rolls for it, nothing else", () => {
        const was = existing.before();
        const now = existing.now();
        const changes = withoutLabelMove(diffPlans(was.resources, now.resources));
        const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields.length ? " " + c.fields.join(",") : ""}`).sort();
        const later = mergedUpdates([...cephDaemonMoves(was.resources), ...cephGateMoves(was.resources)]);
        assert.deepEqual(
            said,
            [
                `create ${LOCAL} shared-fs-mon-b-leave`,
                `create ${LOCAL} shared-fs-mon-c-leave`,
                `create ${CONFIG_MAP} ${cephScriptSetName("shared-fs", "ceph-mon-remove.sh")}`,
                `create ${CONFIG_MAP} ${cephScriptSetName("shared-fs", "cephfs-mon-remove.sh")}`,
                ...shrinkScriptMoves(was.resources),
                // later changes': mon-init's owner hand-over and the mgrs and mdss pinned to the hosts roll those daemons once (test/plan/ceph-daemons-upgrade.test.ts);
                // the gate script's runs each gate once (test/plan/ceph-gate-upgrade.test.ts)
                ...later,
            ].sort(),
        );
        assert.equal(changes.filter(isMonLeaveAddition).length, 4);
        const daemons = new Set(later);
        const shrinks = said.filter((l) => !daemons.has(l));
        assert.equal(shrinks.filter((l) => l.startsWith("delete ")).length, 2, "only the two moved sets' old ConfigMaps");
        assert.equal(shrinks.filter((l) => / kubernetes:apps\/v1:(Deployment|DaemonSet) /.test(l)).length, 0, "no daemon rolls");
        // the Job's template: only the fs set it names differs (the replicas default stays unflagged)
        const job = (r: PlanRun) => resourceNamed(r, "shared-fs-filesystem", "kubernetes:batch/v1:Job").inputs as any;
        assert.deepEqual(job(now).spec.template.spec.initContainers[0].command.slice(6), ["apply", "--fs", "shared-fs", "--hosts", "3", "--replicas", "3"]);
        assert.deepEqual(job(was).spec.template.spec.initContainers[0].command.slice(6), ["apply", "--fs", "shared-fs", "--hosts", "3", "--replicas", "3"]);
    });

    test("a shrink straight from a stack made before the leave resources (a saved plan of that version): the diff refuses deleting mons b and c without their leave; after one up with this version it plans", async () => {
        const shrunk = await planValues({ ...cephfs({ node3: [dev(3)], node4: [dev(4)] }, { replicas: 2 }), "kubernetes:context": "prod-admin" });
        assert.equal(shrunk.error, undefined, shrunk.error?.message);
        const message = (id: string) =>
            `cephfs shared-fs: mon.${id}'s workload would be deleted while the monmap still lists it (the stack has no leave resource for it: made by a version before mons left the monmap), so the mons left could lose their quorum. Run pulumi up once with this version and the current hosts (it creates the leave resources and changes nothing else), then remove the hosts.`;
        assert.deepEqual(monLeaveRefusals(diffPlans(existing.before().resources, shrunk.resources)), [message("b"), message("c")]);
        assert.deepEqual(monLeaveRefusals(diffPlans(existing.now().resources, shrunk.resources)), []);
        assert.deepEqual(monLeaveRefusals(diffPlans(four.resources, twoExplicit.resources)), []);
    });
});

