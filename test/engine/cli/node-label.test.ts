/**
 * The node labels' move with the real CLI and providers: a stack applied by the last program that
 * labelled nodes by NodePatch (test/helpers/oldProgram.ts nodePatchLabelsCommit) is moved by
 * `pulumi up` with this one. Per node the label command is created and the NodePatch deleted,
 * nothing else; a watch on the Nodes sees the storage label and devices annotation on every
 * storage node at every resourceVersion during the up (a missing label would evict the storage's
 * pods); the NodePatch's manager (`zcloud-<storage>`) holds nothing afterwards, the label
 * command's (`zcloud-storage/<storage>`) holds the label; fields of other managers are untouched;
 * the next preview is empty. A node removed afterwards loses the label and annotation (the
 * command's delete relinquishes them) before its disks are released, and keeps what others set.
 * Run: ZCLOUD_PULUMI_PREBUILT=<dir> flock /tmp/zcloud-slow.lock node --import tsx --test test/engine/cli/node-label.test.ts
 */
import assert from "node:assert/strict";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { devicesAnnotationKey, storageLabelKey } from "../../../components/naming";
import { nodePatchLabelsCommit, oldProgram } from "../../helpers/oldProgram";
import { EngineStack, Sandbox, engineSteps, ok, previewOperations, repoRoot, sandboxValues, splitDocuments, startSandbox } from "./engine";

const storage = "local-fast";
const vg = `zcloud-${storage}`;
const label = storageLabelKey("lvm");
const annotation = devicesAnnotationKey("lvm");
const oldManager = `zcloud-${storage}`;
const newManager = `zcloud-storage/${storage}`;
/** Fields set by others: an SSA manager of its own on node1 and node3, `kubectl label` on node2. */
const foreignManagers = ["other-team", "kubectl-label"];

let sandbox: Sandbox;
let stack: EngineStack;
let old: ReturnType<typeof oldProgram>;

before(() => {
    sandbox = startSandbox({ nodes: 3, devices: 1 });
    old = oldProgram(nodePatchLabelsCommit);
    stack = new EngineStack(sandbox, "node-label");
});

after(() => {
    sandbox?.stop();
    old?.cleanup();
});

interface ManagedEntry {
    manager: string;
    operation: string;
    fieldsV1?: unknown;
}
interface NodeObject {
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; managedFields?: ManagedEntry[] };
}

function execKubectl(args: string[], input: string): void {
    execFileSync("kubectl", args, { env: sandbox.env, input, stdio: ["pipe", "pipe", "pipe"] });
}

function node(name: string): NodeObject {
    return JSON.parse(sandbox.kubectl(["get", "node", name, "-o", "json", "--show-managed-fields"])) as NodeObject;
}

/** The managers whose fieldsV1 name the storage's label or annotation on a node. */
function ownersOfLabel(n: NodeObject): string[] {
    return (n.metadata.managedFields ?? [])
        .filter((e) => {
            const f = (e.fieldsV1 ?? {}) as { "f:metadata"?: { "f:labels"?: Record<string, unknown>; "f:annotations"?: Record<string, unknown> } };
            return `f:${label}` in (f["f:metadata"]?.["f:labels"] ?? {}) || `f:${annotation}` in (f["f:metadata"]?.["f:annotations"] ?? {});
        })
        .map((e) => e.manager)
        .sort();
}

/** Other managers' entries (manager, operation, fields) and the values they set, per node. */
function foreignFields(): string {
    return ["node1", "node2", "node3"]
        .map((name) => {
            const n = node(name);
            const entries = (n.metadata.managedFields ?? []).filter((e) => foreignManagers.includes(e.manager)).map((e) => ({ manager: e.manager, operation: e.operation, fieldsV1: e.fieldsV1 }));
            const values = { team: n.metadata.labels?.["example.com/team"], rack: n.metadata.labels?.["example.com/rack"], note: n.metadata.annotations?.["example.com/note"] };
            return `${name}: ${JSON.stringify(entries)} ${JSON.stringify(values)}`;
        })
        .join("\n");
}

function hostsOf(nodes: string[]): Record<string, string[]> {
    return Object.fromEntries(nodes.map((n) => [n, sandbox.nodes[n].devices]));
}

