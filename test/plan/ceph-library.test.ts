/**
 * The shared script library of a CephFS storage (lib.sh + ceph-lib.sh in one immutable ConfigMap,
 * components/cephfs/pods.ts library(); each Ceph set carries only its script): what it does to a
 * stack made by main before it (2a50df6), and to one made before the move to Ceph 20.2.4
 * (3aac0da), planned again by this program; both under the mock runtime, then the offline diff.
 * Every pod template that runs a Ceph set changes once (the runner, the library in its scripts
 * volume, the sets' annotation): one gated roll, in the order the gates already had.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import * as yaml from "js-yaml";
import { gateGuardsEnv } from "../../components/cephfs/gates";
import { CephScript, cephLibraryBundle, cephLibraryName, cephScriptBundle, cephScriptSetName, LocalScript } from "../../components/cephfs/scripts";
import { upgradeDiff } from "../helpers/labelMove";
import { PlannedResource } from "../../tools/plan/model";
import { gateArgs, isRollGate, renderRollOrder, rollChains } from "../../tools/plan/roll";
import { movedToLibrary, onStorageHosts, withPrepareLocks } from "../helpers/cephScripts";
import { oldProgram, plansBeforeAndNow } from "../helpers/oldProgram";
import { CONFIG_MAP, DEPLOYMENT, LOCAL, sharedFsConfig } from "../helpers/plan";
import { plan } from "../helpers/planCli";

/** main before the library: each of the six Ceph sets carried lib.sh + ceph-lib.sh. */
const beforeLibrary = "2a50df6";
/** main before the move to Ceph 20.2.4 (test/plan/ceph-release-upgrade.test.ts). */
const beforeRelease = "3aac0da";

const cephSets: CephScript[] = ["ceph-fs.sh", "ceph-gate.sh", "ceph-keyring.sh", "ceph-mon-init.sh", "ceph-osd-drain.sh", "ceph-osd.sh"];
const localSets: LocalScript[] = ["cephfs-gate.sh", "cephfs-osd-remove.sh"];
const isCephSet = (r: PlannedResource) => r.type === CONFIG_MAP && /^ceph-shared-fs-scripts-(fs|gate|keyring|mon-init|osd-drain|osd)-[0-9a-f]{12}$/.test(r.name);
const deployments = ["mon-a", "mon-b", "mon-c", "mgr-a", "mgr-b", "mds-a", "mds-b", "osd-node4-wwn-0x4", "osd-node5-wwn-0x5", "osd-node6-wwn-0x6", "osd-node6-wwn-0x7"].map((d) => `ceph-shared-fs-${d}`);
const drains = ["node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node6-osd-wwn-0x6", "node6-osd-wwn-0x7"].map((d) => `shared-fs-${d}-drain`);
/** A gate's or drain's command with the ConfigMaps it names and the local stub's hash taken out: the arguments it hands on. */
const handedOn = (command: string) =>
    command
        .slice(command.lastIndexOf(" --namespace "))
        .replace(/ --script-configmap \S+/, "")
        .replace(/ --library-configmap \S+/, "");

