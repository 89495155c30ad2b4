/**
 * The gated roll of a CephFS storage's daemons in the planned graph (components/cephfs/roll.ts,
 * gates.ts): every daemon Deployment and gate after the step before it, in the order
 * cephRollOrder gives; gates carry the hash of what they guard (environment, never triggers) and
 * run the same check on create and update; and an existing stack made by the program before the
 * gates (67000ed) planned again: what restarts, in which order, nothing replaced.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { cephRollOrder, guardHash } from "../../components/cephfs/gates";
import { gateGuardsEnv } from "../../components/cephfs/gates";
import { cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";
import { upgradeDiff } from "../helpers/labelMove";
import { diffPlans } from "../../tools/plan/diff";
import { renderChanges } from "../../tools/plan/render";
import { gateArgs, isRollGate, renderRollOrder, rollAdvisories, rollChains } from "../../tools/plan/roll";
import { renderScriptSetChanges, scriptSetFiles } from "../../tools/plan/scriptSets";
import { oldProgram } from "../helpers/oldProgram";
import { CONFIG_MAP, DEPLOYMENT, LOCAL, PlanRun, PlannedResource, baseConfig, nodesThrough, planValues, resourceNamed } from "../helpers/plan";

/** main before the gates: every daemon its own Deployment, none waiting for another. */
const beforeGates = "67000ed";
/** main with the gates, before the roll-start gate (the roll began with mon a's restart). */
const beforeRollStart = "31eb1db";
/** main with every gate and drain carrying its local script inline (cephfs-kube.sh + cephfs-gate.sh / cephfs-osd-remove.sh). */
const beforeStub = "3aac0da";
/**
 * The Ceph script sets' ConfigMaps and the storage's shared library: since the library moved
 * out of the sets, every Ceph set is a new ConfigMap (test/plan/ceph-library.test.ts holds that
 * change); the tests of older stacks here look past it.
 */
const isCephSet = (r: { type: string; name: string }) => r.type === CONFIG_MAP && /^ceph-shared-fs-scripts-(library|mon-init|keyring|osd|osd-drain|fs|gate)-[0-9a-f]{12}$/.test(r.name);
/** The OSD prepare Jobs: their change on an existing stack is test/plan/ceph-osd-prepare.test.ts's. */
const isPrepare = (r: { type: string; name: string }) => r.type === "kubernetes:batch/v1:Job" && r.name.endsWith("-prepare");
/** The ceph-csi provisioner's plugin gained --setmetadata since these bases (test/plan/cephcsi-setmetadata-upgrade.test.ts holds that change). */
const isSetMetadata = (r: { type: string; name: string }) => r.type === DEPLOYMENT && r.name === "ceph-csi-cephfs-provisioner";