function vgs(name: string): string {
    return sandbox.lvm(name, ["vgs", "--noheadings", "-o", "vg_name,vg_uuid"]).trim().replace(/\s+/g, " ");
}

/**
 * `kubectl get nodes --watch -o json`: every Node version the API server sends (the list's items
 * first, then every change), as name, resourceVersion, the storage label and the devices
 * annotation. kubectl prints one JSON document per version; they are split by their braces.
 */
class NodeWatch {
    private readonly child: ChildProcess;
    private text = "";
    private stderr = "";
    private exited = false;

    constructor(env: NodeJS.ProcessEnv) {
        this.child = spawn("kubectl", ["get", "nodes", "--watch", "-o", "json"], { env, stdio: ["ignore", "pipe", "pipe"] });
        this.child.stdout!.setEncoding("utf8").on("data", (c: string) => (this.text += c));
        this.child.stderr!.setEncoding("utf8").on("data", (c: string) => (this.stderr += c));
        this.child.once("exit", () => (this.exited = true));
    }

    /** The versions seen so far: [name, resourceVersion, label, annotation]. */
    versions(): string[][] {
        return splitDocuments(this.text).map((d) => {
            const o = JSON.parse(d) as NodeObject & { kind: string; metadata: { resourceVersion: string } };
            assert.equal(o.kind, "Node", `the watch prints Nodes: ${d.slice(0, 200)}`);
            return [o.metadata.name, o.metadata.resourceVersion, o.metadata.labels?.[label] ?? "", o.metadata.annotations?.[annotation] ?? ""];
        });
    }

