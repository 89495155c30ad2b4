/**
 * zcloud-storage:leaderElection on a stack of every type: which containers take the timings, and
 * what it does to an existing stack (offline diff of the program before the key and this one).
 * Without the key nothing changes; with it, only the four leader-elected Deployments (one per driver) are updated
 * in place (their pods roll with the new flags); no disk, daemon or node command is touched.
 */
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { DEPLOYMENT, PlanRun, planValues, resourcesOfType, sanIscsiConfig, sharedFsConfig } from "../helpers/plan";

/** The program before zcloud-storage:leaderElection. */
const beforeLeaderElectionCommit = "7bea123fbe364a2abd01054e5b382116c13578ce";

const everyType = {
    ...sharedFsConfig,
    iscsi: sanIscsiConfig.iscsi,
    lvm: [{ name: "thin", hosts: { node3: ["/dev/disk/by-id/wwn-0x9"] }, thin: { snapshots: true } }],
    nfs: [{ name: "shared-nfs", server: "10.0.0.60", path: "/exports/k8s" }],
};
const timings = { leaseDuration: "137s", renewDeadline: "107s", retryPeriod: "26s" };
const timingFlags = ["--leader-election-lease-duration=137s", "--leader-election-renew-deadline=107s", "--leader-election-retry-period=26s"];

const plans = plansBeforeAndNow(beforeLeaderElectionCommit, everyType);
let withTimings: PlanRun;
before(async () => {
    withTimings = await planValues({ ...everyType, leaderElection: timings });
    assert.equal(withTimings.error, undefined, withTimings.error?.message);
});

/** Each Deployment's containers: name -> its command and args. */
function deploymentContainers(run: PlanRun): Record<string, Record<string, string[]>> {
    return Object.fromEntries(
        resourcesOfType(run, DEPLOYMENT).map((d) => {
            const containers = (d.inputs as any).spec.template.spec.containers as Array<{ name: string; command?: string[]; args?: string[] }>;
            return [d.name, Object.fromEntries(containers.map((c) => [c.name, [...(c.command ?? []), ...(c.args ?? [])]]))];
        }),
    );
}

const leaderElected = (argv: string[]) => argv.some((a) => a.startsWith("--leader-election-namespace="));

test("the timings go to every leader-elected container and to no other", () => {
    const seen: string[] = [];
    for (const [deployment, containers] of Object.entries(deploymentContainers(withTimings))) {
        for (const [container, argv] of Object.entries(containers)) {
            const flags = argv.filter((a) => /^--leader-election-(lease-duration|renew-deadline|retry-period)=/.test(a));
            assert.deepEqual(flags, leaderElected(argv) ? timingFlags : [], `${deployment}/${container}`);
            if (leaderElected(argv)) {
                seen.push(`${deployment}/${container}`);
            }
        }
    }
    assert.deepEqual(seen.sort(), [
        "ceph-csi-cephfs-provisioner/csi-provisioner",
        "ceph-csi-cephfs-provisioner/csi-resizer",
        "csi-driver-nfs-controller/csi-provisioner",
        "csi-driver-nfs-controller/csi-resizer",
        "csi-sanlock-lvm-controller/csi-provisioner",
        "csi-sanlock-lvm-controller/csi-resizer",
        "topolvm-controller/csi-provisioner",
        "topolvm-controller/csi-resizer",
        "topolvm-controller/csi-snapshotter",
        "topolvm-controller/topolvm-controller",
    ]);
});

test("without the key no container carries a timing flag: each keeps its own defaults", () => {
    const argvs = Object.values(deploymentContainers(plans.now())).flatMap((c) => Object.values(c));
    assert.equal(argvs.filter(leaderElected).length, 10);
    assert.deepEqual(argvs.flat().filter((a) => a.includes("lease-duration") || a.includes("renew-deadline") || a.includes("retry-period")), []);
});

test("old program -> new, the same config: nothing changes", () => {
    assert.deepEqual(diffPlans(plans.before().resources, plans.now().resources), []);
});

test("old program -> new with leaderElection set: the four leader-elected Deployments updated in place, nothing else", () => {
    const changes = diffPlans(plans.before().resources, withTimings.resources);
    assert.deepEqual(changes.map((c) => `${c.kind} ${c.resource.name}`).sort(), [
        "update ceph-csi-cephfs-provisioner",
        "update csi-driver-nfs-controller",
        "update csi-sanlock-lvm-controller",
        "update topolvm-controller",
    ]);
    for (const c of changes) {
        assert.deepEqual(c.replaceBecause, [], c.resource.name);
    }
});
