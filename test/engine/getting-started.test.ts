/**
 * docs/getting-started.md, run as written against the sandbox (a real API server with kwok nodes
 * node1..node3, sshd nodes with loop devices): the doc's nodes file with the sandbox's addresses,
 * its discover --write-stack command, its edit (keep the devices meant for storage, uncomment the
 * lvm block), its plan commands, the stack applied as `pulumi up` applies it (applied.ts; the
 * Pulumi CLI cannot be built here), and its status command, healthy. Every `npm run` line of the
 * doc is run; the substitutions are the sandbox's paths and one flag (--min-size: the loop devices
 * are 64 MiB, under discover's default of 1 GiB).
 * Run as root, under the slow-tier lock: node --import tsx --test test/engine/getting-started.test.ts
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { Sandbox, applyStackFile, startSandbox } from "./applied";
import { ToolRun, runTool } from "../helpers/day2";

const doc = fs.readFileSync(path.join(__dirname, "..", "..", "docs", "getting-started.md"), "utf8");
let sb: Sandbox;
let files: { nodes: string; stack: string; rendered: string };

/** The fenced blocks of the doc with the given info string. */
function blocks(lang: string): string[] {
    return [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);
}

/** The doc's `npm run` commands, in order, without their trailing comments. */
function npmCommands(): string[] {
    return blocks("sh")
        .flatMap((b) => b.split("\n"))
        .map((l) => l.replace(/\s+#.*$/, "").trim())
        .filter((l) => l.startsWith("npm run "));
}

/** A doc command as argv for the tool, on the sandbox's files. */
function argvOf(command: string): { tool: "discover" | "status" | "plan"; args: string[] } {
    const words = command.split(/\s+/);
    assert.equal(words[3], "--", command);
    const tool = words[2] as "discover" | "status" | "plan";
    const args = words.slice(4).map((w) => {
        switch (w) {
            case "nodes.yaml":
                return files.nodes;
            case "stacks/Pulumi.edge.yaml":
            case "edge":
                return files.stack;
            case "~/.ssh/zcloud_ed25519":
                return sb.keyFile;
            case "rendered/":
                return files.rendered;
            default:
                return w;
        }
    });
    return { tool, args: tool === "discover" ? [...args, "--min-size", "16MiB"] : args };
}

async function run(command: string): Promise<ToolRun> {
    const { tool, args } = argvOf(command);
    if (tool === "plan") {
        const { spawnSync } = await import("node:child_process");
        const r = spawnSync(process.execPath, ["--import", "tsx", path.join(__dirname, "..", "..", "tools", "plan.ts"), ...args], { encoding: "utf8" });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr, ms: 0 };
    }
    return runTool(tool, args, sb.env);
}

before(async () => {
    sb = await startSandbox(3, 1);
    files = { nodes: path.join(sb.dir, "nodes.yaml"), stack: path.join(sb.dir, "Pulumi.edge.yaml"), rendered: path.join(sb.dir, "rendered") };
    // Step 1: the doc's nodes file, each node at its sandbox address and port.
    const nodesBlock = blocks("yaml").find((b) => b.startsWith("# nodes.yaml\n"));
    assert.ok(nodesBlock, "the doc shows nodes.yaml");
    const written = nodesBlock.replace(/(node\d): \{ address: [^}]+ \}/g, (_m, n: string) => {
        assert.ok(sb.nodes[n], `the doc names ${n}, the sandbox has ${Object.keys(sb.nodes)}`);
        return `${n}: { address: ${sb.nodes[n].address}, port: ${sb.nodes[n].port} }`;
    });
    fs.writeFileSync(files.nodes, written);
});

after(() => sb?.stop());

test("the doc's commands are the ones this test runs, in the doc's order", () => {
    assert.deepEqual(
        npmCommands().map((c) => c.split(/\s+/)[2]),
        ["discover", "plan", "plan", "status"],
    );
});

test("steps 1-6 as written: discover writes the stack, it plans, applies, and status is healthy", async () => {
    const [discover, plan, planOut, status] = npmCommands();
    const d = await run(discover);
    assert.equal(d.code, 0, d.stderr);
    const text = fs.readFileSync(files.stack, "utf8");
    const parsed = yaml.load(text) as { config: { "zcloud-storage:ssh": { hostKeys: Record<string, string> } } };
    assert.deepEqual(parsed.config["zcloud-storage:ssh"].hostKeys, Object.fromEntries(Object.entries(sb.nodes).map(([n, x]) => [n, x.hostKey])));

    // Step 2's edit: keep only the devices meant for storage (each sandbox node's own loop
    // device: the sandbox nodes are one machine, so each sees every disk), uncomment the lvm block.
    let node = "";
    const edited = text
        .split("\n")
        .filter((l) => {
            const at = /^ {2}# {7}(node\d+):$/.exec(l);
            node = at ? at[1] : node;
            return !l.startsWith("  #         - ") || sb.nodes[node].devices.includes(l.slice("  #         - ".length).split(/\s/)[0]);
        })
        .map((l) => (/^ {2}# (zcloud-storage:lvm:| {2})/.test(l) ? l.replace(/^ {2}# /, "  ") : l))
        .join("\n");
    fs.rmSync(files.stack);
    fs.writeFileSync(files.stack, edited);
    const live = yaml.load(edited) as { config: { "zcloud-storage:lvm": Array<{ name: string; hosts: Record<string, string[]> }> } };
    assert.deepEqual(live.config["zcloud-storage:lvm"][0].hosts, Object.fromEntries(Object.entries(sb.nodes).map(([n, x]) => [n, x.devices])));

    const again = await run(discover);
    assert.equal(again.code, 3);
    assert.ok(again.stderr.startsWith(`--write-stack ${files.stack}: exists; discover never overwrites a stack file`), again.stderr);

    const p = await run(plan);
    assert.equal(p.code, 0, p.stdout + p.stderr);
    for (const [n, x] of Object.entries(sb.nodes)) {
        assert.ok(p.stdout.includes(`  local prepare ${n} [${x.devices[0]}]\n`), p.stdout);
    }
    const out = await run(planOut);
    assert.equal(out.code, 0, out.stderr);
    assert.ok(fs.readdirSync(path.join(files.rendered, "manifests")).length > 0);

    await applyStackFile(sb, files.stack);
    for (const [n, x] of Object.entries(sb.nodes)) {
        assert.equal(sb.lvmOn(n, ["pvs", "--noheadings", "-o", "pv_name,vg_name"]).trim().split(/\s+/).join(" "), `${x.devices[0]} zcloud-local`);
    }

    let s = await run(status);
    for (let i = 0; i < 30 && s.code !== 0; i++) {
        await new Promise((res) => setTimeout(res, 2000));
        s = await run(status);
    }
    assert.equal(s.code, 0, s.stdout + s.stderr);
    assert.ok(s.stdout.includes("local (lvm): healthy; StorageClass local (default)"), s.stdout);
});
