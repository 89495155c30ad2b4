/**
 * The OSD prepare Jobs of a CephFS storage (components/cephfs/osds.ts): one per declared device,
 * outside the gated roll (after its node's disk command and label and the mons' quorum, never a
 * gate of the OSD roll), each OSD Deployment after its Job; a Job runs `ceph-osd.sh
 * prepare-only` with the OSD pod's devices, key and the host's prepare locks, and is never
 * replaced (its spec is ignored once it exists). And an existing stack made by the program at
 * 2a50df6 (no Jobs) planned again: what is created, what is updated in place, nothing replaced.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { osdLockDir } from "../../components/cephfs/osds";
import { cephNames } from "../../components/naming";
import { LABEL_COMMAND, NODE_PATCH, upgradeDiff } from "../helpers/labelMove";
import { movedToLibrary, scriptArgv, withPrepareLocks } from "../helpers/cephScripts";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { DEPLOYMENT, JOB, PlanRun, PlannedResource, sharedFsConfig } from "../helpers/plan";

/** main before the prepare Jobs: every OSD prepared its device in its own pod, in the roll's order. */
const beforeJobs = "2a50df6";

const devices: [string, string, string][] = [
    ["node4", "/dev/disk/by-id/wwn-0x4", "wwn-0x4"],
    ["node5", "/dev/disk/by-id/wwn-0x5", "wwn-0x5"],
    ["node6", "/dev/disk/by-id/wwn-0x6", "wwn-0x6"],
    ["node6", "/dev/disk/by-id/wwn-0x7", "wwn-0x7"],
];
const plans = plansBeforeAndNow(beforeJobs, sharedFsConfig);

function byName(run: PlanRun, name: string, type?: string): PlannedResource {
    const found = run.resources.filter((r) => r.name === name && (!type || r.type === type));
    assert.equal(found.length, 1, `${name}: ${found.length} resources`);
    return found[0];
}
/** The names of a resource's dependencies. */
function depNames(run: PlanRun, r: PlannedResource): string[] {
    return r.dependencies.map((u) => run.resources.find((x) => x.urn === u)?.name ?? u).sort();
}

test("one prepare Job per device: ceph-osd.sh prepare-only on its node, privileged, with the OSD pod's devices, bootstrap-osd key and the host's prepare locks; never replaced", () => {
    const now = plans.now();
    const jobs = now.resources.filter((r) => r.type === JOB && r.name.includes("-osd-") && r.name.endsWith("-prepare"));
    assert.deepEqual(jobs.map((j) => j.name).sort(), devices.map(([n, , s]) => `shared-fs-${n}-osd-${s}-prepare`));
    for (const [node, device, slug] of devices) {
        const job = byName(now, `shared-fs-${node}-osd-${slug}-prepare`, JOB);
        const inputs = job.inputs as any;
        assert.equal(inputs.metadata.name, cephNames("shared-fs").osdPrepare(node, device));
        assert.equal(inputs.metadata.name, `ceph-shared-fs-osd-prep-${node}-${slug}`);
        assert.deepEqual(job.ignoreChanges, ["spec"]);
        assert.equal(job.deleteBeforeReplace, false);
        const spec = inputs.spec.template.spec;
        assert.equal(spec.restartPolicy, "OnFailure");
        assert.deepEqual(spec.nodeSelector, { "kubernetes.io/hostname": node, "storage.zcloud.io/cephfs": "shared-fs" });
        assert.equal(spec.containers.length, 1);
        const c = spec.containers[0];
        assert.deepEqual(scriptArgv(c.command), ["/etc/zcloud/scripts/ceph-osd.sh", "prepare-only", "--device", device, "--host", node]);
        assert.deepEqual(c.securityContext, { privileged: true });
        // the OSD workload's pod, but for the container's name, command and requests
        const osd = byName(now, cephNames("shared-fs").osd(node, device), DEPLOYMENT).inputs as any;
        const osdSpec = osd.spec.template.spec;
        assert.deepEqual(spec.volumes, osdSpec.volumes);
        assert.deepEqual(c.volumeMounts, osdSpec.containers[0].volumeMounts);
        assert.deepEqual(scriptArgv(osdSpec.containers[0].command), ["/etc/zcloud/scripts/ceph-osd.sh", "run", "--device", device, "--host", node]);
        assert.deepEqual(
            spec.volumes.filter((v: any) => v.hostPath),
            [
                { name: "dev", hostPath: { path: "/dev", type: "Directory" } },
                { name: "run-udev", hostPath: { path: "/run/udev", type: "DirectoryOrCreate" } },
                { name: "osd-locks", hostPath: { path: osdLockDir, type: "DirectoryOrCreate" } },
            ],
        );
        assert.deepEqual(c.volumeMounts.find((m: any) => m.name === "osd-locks"), { name: "osd-locks", mountPath: osdLockDir });
        assert.deepEqual(spec.volumes.find((v: any) => v.name === "ceph-keys").secret.items, [{ key: "bootstrap-osd", path: "bootstrap-osd" }]);
        // not a daemon: the roll's daemon selector (roll-start) does not match it
        assert.equal(inputs.metadata.labels["app.kubernetes.io/component"], "ceph-osd-prepare");
    }
});