const nodes = nodesThrough(5);
const hosts = { node5: ["/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x6"], node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"] };
const values = (over: Record<string, unknown> = {}, h: Record<string, string[]> = hosts) => ({
    ...baseConfig,
    nodes,
    "kubernetes:context": "prod-admin",
    ...over,
    cephfs: [{ name: "shared-fs", hosts: h, ...((over.cephfs as object) ?? {}) }],
});

let run: PlanRun;
let mirrored: PlanRun;
let registry: PlanRun;
let fewerReplicas: PlanRun;
let grown: PlanRun;
let old: PlanRun;
let untargeted: PlanRun;
let gated: PlanRun;
let inline: PlanRun;
let oldDir = "";
let cleanup = () => undefined as void;
before(async () => {
    const o = oldProgram(beforeGates);
    const g = oldProgram(beforeRollStart);
    const i = oldProgram(beforeStub);
    cleanup = () => (o.cleanup(), g.cleanup(), i.cleanup());
    oldDir = o.dir;
    [run, mirrored, registry, fewerReplicas, grown, old, untargeted, gated, inline] = await Promise.all([
        planValues(values()),
        planValues(values({}, Object.fromEntries(Object.entries(hosts).reverse()))),
        planValues(values({ imageRegistry: "registry.example.com/mirror" })),
        planValues(values({ cephfs: { replicas: 2 } })),
        planValues(values({}, { ...hosts, node4: ["/dev/disk/by-id/wwn-0x4", "/dev/disk/by-id/wwn-0x8"] })),
        planValues(values(), o.program),
        planValues(Object.fromEntries(Object.entries(values()).filter(([k]) => k !== "kubernetes:context"))),
        planValues(values(), g.program),
        planValues(values(), i.program),
    ]);
    for (const r of [run, mirrored, registry, fewerReplicas, grown, old, untargeted, gated, inline]) assert.equal(r.error, undefined, r.error?.message);
});
after(() => cleanup());

const named = (name: string, plan = run) => resourceNamed(plan, name);
const gates = (plan = run) => plan.resources.filter(isRollGate);
const env = (r: PlannedResource) => (r.inputs as any).environment as Record<string, string>;

describe("the roll in the graph", () => {
    test("the chain is cephRollOrder's: each Deployment and gate depends on the step before it", () => {
        const order = cephRollOrder("shared-fs", hosts);
        const chain = rollChains(run.resources).get("shared-fs")!.map((r) => r.name);
        assert.deepEqual(chain, order.flatMap((s) => (s.kind === "gate" ? [s.name] : s.workloads)));
        let previous: string[] = [];
        for (const s of order) {
            const members = s.kind === "gate" ? [s.name] : s.workloads;
            for (const m of members) {
                const r = named(m);
                for (const p of previous) assert.ok(r.dependencies.includes(named(p).urn), `${m} depends on ${p}`);
            }
            previous = members;
        }
        assert.equal(chain.length, 1 + 3 + 3 + 2 + 2 + 2 + 3 * 2 + 4 + 2 * 3);
        assert.equal(chain[0], "shared-fs-gate-roll-start");
        // roll-start depends on no daemon and no other gate: it runs before any restart
        assert.deepEqual(named("shared-fs-gate-roll-start").dependencies.filter((d) => d.includes("Deployment::") || d.includes("::shared-fs-gate-")), []);
    });

    test("per host: ok-to-stop -> that host's OSDs -> osd-up -> the next host (sorted, whatever the config's order)", () => {
        const osdUp = (n: string) => named(`shared-fs-gate-${n}-osd-up`);
        const okToStop = (n: string) => named(`shared-fs-gate-${n}-ok-to-stop`);
        const osds = (n: string) => run.resources.filter((r) => r.type === DEPLOYMENT && r.name.startsWith(`ceph-shared-fs-osd-${n}-`));
        assert.equal(osds("node5").length, 2);
        for (const [n, prev] of [["node3", "shared-fs-gate-noout-set"], ["node4", "shared-fs-gate-node3-osd-up"], ["node5", "shared-fs-gate-node4-osd-up"]]) {
            assert.deepEqual(okToStop(n).dependencies.filter((d) => d.includes("::shared-fs-gate-")), [named(prev).urn], n);
            for (const o of osds(n)) {
                assert.ok(o.dependencies.includes(okToStop(n).urn), o.name);
                assert.ok(o.dependencies.includes(named(`shared-fs-${n}-disks`).urn), `${o.name}: its own node's disk command`);
                assert.ok(osdUp(n).dependencies.includes(o.urn), `${osdUp(n).name} after ${o.name}`);
            }
        }
        assert.ok(named("shared-fs-gate-noout-unset").dependencies.includes(osdUp("node5").urn));
        assert.deepEqual(rollChains(mirrored.resources).get("shared-fs")!.map((r) => r.name), rollChains(run.resources).get("shared-fs")!.map((r) => r.name));
    });

    test("disk commands and labels stay per node: they depend on no gate, no Deployment, no other node", () => {
        for (const n of Object.keys(hosts)) {
            for (const r of [named(`shared-fs-${n}-disks`), named(`shared-fs-${n}-label`)]) {
                const deps = r.dependencies.map((d) => d.slice(d.lastIndexOf("::") + 2));
                assert.ok(!deps.some((d) => d.includes("-gate-") || d.startsWith("ceph-shared-fs-") || (d.includes("-node") && !d.includes(n))), `${r.name}: ${deps}`);
            }
        }
    });

    test("no dependency cycle with the admin pods: they wait for no mon; every gate waits for them and its script set", () => {
        const admin = resourceNamed(run, "ceph-shared-fs-admin", "kubernetes:apps/v1:DaemonSet");
        assert.ok(!admin.dependencies.some((d) => d.includes("-mon-")), admin.dependencies.join(" "));
        const set = named(cephScriptSetName("shared-fs", "ceph-gate.sh"));
        const local = named(cephScriptSetName("shared-fs", "cephfs-gate.sh"));
        for (const g of gates()) {
            assert.ok(g.dependencies.includes(admin.urn), g.name);
            assert.ok(g.dependencies.includes(set.urn), g.name);
            assert.ok(g.dependencies.includes(local.urn), g.name);
        }
    });

    test("a gate runs cephfs-gate.sh on create and on update alike, with ceph-gate.sh's arguments; nothing in triggers; delete does nothing", () => {
        const fsid = /fsid = ([0-9a-f-]{36})/.exec((named("shared-fs-ceph-conf").inputs as any).data["ceph.conf"])![1];
        assert.equal(gates().length, 18);
        const selector = "'storage.zcloud.io/storage=shared-fs,app.kubernetes.io/component in (ceph-mon,ceph-mgr,ceph-osd,ceph-mds)'";
        for (const g of gates()) {
            const i = g.inputs as any;
            // no `update`: on an update the command provider runs `create` again (the same check)
            assert.equal(i.update, undefined, g.name);
            assert.equal(i.triggers, undefined, g.name);
            assert.equal(i.delete, undefined, g.name);
            // The SDK marks triggers replace-on-change; a gate sets none, so nothing of it replaces.
            assert.deepEqual(g.replaceOnChanges, ["triggers[*]"], g.name);
            // the stub, the local set's ConfigMap and hash, then cephfs-gate.sh's arguments
            assert.match(i.create, new RegExp(`^sh -c '.*' cephfs-gate ${cephScriptSetName("shared-fs", "cephfs-gate.sh")} ${cephScriptBundle("cephfs-gate.sh").sha256} --namespace zcloud-storage --admin-selector \\S+ --script-configmap ceph-shared-fs-scripts-gate-[0-9a-f]{12} --library-configmap ceph-shared-fs-scripts-library-[0-9a-f]{12} --context prod-admin (--daemons '[^']+' )?-- `, "s"));
            // only the first gate passes while no daemon of the storage runs (its creation)
            assert.equal(i.create.includes(` --daemons ${selector} -- `), g.name === "shared-fs-gate-roll-start", g.name);
            assert.match(env(g)[gateGuardsEnv], /^[0-9a-f]{64}$/);
            assert.ok(gateArgs(g).endsWith(` --fsid ${fsid} --timeout 600`), g.name);
        }
        assert.equal(gateArgs(named("shared-fs-gate-node4-ok-to-stop")), `osd-ok-to-stop --host node4 --fsid ${fsid} --timeout 600`);
        assert.equal(gateArgs(named("shared-fs-gate-mds-b-handover")), `mds-handover --name b --fs shared-fs --fsid ${fsid} --timeout 600`);
        assert.equal(gateArgs(named("shared-fs-gate-roll-start")), `roll-start --fsid ${fsid} --timeout 600`);
    });

    test("without kubernetes:context or kubeconfig the plan advises that the gates will refuse; with one, nothing", () => {
        assert.deepEqual(rollAdvisories(run.resources), []);
        const create = String((gates(untargeted)[0].inputs as any).create);
        assert.ok(!create.slice(create.lastIndexOf("' cephfs-gate ")).includes("--context"));
        assert.deepEqual(rollAdvisories(untargeted.resources), [
            'cephfs storage shared-fs: neither kubernetes:context nor kubernetes:kubeconfig is set, so its health gates (and drains) cannot tell which cluster to ask: at pulumi up the first gate (roll-start) refuses and no daemon starts or restarts. Set one of them (docs/cephfs.md "Rolling restarts behind health gates").',
        ]);
    });

    test("a gate's guard hash is the hash of the pod templates it guards, as planned", () => {
        const t = (w: string) => (named(w).inputs as any).spec.template;
        assert.equal(env(named("shared-fs-gate-mon-b"))[gateGuardsEnv], guardHash({ "ceph-shared-fs-mon-b": t("ceph-shared-fs-mon-b") }));
        const node5 = ["ceph-shared-fs-osd-node5-wwn-0x5", "ceph-shared-fs-osd-node5-wwn-0x6"];
        assert.equal(env(named("shared-fs-gate-node5-osd-up"))[gateGuardsEnv], guardHash(Object.fromEntries(node5.map((w) => [w, t(w)]))));
        assert.equal(env(named("shared-fs-gate-node5-ok-to-stop"))[gateGuardsEnv], env(named("shared-fs-gate-node5-osd-up"))[gateGuardsEnv]);
        // roll-start guards every daemon Deployment of the storage
        const daemons = run.resources.filter((r) => r.type === DEPLOYMENT && r.name.startsWith("ceph-shared-fs-")).map((r) => r.name);
        assert.equal(daemons.length, 11);
        assert.equal(env(named("shared-fs-gate-roll-start"))[gateGuardsEnv], guardHash(Object.fromEntries(daemons.map((w) => [w, t(w)]))));
    });
});

describe("what runs a gate again: a change of what it guards, nothing else", () => {
    const changedGates = (other: PlanRun) =>
        upgradeDiff(run.resources, other.resources)
            .filter((c) => isRollGate(c.resource))
            .map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`)
            .sort();

    test("another image (registry): every daemon restarts, every gate runs again (an update of its environment, never a replace)", () => {
        const changes = upgradeDiff(run.resources, registry.resources);
        assert.deepEqual(changedGates(registry), gates().map((g) => `update ${g.name} environment.${gateGuardsEnv}`).sort());
        const daemons = changes.filter((c) => c.resource.type === DEPLOYMENT && c.resource.parent.endsWith("shared-fs"));
        assert.equal(daemons.length, 3 + 2 + 4 + 2);
        assert.ok(daemons.every((c) => c.kind === "update"));
    });

    test("ceph.conf changes (replicas 3 -> 2): its hash restarts every daemon through every gate", () => {
        const changes = upgradeDiff(run.resources, fewerReplicas.resources);
        const daemons = changes.filter((c) => c.resource.type === DEPLOYMENT && c.resource.name.startsWith("ceph-shared-fs-"));
        assert.deepEqual(daemons.map((c) => `${c.kind} ${c.fields.join(",")}`), Array(11).fill("update spec.template.metadata"));
        assert.deepEqual(changedGates(fewerReplicas), gates().map((g) => `update ${g.name} environment.${gateGuardsEnv}`).sort());
    });

    test("a device added on node4: only node4's gates and noout run again; no daemon restarts", () => {
        assert.deepEqual(
            changedGates(grown),
            // node4's osd-up also waits for one OSD more (--osds 2): its command changes, in place
            ["node4-ok-to-stop", "node4-osd-up", "noout-set", "noout-unset", "roll-start"].map((g) => `update shared-fs-gate-${g} ${g === "node4-osd-up" ? "create," : ""}environment.${gateGuardsEnv}`),
        );
        const changes = upgradeDiff(run.resources, grown.resources);
        assert.deepEqual(changes.filter((c) => c.resource.type === DEPLOYMENT).map((c) => `${c.kind} ${c.resource.name}`), ["create ceph-shared-fs-osd-node4-wwn-0x8"]);
        // --diff tells those gates, in their order, as gates that run with no restart
        assert.deepEqual(renderRollOrder(changes, grown.resources).split("\n"), [
            "Ceph health gates run again, in this order, with no daemon restart (each acts as in a roll: noout set and unset set and clear the flag, an mds handover fails its MDS over to the standby when it holds a rank, a pause of a few seconds for clients):",
            "  shared-fs:",
            "     1. gate    roll-start --timeout 600",
            "     2. gate    noout set --timeout 600",
            "     3. gate    osd-ok-to-stop --host node4 --timeout 600",
            "     4. gate    osd-up --host node4 --osds 2 --timeout 600",
            "     5. gate    noout unset --timeout 600",
        ]);
    });

    test("a new storage: its gates run as it is created, and --diff tells no roll", () => {
        assert.equal(renderRollOrder(diffPlans([], run.resources), run.resources), "");
    });
});

describe(`an existing stack made by ${beforeGates} (no gates)`, () => {
    test("pulumi up: the gates and their script set created; every daemon updated in place (ceph.conf and key hashes), drains in place; nothing replaced or deleted", () => {
        const changes = upgradeDiff(old.resources, run.resources).filter((c) => !isSetMetadata(c.resource));
        const by = (kind: string) => changes.filter((c) => c.kind === kind).map((c) => c.resource.name).sort();
        // The mon-init script changed too (the monmap's ciphers follow the mon key's type): its
        // set is a new ConfigMap, the old one goes once the mons moved.
        const oldMonInit = old.resources.filter((r) => r.type === CONFIG_MAP && r.name.startsWith("ceph-shared-fs-scripts-mon-init-")).map((r) => r.name);
        assert.equal(oldMonInit.length, 1);
        assert.notEqual(oldMonInit[0], cephScriptSetName("shared-fs", "ceph-mon-init.sh"));
        const localSets = [cephScriptSetName("shared-fs", "cephfs-gate.sh"), cephScriptSetName("shared-fs", "cephfs-osd-remove.sh")];
        // Every Ceph set is new since the library moved out of them (and the library is new).
        const cephSets = run.resources.filter(isCephSet).map((r) => r.name);
        const prepares = run.resources.filter(isPrepare).map((r) => r.name);
        assert.equal(prepares.length, 4, "a prepare Job per device");
        assert.deepEqual(by("create"), [...cephSets, ...localSets, ...gates().map((g) => g.name), ...prepares].sort());
        // The image moved from Squid to Tentacle since (test/plan/ceph-release-upgrade.test.ts):
        // the filesystem Job is replaced, the admin pods updated (only their image).
        assert.deepEqual(by("replace"), ["shared-fs-filesystem"]);
        assert.deepEqual(by("delete"), old.resources.filter(isCephSet).map((r) => r.name).sort());
        assert.ok(by("delete").includes(oldMonInit[0]));
        const daemons = run.resources.filter((r) => r.type === DEPLOYMENT && r.name.startsWith("ceph-shared-fs-")).map((r) => r.name);
        const drains = run.resources.filter((r) => r.type === LOCAL && r.name.endsWith("-drain")).map((r) => r.name);
        assert.deepEqual(by("update"), [...daemons, ...drains, "ceph-shared-fs-admin"].sort());
        for (const c of changes.filter((x) => x.kind === "update")) {
            if (c.resource.name === "ceph-shared-fs-admin") {
                assert.deepEqual(c.fields, ["spec.template.spec"]);
            } else if (c.resource.type === DEPLOYMENT) {
                // The pod template's annotations: ceph.conf's and the keys' hashes added; every pod
                // runs new sets (the library's and its own: the sets' annotation).
                // Every pod template's spec changes too: the image (Squid -> Tentacle).
                assert.deepEqual(c.fields, ["spec.template.metadata", "spec.template.spec"], c.resource.name);
                const was = (c.before!.inputs as any).spec.template.metadata.annotations ?? {};
                const now = (c.resource.inputs as any).spec.template.metadata.annotations;
                const { ["storage.zcloud.io/ceph-conf"]: conf, ["storage.zcloud.io/ceph-keys"]: keys, ...rest } = now;
                const sets = "storage.zcloud.io/script-sets";
                const without = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).filter(([k]) => k !== sets));
                assert.deepEqual(without(rest), without(was), c.resource.name);
                assert.notEqual(rest[sets], was[sets], c.resource.name);
                assert.match(conf, /^[0-9a-f]{64}$/);
                assert.match(keys, /^[0-9a-f]{64}$/);
            } else {
                // The drain's delete is the stub naming the local set now (nothing runs on its update).
                assert.deepEqual(c.fields, ["delete"], c.resource.name);
            }
        }
        // Disk commands and labels: as they are.
        for (const n of Object.keys(hosts)) {
            assert.equal(changes.find((c) => c.resource.name === `shared-fs-${n}-disks`), undefined);
            assert.equal(changes.find((c) => c.resource.name === `shared-fs-${n}-label`), undefined);
        }
    });

    test("the first up is already gated: the gates are created in the same up, between the updates, and their create runs the check", () => {
        const order = rollChains(run.resources).get("shared-fs")!;
        const changes = new Map(upgradeDiff(old.resources, run.resources).map((c) => [c.resource.urn, c.kind]));
        // Every step of the chain changes in this up: restarts (updates) alternate with gates (creates).
        assert.deepEqual(
            order.map((r) => changes.get(r.urn)),
            order.map((r) => (isRollGate(r) ? "create" : "update")),
        );
        const text = renderRollOrder(upgradeDiff(old.resources, run.resources), run.resources);
        assert.equal(
            text,
            [
                "Ceph daemons restart one at a time, in this order (each gate waits, bounded, for the cluster's health):",
                "  shared-fs:",
                ...[
                    "gate    roll-start --timeout 600",
                    "restart ceph-shared-fs-mon-a",
                    "gate    mon-quorum --id a --timeout 600",
                    "restart ceph-shared-fs-mon-b",
                    "gate    mon-quorum --id b --timeout 600",
                    "restart ceph-shared-fs-mon-c",
                    "gate    mon-quorum --id c --timeout 600",
                    "restart ceph-shared-fs-mgr-a",
                    "gate    mgr-available --id a --timeout 600",
                    "restart ceph-shared-fs-mgr-b",
                    "gate    mgr-available --id b --timeout 600",
                    "gate    noout set --timeout 600",
                    "gate    osd-ok-to-stop --host node3 --timeout 600",
                    "restart ceph-shared-fs-osd-node3-wwn-0x3",
                    "gate    osd-up --host node3 --osds 1 --timeout 600",
                    "gate    osd-ok-to-stop --host node4 --timeout 600",
                    "restart ceph-shared-fs-osd-node4-wwn-0x4",
                    "gate    osd-up --host node4 --osds 1 --timeout 600",
                    "gate    osd-ok-to-stop --host node5 --timeout 600",
                    "restart ceph-shared-fs-osd-node5-wwn-0x5",
                    "restart ceph-shared-fs-osd-node5-wwn-0x6",
                    "gate    osd-up --host node5 --osds 2 --timeout 600",
                    "gate    noout unset --timeout 600",
                    "gate    mds-handover --name a --fs shared-fs --timeout 600",
                    "restart ceph-shared-fs-mds-a",
                    "gate    fs-active --fs shared-fs --name a --timeout 600",
                    "gate    mds-handover --name b --fs shared-fs --timeout 600",
                    "restart ceph-shared-fs-mds-b",
                    "gate    fs-active --fs shared-fs --name b --timeout 600",
                ].map((l, i) => `    ${String(i + 1).padStart(2)}. ${l}`),
            ].join("\n"),
        );
    });

    test("`npm run plan -- <stack> --diff <old stack>` (offline, the old program's plan) prints that order", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-roll-diff-"));
        try {
            const file = path.join(dir, "Pulumi.prod.yaml");
            fs.writeFileSync(file, yaml.dump({ config: Object.fromEntries(Object.entries(values()).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v])) }));
            const saved = path.join(dir, "old.json");
            await new Promise<void>((resolve, reject) =>
                execFile(process.execPath, ["--import", "tsx", path.join(oldDir, "tools", "plan.ts"), file, "--json"], { cwd: oldDir, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
                    err ? reject(new Error(stderr)) : (fs.writeFileSync(saved, stdout), resolve()),
                ),
            );
            const out = await new Promise<string>((resolve, reject) =>
                execFile(process.execPath, ["--import", "tsx", "tools/plan.ts", file, "--diff-plan", saved], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))),
            );
            assert.ok(out.includes("\nCeph daemons restart one at a time, in this order (each gate waits, bounded, for the cluster's health):\n  shared-fs:\n     1. gate    roll-start --timeout 600\n     2. restart ceph-shared-fs-mon-a\n     3. gate    mon-quorum --id a --timeout 600\n"), out);
            assert.ok(out.includes("    21. restart ceph-shared-fs-osd-node5-wwn-0x6\n    22. gate    osd-up --host node5 --osds 2 --timeout 600\n"), out);
            // 18 gates, the library, the six Ceph sets, the two local sets and 4 OSD prepare Jobs
            // created; the five old Ceph sets deleted (the library moved out of them); the
            // filesystem Job replaced and the admin pods updated (the image, Squid -> Tentacle); the
            // ceph-csi provisioner updated (--setmetadata); and the three node labels move: their
            // NodePatches deleted, their label commands created
            // (23 updates: 17, and each node's disk command and script copy on another script set since);
            // since the shrink change also the mons' two leave resources and their two sets (38 creates)
            assert.ok(/\n8 to delete, 1 to replace, 23 to update, 38 to create\n/.test(out), out);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe(`an existing stack made by ${beforeRollStart} (gates, no roll-start)`, () => {
    test("pulumi up: roll-start and the new gate script set created, the old set deleted; the other gates updated in place (the new set's name, the new local script); no daemon, drain, disk command or label changes", () => {
        // The same base also sees the mon-init script set's change since (the AES-256 mon. key):
        // test/plan/ceph-key-rotation.test.ts holds those changes; here only the gates'.
        const all = upgradeDiff(gated.resources, run.resources);
        const isGateSet = (r: { type: string; name: string }) => r.type === CONFIG_MAP && r.name.startsWith("ceph-shared-fs-scripts-gate-");
        // the gates' and drains' local sets and the drains' stub: the next describe's change
        const isLocal = (r: { type: string; name: string }) => (r.type === CONFIG_MAP && r.name.startsWith("ceph-shared-fs-scripts-cephfs-")) || (r.type === LOCAL && r.name.endsWith("-drain"));
        const changes = all.filter((c) => isRollGate(c.resource) || isGateSet(c.resource));
        const by = (kind: string) => changes.filter((c) => c.kind === kind).map((c) => c.resource.name).sort();
        const oldSet = gated.resources.filter((r) => r.type === CONFIG_MAP && r.name.startsWith("ceph-shared-fs-scripts-gate-")).map((r) => r.name);
        assert.equal(oldSet.length, 1);
        assert.notEqual(oldSet[0], cephScriptSetName("shared-fs", "ceph-gate.sh"));
        assert.deepEqual(by("create"), [cephScriptSetName("shared-fs", "ceph-gate.sh"), "shared-fs-gate-roll-start"].sort());
        assert.deepEqual(by("delete"), oldSet);
        assert.deepEqual(by("replace"), []);
        const others = gates().filter((g) => g.name !== "shared-fs-gate-roll-start");
        assert.deepEqual(by("update"), others.map((g) => g.name).sort());
        for (const c of changes.filter((x) => x.kind === "update")) {
            // the command names the new script set and carries the new cephfs-gate.sh; the guard
            // hash changes for every gate: the image moved since (Squid -> Tentacle,
            // test/plan/ceph-release-upgrade.test.ts), so every pod template it guards changed
            assert.deepEqual(c.fields, ["create", "environment.ZCLOUD_GATE_GUARDS", "update"], c.resource.name);
            assert.notEqual(env(c.resource)[gateGuardsEnv], env(c.before!)[gateGuardsEnv], c.resource.name);
        }
        // roll-start changes nothing the cluster runs: no drain, disk command or label changes; the
        // other changes are the release's (the image of every daemon, the admin pods and the
        // filesystem Job; the mon-init set: test/plan/ceph-release-upgrade.test.ts, ceph-key-rotation.test.ts)
        const release = (c: (typeof all)[number]) =>
            (c.resource.type === DEPLOYMENT && c.resource.name.startsWith("ceph-shared-fs-")) ||
            c.resource.name === "ceph-shared-fs-admin" ||
            c.resource.name === "shared-fs-filesystem" ||
            (c.resource.type === CONFIG_MAP && c.resource.name.startsWith("ceph-shared-fs-scripts-mon-init-"));
        assert.deepEqual(all.filter((c) => !isRollGate(c.resource) && !isGateSet(c.resource) && !isLocal(c.resource) && !isCephSet(c.resource) && !release(c) && !isPrepare(c.resource) && !isSetMetadata(c.resource)).map((c) => c.resource.name), []);
        // the diff tells each gate's change in words: the osd-up gates' check gains --osds, every gate's script set changes
        const text = renderChanges(changes);
        assert.doesNotMatch(text, /(create|update)(, \w+)* changed/);
        assert.ok(text.includes("\n                          note: its script set or kubectl target changes; the gate runs again\n"), text);
        assert.ok(text.includes("note: its check changes: osd-up --host node5 --timeout 600 -> osd-up --host node5 --osds 2 --timeout 600; its script set or kubectl target changes; the gate runs again"), text);
    });
});

describe(`an existing stack made by ${beforeStub} (gates and drains with their local script inline)`, () => {
    test("pulumi up: the two local script sets created; every gate and drain updated in place (its command the stub); besides the release's changes nothing else changes, nothing replaced or deleted", () => {
        // The image moved from Squid to Tentacle since (test/plan/ceph-release-upgrade.test.ts holds
        // those changes: the daemons, the admin pods, the filesystem Job, the mon-init set, and each
        // gate's guard hash); here only what the stubs change.
        const release = (r: { type: string; name: string }) =>
            (r.type === DEPLOYMENT && r.name.startsWith("ceph-shared-fs-")) ||
            r.name === "ceph-shared-fs-admin" ||
            r.name === "shared-fs-filesystem" ||
            (r.type === CONFIG_MAP && r.name.startsWith("ceph-shared-fs-scripts-mon-init-"));
        const changes = upgradeDiff(inline.resources, run.resources).filter((c) => !release(c.resource) && !isCephSet(c.resource) && !isPrepare(c.resource) && !isSetMetadata(c.resource));
        const by = (kind: string) => changes.filter((c) => c.kind === kind).map((c) => c.resource.name).sort();
        assert.deepEqual(by("create"), [cephScriptSetName("shared-fs", "cephfs-gate.sh"), cephScriptSetName("shared-fs", "cephfs-osd-remove.sh")].sort());
        assert.deepEqual(by("replace"), []);
        assert.deepEqual(by("delete"), []);
        const drains = run.resources.filter((r) => r.type === LOCAL && r.name.endsWith("-drain")).map((r) => r.name);
        assert.equal(drains.length, 4);
        assert.deepEqual(by("update"), [...gates().map((g) => g.name), ...drains].sort());
        for (const c of changes.filter((x) => x.kind === "update")) {
            assert.deepEqual(c.replaceBecause, [], c.resource.name);
            const before = c.before!.inputs as any;
            const now = c.resource.inputs as any;
            if (isRollGate(c.resource)) {
                // the gate runs again on this update (its check: harmless, it passes on a healthy
                // cluster); its guard hash, environment and arguments are as they were; `update`
                // goes (the provider runs `create` on an update)
                assert.deepEqual(c.fields, ["create", "environment.ZCLOUD_GATE_GUARDS", "update"], c.resource.name);
                assert.equal(now.update, undefined, c.resource.name);
                assert.deepEqual({ ...now.environment, [gateGuardsEnv]: "" }, { ...before.environment, [gateGuardsEnv]: "" }, c.resource.name);
                assert.equal(gateArgs(c.resource), gateArgs(c.before!), c.resource.name);
                assert.ok(before.create.includes("ck_kube_target") && !now.create.includes("ck_kube_target"), c.resource.name);
            } else {
                // a drain has no create or update: its update runs nothing, state takes the new delete
                assert.deepEqual(c.fields, ["delete"], c.resource.name);
                assert.equal(now.create, undefined);
                assert.equal(now.update, undefined);
                // the same arguments, the Ceph set's name aside (and the library's: ceph-library.test.ts)
                const args = (d: string) => d.slice(d.lastIndexOf(" --namespace ")).replace(/ --script-configmap \S+( --library-configmap \S+)?/, "");
                assert.equal(args(now.delete), args(before.delete), c.resource.name);
            }
        }
    });

    test("the inputs shrink: the 18 gates from ~18 KB each to under 2.5 KB (the stub, in create only), the drains from ~11 KB to under 2.5 KB", () => {
        const bytes = (r: PlannedResource) => Buffer.byteLength(JSON.stringify(r.inputs));
        const was = gates(inline).map(bytes);
        const now = gates().map(bytes);
        assert.ok(Math.min(...was) > 15_000, `before: ${Math.min(...was)}`);
        assert.ok(Math.max(...now) < 2_500, `gate inputs now: ${Math.max(...now)}`);
        const drains = (p: PlanRun) => p.resources.filter((r) => r.type === LOCAL && r.name.endsWith("-drain")).map(bytes);
        assert.ok(Math.min(...drains(inline)) > 10_000, `before: ${Math.min(...drains(inline))}`);
        assert.ok(Math.max(...drains(run)) < 2_500, `drain inputs now: ${Math.max(...drains(run))}`);
    });
});

describe("a change of cephfs-gate.sh in review (--diff, --out): the set's diff once, one line per gate", () => {
    test("a stack whose gates ran an older cephfs-gate.sh set: the diff of the script once, each gate one line; --out writes the set's text", () => {
        const setName = cephScriptSetName("shared-fs", "cephfs-gate.sh");
        const bundle = cephScriptBundle("cephfs-gate.sh");
        // the stack as an older cephfs-gate.sh left it: another text (one line less), its own set name and hash
        const oldText = bundle.text.replace("gs_said=1\n", "");
        assert.notEqual(oldText, bundle.text);
        const oldSha = createHash("sha256").update(oldText).digest("hex");
        const oldName = setName.replace(bundle.id, oldSha.slice(0, 12));
        const before = run.resources.map((r) => {
            const json = JSON.stringify(r).split(setName).join(oldName).split(bundle.sha256).join(oldSha);
            const copy = JSON.parse(json) as PlannedResource;
            if (r.name === setName) (copy.inputs as any).data["cephfs-gate.sh"] = oldText;
            return copy;
        });
        const text = renderScriptSetChanges(before, run.resources);
        const lines = text.split("\n");
        assert.equal(lines[0], "Script sets changed (each once):");
        assert.equal(lines.filter((l) => l.startsWith("cephfs-gate.sh: script set ")).length, 1, text);
        assert.ok(text.includes(`cephfs-gate.sh: script set ${bundle.id} (was ${oldSha.slice(0, 12)}): cephfs-gate.sh changed; cephfs-kube.sh unchanged\n--- cephfs-gate.sh ${oldSha.slice(0, 12)}\n+++ cephfs-gate.sh ${bundle.id}\n`), text);
        assert.equal(lines.filter((l) => l === "+    gs_said=1").length, 1, text);
        const users = lines.filter((l) => l.includes(" runs script set "));
        assert.deepEqual(users, gates().map((g) => `  ${g.name}: cephfs-gate.sh runs script set ${bundle.id} (was ${oldSha.slice(0, 12)})`));
        // no gate carries the script: the per-gate change is one line, the text appears once
        assert.equal(text.split("gs_admin_pod()").length - 1, 0, "unchanged lines of the script are not repeated per gate");
        // --out: the set's text, once
        assert.deepEqual(scriptSetFiles(run.resources).filter((f) => f.path.endsWith("/cephfs-gate.sh")), [{ path: `scripts/${bundle.id}/cephfs-gate.sh`, text: bundle.text }]);
    });

    test("the drains name their set too: a changed cephfs-osd-remove.sh shows once, each drain one line", () => {
        const setName = cephScriptSetName("shared-fs", "cephfs-osd-remove.sh");
        const bundle = cephScriptBundle("cephfs-osd-remove.sh");
        const oldText = `${bundle.text}# older\n`;
        const oldSha = createHash("sha256").update(oldText).digest("hex");
        const oldName = setName.replace(bundle.id, oldSha.slice(0, 12));
        const before = run.resources.map((r) => {
            const copy = JSON.parse(JSON.stringify(r).split(setName).join(oldName).split(bundle.sha256).join(oldSha)) as PlannedResource;
            if (r.name === setName) (copy.inputs as any).data["cephfs-osd-remove.sh"] = oldText;
            return copy;
        });
        const text = renderScriptSetChanges(before, run.resources);
        assert.equal(text.split("\n").filter((l) => l.startsWith("cephfs-osd-remove.sh: script set ")).length, 1, text);
        const drains = run.resources.filter((r) => r.type === LOCAL && r.name.endsWith("-drain")).map((r) => r.name);
        assert.deepEqual(
            text.split("\n").filter((l) => l.includes(" runs script set ")),
            drains.map((d) => `  ${d}: cephfs-osd-remove.sh runs script set ${bundle.id} (was ${oldSha.slice(0, 12)})`),
        );
    });
});