describe(`a stack made by ${beforeLibrary} (each Ceph set with its own copy of the library)`, () => {
    const plans = plansBeforeAndNow(beforeLibrary, sharedFsConfig);

    test("pulumi up: the library and the six slimmer sets created, the old sets deleted; every daemon Deployment and gate updated in place once, the drains' delete in place, the filesystem Job replaced; nothing else", () => {
        const was = plans.before();
        const now = plans.now();
        const changes = upgradeDiff(was.resources, now.resources);
        const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
        const oldSets = was.resources.filter(isCephSet).map((r) => r.name);
        assert.equal(oldSets.length, 6);
        const gates = now.resources.filter(isRollGate).map((r) => r.name);
        assert.equal(gates.length, 18);
        assert.deepEqual(
            said,
            [
                `create ${CONFIG_MAP} ${cephLibraryName("shared-fs")}`,
                ...cephSets.map((s) => `create ${CONFIG_MAP} ${cephScriptSetName("shared-fs", s)}`),
                ...oldSets.map((n) => `delete ${CONFIG_MAP} ${n}`),
                // the local sets: cephfs-gate.sh and cephfs-osd-remove.sh read the library too
                ...localSets.map((s) => `create ${CONFIG_MAP} ${cephScriptSetName("shared-fs", s)}`),
                ...was.resources.filter((r) => r.type === CONFIG_MAP && /^ceph-shared-fs-scripts-cephfs-/.test(r.name)).map((r) => `delete ${CONFIG_MAP} ${r.name}`),
                ...deployments.map((d) => `update ${DEPLOYMENT} ${d} spec.template.metadata,spec.template.spec`),
                // a Job's template is immutable: replaced, as on any script change
                "replace kubernetes:batch/v1:Job shared-fs-filesystem spec.template.metadata,spec.template.spec",
                ...gates.map((g) => `update ${LOCAL} ${g} create,environment.${gateGuardsEnv}`),
                ...drains.map((d) => `update ${LOCAL} ${d} delete`),
                // the ceph-csi provisioner's --setmetadata (test/plan/cephcsi-setmetadata-upgrade.test.ts)
                `update ${DEPLOYMENT} ceph-csi-cephfs-provisioner spec.template.spec`,
                // and the OSD prepare Jobs (test/plan/ceph-osd-prepare.test.ts)
                ...drains.map((d) => `create kubernetes:batch/v1:Job ${d.replace(/-drain$/, "-prepare")}`),
            ].sort(),
        );
        // no replace but the Job's; the old sets go after everything that names them moved
        assert.deepEqual(changes.filter((c) => c.kind === "replace").map((c) => c.resource.name), ["shared-fs-filesystem"]);
        for (const c of changes.filter((x) => x.kind === "update")) assert.deepEqual(c.replaceBecause, [], c.resource.name);
    });

    test("each daemon's pod template: its Ceph commands through the runner, the library in its scripts volume, the sets' annotation; nothing else", () => {
        const was = plans.before();
        const now = plans.now();
        for (const name of [...deployments, "shared-fs-filesystem"]) {
            const before = was.resources.find((r) => r.name === name)!;
            const after = now.resources.find((r) => r.name === name)!;
            // (an OSD's also mounts the host's prepare locks: test/plan/ceph-osd-prepare.test.ts)
            // (a mgr's and mds's also run on the storage's hosts only: test/plan/ceph-daemons-upgrade.test.ts)
            assert.deepEqual(after.inputs, onStorageHosts(withPrepareLocks(movedToLibrary(before.inputs, "shared-fs"), name), name, "shared-fs"), name);
        }
        // the OSD's: its set without the library, the library's hash first in the annotation
        const osd = now.resources.find((r) => r.name === "ceph-shared-fs-osd-node6-wwn-0x7")!.inputs as any;
        assert.equal(osd.spec.template.metadata.annotations["storage.zcloud.io/script-sets"], `ceph-library.sh=${cephLibraryBundle().sha256},ceph-osd.sh=${cephScriptBundle("ceph-osd.sh").sha256}`);
    });

    test("the gates check what they checked, guard what they guarded; the drains hand on the same arguments", () => {
        const was = plans.before();
        const now = plans.now();
        for (const g of now.resources.filter(isRollGate)) {
            const before = was.resources.find((r) => r.urn === g.urn)!;
            const i = g.inputs as any;
            assert.equal(gateArgs(g), gateArgs(before), g.name);
            assert.equal(handedOn(i.create), handedOn((before.inputs as any).create), g.name);
            assert.ok(i.create.includes(` --library-configmap ${cephLibraryName("shared-fs")} `), g.name);
            assert.deepEqual({ ...i.environment, [gateGuardsEnv]: "" }, { ...(before.inputs as any).environment, [gateGuardsEnv]: "" }, g.name);
            assert.deepEqual(g.dependencies.filter((d) => !d.includes("ConfigMap")), before.dependencies.filter((d) => !d.includes("ConfigMap")), g.name);
        }
        for (const d of drains) {
            const before = was.resources.find((r) => r.name === d)!.inputs as any;
            const after = now.resources.find((r) => r.name === d)!.inputs as any;
            assert.equal(handedOn(after.delete), handedOn(before.delete), d);
            assert.match(after.delete, new RegExp(` --library-configmap ${cephLibraryName("shared-fs")} --context prod-admin$`));
        }
    });

    test("one gated roll: the chain is the one the gates had, every daemon restarts once behind them", () => {
        const was = plans.before();
        const now = plans.now();
        const names = (rs: PlannedResource[]) => rs.map((r) => r.name);
        assert.deepEqual(names(rollChains(now.resources).get("shared-fs")!), names(rollChains(was.resources).get("shared-fs")!));
        const order = renderRollOrder(upgradeDiff(was.resources, now.resources), now.resources).split("\n");
        const restarts = order.filter((l) => /^ +\d+\. restart /.test(l)).map((l) => l.split("restart ")[1]);
        assert.deepEqual([...restarts].sort(), [...deployments].sort(), "each daemon once");
        assert.equal(order.filter((l) => /^ +\d+\. gate /.test(l)).length, 18, "every gate runs again");
        // mons first, one at a time, each after roll-start or the previous mon's quorum gate
        assert.deepEqual(order.slice(2, 5), ["     1. gate    roll-start --timeout 600", "     2. restart ceph-shared-fs-mon-a", "     3. gate    mon-quorum --id a --timeout 600"]);
    });

    test("`npm run plan -- <stack> --diff-plan <the old program's --json>`: the library once, each set's files that left it, one line per workload", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-library-diff-"));
        const old = oldProgram(beforeLibrary);
        try {
            const file = path.join(dir, "Pulumi.prod.yaml");
            fs.writeFileSync(file, yaml.dump({ config: Object.fromEntries(Object.entries(sharedFsConfig).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v])) }));
            const saved = path.join(dir, "old.json");
            const oldPlan = await new Promise<string>((resolve, reject) =>
                execFile(process.execPath, ["--import", "tsx", path.join(old.dir, "tools", "plan.ts"), file, "--json"], { cwd: old.dir, maxBuffer: 64 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))),
            );
            fs.writeFileSync(saved, oldPlan);
            const r = await plan(file, "--diff-plan", saved);
            assert.equal(r.code, 0, r.stderr);
            const out = r.stdout;
            // 18 gates and 11 daemons updated in place, 4 drains; the library, six sets and two local sets created, their predecessors deleted; the Job replaced; the 4 OSD prepare Jobs created; the ceph-csi provisioner updated (--setmetadata)
            // (40 updates: 34, and each node's disk command and script copy on another script set since)
            // (since the shrink change also the mons' two leave resources and their two sets: 20 creates)
            assert.ok(/\n11 to delete, 1 to replace, 40 to update, 20 to create\n/.test(out), out);
            assert.ok(out.includes(`\nceph-library.sh: script set ${cephLibraryBundle().id}, new: lib.sh, ceph/ceph-lib.sh\n`), out);
            const oldOsd = JSON.parse(oldPlan).resources.find((x: PlannedResource) => /^ceph-shared-fs-scripts-osd-[0-9a-f]{12}$/.test(x.name)).name.slice(-12);
            // (ceph-osd.sh itself changed too since: prepare-only and the device lock, test/plan/ceph-osd-prepare.test.ts)
            assert.ok(out.includes(`\nceph-osd.sh: script set ${cephScriptBundle("ceph-osd.sh").id} (was ${oldOsd}): lib.sh, ceph/ceph-lib.sh left the set; ceph/ceph-osd.sh changed\n`), out);
            // no line of the library is shown as a diff line: its text is not repeated per set
            assert.equal(out.split("\n").filter((l) => l === "-zc_log() {").length, 0, "the library's lines are not listed as removed");
            const runs = out.split("\n").filter((l) => l.includes(": ceph-library.sh runs script set "));
            assert.equal(runs.length, deployments.length + 1, "each daemon and the filesystem Job: one line");
            assert.ok(runs.every((l) => l.endsWith(`${cephLibraryBundle().id} (was none before)`)), runs.join("\n"));
        } finally {
            old.cleanup();
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe(`a stack made by ${beforeRelease} (Ceph 19.2.4): the release and the library in one roll`, () => {
    const plans = plansBeforeAndNow(beforeRelease, sharedFsConfig);

    test("every daemon Deployment is updated once, in place; the same gates as before, in the same chain, each run once", () => {
        const was = plans.before();
        const now = plans.now();
        const changes = upgradeDiff(was.resources, now.resources);
        // (the ceph-csi provisioner's --setmetadata is no Ceph daemon: test/plan/cephcsi-setmetadata-upgrade.test.ts)
        const updated = changes.filter((c) => c.resource.type === DEPLOYMENT && c.resource.name !== "ceph-csi-cephfs-provisioner").map((c) => `${c.kind} ${c.resource.name}`);
        assert.deepEqual(updated.sort(), deployments.map((d) => `update ${d}`).sort());
        const gates = (rs: PlannedResource[]) => rs.filter(isRollGate).map((g) => `${g.name}: ${gateArgs(g)}`);
        assert.deepEqual(gates(now.resources), gates(was.resources));
        const names = (rs: PlannedResource[]) => rs.map((r) => r.name);
        assert.deepEqual(names(rollChains(now.resources).get("shared-fs")!), names(rollChains(was.resources).get("shared-fs")!));
        const order = renderRollOrder(changes, now.resources).split("\n").filter((l) => /^ +\d+\. restart /.test(l));
        assert.equal(order.length, deployments.length, "one restart per daemon");
    });
});