test("a Job depends on its node's disk command and label and the mons' quorum (mon c's gate), on no gate of the OSD roll and nothing of another node; its OSD Deployment depends on it", () => {
    const now = plans.now();
    for (const [node, device, slug] of devices) {
        const job = byName(now, `shared-fs-${node}-osd-${slug}-prepare`, JOB);
        const deps = depNames(now, job);
        assert.deepEqual(deps.filter((d) => d.startsWith("shared-fs-gate-")), ["shared-fs-gate-mon-c"], job.name);
        assert.deepEqual(deps.filter((d) => /^shared-fs-node\d-(disks|label)$/.test(d)), [`shared-fs-${node}-disks`, `shared-fs-${node}-label`], job.name);
        // the label is the node's label command (kubectl server-side apply where pulumi up runs)
        assert.ok(job.dependencies.includes(byName(now, `shared-fs-${node}-label`, LABEL_COMMAND).urn), `${job.name} depends on its node's label command`);
        const osd = byName(now, cephNames("shared-fs").osd(node, device), DEPLOYMENT);
        assert.ok(osd.dependencies.includes(job.urn), `${osd.name} depends on ${job.name}`);
        // the OSD still starts in the roll: after its host's ok-to-stop gate
        assert.ok(depNames(now, osd).includes(`shared-fs-gate-${node}-ok-to-stop`), osd.name);
    }
    // node6's Jobs do not wait for node4's or node5's OSDs (the chain before node6's ok-to-stop)
    const node6 = byName(now, "shared-fs-node6-osd-wwn-0x7-prepare", JOB);
    for (const other of devices.filter(([n]) => n !== "node6")) {
        assert.ok(!node6.dependencies.includes(byName(now, cephNames("shared-fs").osd(other[0], other[1]), DEPLOYMENT).urn));
    }
});

test(`${beforeJobs} -> now: creates the prepare Jobs; each OSD Deployment gains the locks' mount in the same in-place update that moves it to the shared library (test/plan/ceph-library.test.ts); nothing else the Jobs change`, () => {
    const was = plans.before();
    const now = plans.now();
    const changes = upgradeDiff(was.resources, now.resources);
    assert.deepEqual(
        changes.filter((c) => c.resource.type === JOB && c.resource.name !== "shared-fs-filesystem").map((c) => `${c.kind} ${c.resource.name}`).sort(),
        devices.map(([n, , s]) => `create shared-fs-${n}-osd-${s}-prepare`),
    );
    // Each OSD Deployment: the old inputs as the library moves them, with the locks' volume and
    // mount added, nothing else; updated in place (no replace, nothing released).
    const osds = changes.filter((c) => c.resource.type === DEPLOYMENT && c.resource.name.startsWith("ceph-shared-fs-osd-"));
    assert.equal(osds.length, devices.length);
    for (const c of osds) {
        const before = was.resources.find((r) => r.urn === c.resource.urn)!;
        assert.equal(c.kind, "update", c.resource.name);
        assert.deepEqual(c.resource.inputs, withPrepareLocks(movedToLibrary(before.inputs, "shared-fs"), c.resource.name), c.resource.name);
        assert.deepEqual(c.resource.replaceOnChanges, before.replaceOnChanges, c.resource.name);
    }
    // the disk commands do not change; the labels only move (NodePatch -> label command, which
    // upgradeDiff asserts and leaves out)
    assert.deepEqual(changes.filter((c) => c.resource.type.startsWith("command:remote:") || c.resource.type === NODE_PATCH || /-label$/.test(c.resource.name)), []);
});