    /** Waits until the list has arrived (one version per node). */
    async listed(nodes: number): Promise<void> {
        for (let i = 0; i < 100 && new Set(this.versions().map((l) => l[0])).size < nodes; i++) {
            await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(new Set(this.versions().map((l) => l[0])).size, nodes, `the watch listed every node: ${this.stderr}`);
    }

    /** Stops the watch (after a grace period for the last events); it must not have ended by itself. */
    async stop(): Promise<string[][]> {
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(this.exited, false, `the watch ran the whole time: ${this.stderr}`);
        this.child.kill();
        return this.versions();
    }
}

test("a stack labelled by NodePatches moves to label commands: no label outage, the old manager gone, others untouched, next preview empty; a removed node loses its label", async () => {
    const three = ["node1", "node2", "node3"];
    stack.useProgram(old.dir);
    await stack.init(sandboxValues(sandbox, { namespace: "zcloud-storage", lvm: [{ name: storage, default: true, hosts: hostsOf(three) }] }));
    ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), "pulumi up (older program: NodePatches)");
    for (const n of three) {
        const obj = node(n);
        assert.equal(obj.metadata.labels?.[label], storage, `${n}: labelled by the older program`);
        assert.deepEqual(ownersOfLabel(obj), [oldManager], `${n}: the NodePatch's manager holds the label`);
    }
    // Fields of other managers on the same Nodes: a server-side apply of its own, a `kubectl label`.
    const other = (n: string) => JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: n, labels: { "example.com/team": "a" }, annotations: { "example.com/note": "keep" } } });
    for (const n of ["node1", "node3"]) {
        execKubectl(["apply", "--server-side", "--field-manager=other-team", "-f", "-"], other(n));
    }
    sandbox.kubectl(["label", "node", "node2", "example.com/rack=r1"]);
    const foreign = foreignFields();
    assert.match(foreign, /node1: \[\{"manager":"other-team"/);
    assert.match(foreign, /node2: \[\{"manager":"kubectl-label"/);
    const disksBefore = three.map(vgs).join("\n");

    stack.useProgram(repoRoot);
    const preview = previewOperations(ok(await stack.pulumi(["preview", "--json"]), "pulumi preview (this program)").stdout);
    // "op type::name", the type without its parents' types.
    const kinds = [...preview].map(([urn, op]) => `${op} ${urn.split("::").slice(-2).map((part, i) => (i === 0 ? part.split("$").pop() : part)).join("::")}`).sort();
    assert.deepEqual(
        kinds,
        three.flatMap((n) => [`create command:local:Command::${storage}-${n}-label`, `delete kubernetes:core/v1:NodePatch::${storage}-${n}-label`]).sort(),
        "per node one create (the label command) and one delete (the NodePatch), nothing else",
    );

    const watch = new NodeWatch(sandbox.env);
    await watch.listed(3);
    const log = path.join(sandbox.dir, "node-label-events.jsonl");
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--event-log", log]), "pulumi up (this program: label commands)");
    const seen = await watch.stop();
    for (const n of three) {
        const versions = seen.filter((l) => l[0] === n);
        const devices = sandbox.nodes[n].devices.join(",");
        for (const [, rv, l, a] of versions) {
            assert.equal(l, storage, `${n} at resourceVersion ${rv}: the storage label is there (${versions.length} versions seen)`);
            assert.equal(a, devices, `${n} at resourceVersion ${rv}: the devices annotation is there`);
        }
        // The list, the label command's apply and the NodePatch's relinquish (managedFields changes) at least.
        assert.ok(new Set(versions.map((l) => l[1])).size >= 3, `${n}: the watch saw the up's changes: ${JSON.stringify(versions)}`);
    }
    console.log(`node-label move: ${seen.length} Node versions watched during the up, the label and annotation on every one`);

    const steps = engineSteps(fs.readFileSync(log, "utf8"));
    assert.deepEqual(
        steps.filter((s) => s.phase === "start").map((s) => `${s.op} ${s.urn.split("::").pop()}`).filter((s) => !/^same /.test(s)).sort(),
        three.flatMap((n) => [`create ${storage}-${n}-label`, `delete ${storage}-${n}-label`]).sort(),
        "the engine ran only the label commands' creates and the NodePatches' deletes",
    );
    for (const n of three) {
        const created = steps.findIndex((s) => s.phase === "done" && s.op === "create" && s.urn.endsWith(`::${storage}-${n}-label`));
        const deleting = steps.findIndex((s) => s.phase === "start" && s.op === "delete" && s.urn.endsWith(`::${storage}-${n}-label`));
        assert.ok(created >= 0 && created < deleting, `${n}: the label command was applied before the NodePatch's delete started`);
        const obj = node(n);
        assert.equal(obj.metadata.labels?.[label], storage);
        assert.deepEqual(ownersOfLabel(obj), [newManager], `${n}: only the label command's manager holds the label and annotation`);
        assert.equal((obj.metadata.managedFields ?? []).find((e) => e.manager === oldManager), undefined, `${n}: the NodePatch's manager holds nothing`);
    }
    assert.equal(foreignFields(), foreign, "other managers' fields and values are untouched");
    assert.equal(three.map(vgs).join("\n"), disksBefore, "no disk changed");
    ok(await stack.pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes after the move");

    // node3 leaves the storage: its label command's delete relinquishes, then its disks are released.
    stack.write(sandboxValues(sandbox, { namespace: "zcloud-storage", lvm: [{ name: storage, default: true, hosts: hostsOf(["node1", "node2"]) }] }));
    const removal = path.join(sandbox.dir, "node-label-removal.jsonl");
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--event-log", removal]), "pulumi up (node3 removed)");
    const rsteps = engineSteps(fs.readFileSync(removal, "utf8"));
    const labelGone = rsteps.findIndex((s) => s.phase === "done" && s.op === "delete" && s.urn.endsWith(`::${storage}-node3-label`));
    const disksGo = rsteps.findIndex((s) => s.phase === "start" && s.op === "delete" && s.urn.endsWith(`::${storage}-node3-disks`));
    assert.ok(labelGone >= 0 && labelGone < disksGo, "node3's label is relinquished before its disks are released");
    const node3 = node("node3");
    assert.equal(node3.metadata.labels?.[label], undefined, "node3 lost the storage label");
    assert.equal(node3.metadata.annotations?.[annotation], undefined, "node3 lost the devices annotation");
    assert.deepEqual(ownersOfLabel(node3), []);
    assert.doesNotMatch(vgs("node3"), new RegExp(vg), "node3's VG is released");
    for (const n of ["node1", "node2"]) {
        assert.equal(node(n).metadata.labels?.[label], storage, `${n} keeps the label`);
    }
    assert.equal(foreignFields(), foreign, "other managers' fields and values are untouched by the relinquish");
    ok(await stack.pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes after the removal");
    ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
    for (const n of three) {
        assert.equal(node(n).metadata.labels?.[label], undefined, `${n}: no label after destroy`);
    }
    assert.equal(foreignFields(), foreign, "other managers' fields and values are untouched by the destroy");
});
