/**
 * Engine tier: a node label command as the program renders it (components/node/nodeLabel.ts), run
 * with kubectl against a real kube-apiserver (controlplane.sh): server-side apply under the
 * storage's own field manager; the NodePatch of older programs (manager `zcloud-<storage>`)
 * relinquishing its fields leaves the label the command also holds (the upgrade); another value of
 * the key held by another manager fails loudly; delete removes only what the command set, and
 * never creates a Node.
 * Run: flock /tmp/zcloud-slow.lock node --import tsx --test test/engine/node-label.test.ts
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { toolsEnv } from "./applied";
import { nodeLabelManifest, nodeLabelScripts } from "../../components/node/nodeLabel";

const controlplane = path.join(__dirname, "controlplane.sh");
let dir: string;
let env: NodeJS.ProcessEnv;

const kubectl = (args: string[], input?: string) => execFileSync("kubectl", args, { env, encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"] });
const node = (name: string) => JSON.parse(kubectl(["get", "node", name, "-o", "json"])) as { metadata: { labels: Record<string, string>; annotations: Record<string, string> } };
const lvmLabel = "storage.zcloud.io/lvm";
const lvmDevices = "storage.zcloud.io/lvm-devices";

/** A phase of the label command of storage `fast` on `name`, run as the command provider runs it. */
function run(phase: "create" | "delete", name: string, devices = ["/dev/sdb"], storage = "fast") {
    const scripts = nodeLabelScripts(name, storage, {});
    const stdin = phase === "create" ? nodeLabelManifest({ node: name, type: "lvm", storage, devices }) : "";
    return spawnSync("/bin/sh", ["-c", scripts[phase]], { env, input: stdin, encoding: "utf8" });
}

before(() => {
    env = toolsEnv();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-node-label-"));
    execFileSync("bash", [controlplane, "start", dir], { env, stdio: ["ignore", "ignore", "inherit"] });
    env.KUBECONFIG = path.join(dir, "kubeconfig");
    for (const n of ["node1", "node2", "node3"]) {
        execFileSync("bash", [controlplane, "add-node", dir, n], { env, stdio: ["ignore", "ignore", "inherit"] });
    }
});

after(() => {
    if (dir) {
        spawnSync("bash", [controlplane, "stop", dir], { env, stdio: "inherit" });
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

describe("node label command against a real API server", () => {
    it("create applies the label and devices annotation under zcloud-storage/<storage>, prints nothing, keeps the node's own labels", () => {
        const own = node("node1").metadata.labels["kubernetes.io/hostname"];
        const r = run("create", "node1", ["/dev/sdb", "/dev/sdc"]);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout, "");
        const n = node("node1");
        assert.equal(n.metadata.labels[lvmLabel], "fast");
        assert.equal(n.metadata.annotations[lvmDevices], "/dev/sdb,/dev/sdc");
        assert.equal(n.metadata.labels["kubernetes.io/hostname"], own);
        const managers = (JSON.parse(kubectl(["get", "node", "node1", "-o", "json", "--show-managed-fields"])).metadata.managedFields as Array<{ manager: string; operation: string }>)
            .filter((m) => m.manager.startsWith("zcloud"));
        assert.deepEqual(managers.map((m) => [m.manager, m.operation]), [["zcloud-storage/fast", "Apply"]]);
        // Again (an update runs create again): nothing changes, no error.
        assert.equal(run("create", "node1", ["/dev/sdb", "/dev/sdc"]).status, 0);
        assert.equal(run("create", "node1", ["/dev/sdb"]).status, 0, "a device change updates the annotation");
        assert.equal(node("node1").metadata.annotations[lvmDevices], "/dev/sdb");
    });

    it("upgrade: the older program's NodePatch (manager zcloud-fast) relinquishing its fields leaves the label on the node", () => {
        // What the NodePatch did on create, and its delete (the provider's relinquish: the empty object under its manager).
        kubectl(["apply", "--server-side", "--field-manager=zcloud-fast", "-f", "-"], nodeLabelManifest({ node: "node2", type: "lvm", storage: "fast", devices: ["/dev/sdb"] }));
        assert.equal(run("create", "node2").status, 0);
        kubectl(["apply", "--server-side", "--field-manager=zcloud-fast", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: "node2" } }));
        const n = node("node2");
        assert.equal(n.metadata.labels[lvmLabel], "fast");
        assert.equal(n.metadata.annotations[lvmDevices], "/dev/sdb");
    });

    it("another manager holding the key with another value: create fails with the conflict, the label stays as it was", () => {
        kubectl(["label", "node", "node3", `${lvmLabel}=other`]);
        const r = run("create", "node3");
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /conflict/i);
        assert.match(r.stderr, /storage\.zcloud\.io\/lvm/);
        assert.equal(node("node3").metadata.labels[lvmLabel], "other");
        kubectl(["label", "node", "node3", `${lvmLabel}-`]);
    });

    it("delete removes the label and annotation, nothing else of the node", () => {
        const before = node("node1").metadata.labels;
        const r = run("delete", "node1");
        assert.equal(r.status, 0, r.stderr);
        const n = node("node1");
        assert.equal(n.metadata.labels[lvmLabel], undefined);
        assert.equal(n.metadata.annotations?.[lvmDevices], undefined);
        const { [lvmLabel]: _gone, ...rest } = before;
        assert.deepEqual(n.metadata.labels, rest);
    });

    it("refuses a Node made by client-side kubectl apply (kubectl would move that apply's fields to the label's manager and drop them)", () => {
        kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: "node8", labels: { mine: "yes" } } }));
        const r = run("create", "node8");
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /node node8: not found, or made by client-side kubectl apply/);
        assert.equal(node("node8").metadata.labels.mine, "yes");
        assert.equal(node("node8").metadata.labels[lvmLabel], undefined);
    });

    it("never creates a Node: create on a missing node fails, delete of a gone node passes", () => {
        const r = run("create", "node9");
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /node node9: not found, or made by client-side kubectl apply/);
        assert.equal(run("delete", "node9").status, 0);
        assert.equal(spawnSync("kubectl", ["get", "node", "node9"], { env }).status, 1, "no node9 was made");
    });
});
