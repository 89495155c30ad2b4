/**
 * The components as a package other Pulumi programs use: `npm pack` (its prepack compiles
 * dist/), the tarball installed from the npm registry's cache into a scratch program outside the
 * repo, that program type-checked against the shipped .d.ts and planned under the mock runtime.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";

const root = resolve(__dirname, "../..");
const manifestText = readFileSync(join(root, "package.json"), "utf8");
const pkg = JSON.parse(manifestText);

/** docs/library.md: its install lines, its tsconfig.json and its index.ts example, as a user copies them. */
const libraryDoc = readFileSync(join(root, "docs/library.md"), "utf8");
const docBlock = (lang: string) => new RegExp("```" + lang + "\n([\\s\\S]*?)```").exec(libraryDoc)![1];
/** `name@version` of each package the doc's `npm install` lines pin. */
const docPins = Object.fromEntries([...docBlock("sh").matchAll(/ (@?[a-z][\w./-]*)@(\d[\w.-]*)/g)].map((m) => [m[1], m[2]]));

/** A Pulumi program of another project: a TopoLVM driver and one LvmStorage on two nodes. */
const program = `import * as pulumi from "@pulumi/pulumi";
import { LvmStorage, TopolvmDriver } from "zcloud-storage";

interface Registered { type: string; name: string; custom: boolean; inputs: Record<string, unknown> }
const registered: Registered[] = [];
pulumi.runtime.setMocks(
    {
        newResource: (a) => {
            registered.push({ type: a.type, name: a.name, custom: a.custom ?? true, inputs: a.inputs });
            return { id: a.name + "-id", state: a.inputs };
        },
        call: (a) => a.inputs,
    },
    "scratch",
    "dev",
    true,
);

const driver = new TopolvmDriver("topolvm", { namespace: "storage" });
const storage = new LvmStorage("fast", {
    hosts: { worker1: ["/dev/disk/by-id/wwn-0x1"], worker2: ["/dev/disk/by-id/wwn-0x2", "/dev/disk/by-id/wwn-0x3"] },
    nodes: { worker1: { address: "10.1.0.1" }, worker2: { address: "10.1.0.2", user: "ops" } },
    ssh: { user: "root", port: 22, privateKey: pulumi.secret("not-a-key") },
    driver,
});
pulumi.all([storage.storageClassName, storage.volumeGroup, storage.nodes]).apply(([storageClassName, volumeGroup, nodes]) => {
    setTimeout(() => process.stdout.write(JSON.stringify({ storageClassName, volumeGroup, nodes, registered })), 100);
});
`;

interface Registered {
    type: string;
    name: string;
    custom: boolean;
    inputs: Record<string, any>;
}
interface Planned {
    storageClassName: string;
    volumeGroup: string;
    nodes: string[];
    registered: Registered[];
}

let scratch: string;
let tarball: string;
let files: string[];
let planned: Planned;
let packedManifest: Record<string, unknown>;
let manifestAfterPack: string;
let edgePlan: string;

function run(command: string, args: string[], cwd: string): string {
    try {
        return execFileSync(command, args, { cwd, encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        const err = e as { stdout?: string; stderr?: string; message: string };
        throw new Error(`${command} ${args.join(" ")} in ${cwd} failed: ${err.message}\n${err.stdout ?? ""}\n${err.stderr ?? ""}`);
    }
}

before(() => {
    scratch = mkdtempSync(join(tmpdir(), "zcloud-package-"));
    // npm pack in a copy of what the pack reads (its prepack rewrites package.json for a moment and
    // rebuilds dist/): the tests running beside this one read the repository's as it is.
    const source = join(scratch, "source");
    const tracked = run("git", ["ls-files", "--cached", "--others", "--exclude-standard", "package.json", "package-lock.json", "README.md", "tsconfig.json", "tsconfig.lib.json", "components", "policy", "tools/build-lib.sh", "tools/pack-manifest.cjs"], root).trim().split("\n");
    for (const f of tracked) cpSync(join(root, f), join(source, f));
    symlinkSync(join(root, "node_modules"), join(source, "node_modules"));
    const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", scratch], source));
    tarball = join(scratch, packed[0].filename);
    files = packed[0].files.map((f: { path: string }) => f.path).sort();
    manifestAfterPack = readFileSync(join(source, "package.json"), "utf8");
    packedManifest = JSON.parse(run("tar", ["-xzf", tarball, "-O", "package/package.json"], scratch));

    const app = join(scratch, "app");
    run("mkdir", ["-p", app], scratch);
    writeFileSync(
        join(app, "package.json"),
        JSON.stringify({
            name: "scratch",
            private: true,
            // The tarball, and the SDK it shares with the program at the version it pins; what
            // docs/library.md installs besides.
            dependencies: { "zcloud-storage": `file:${tarball}`, "@pulumi/pulumi": pkg.dependencies["@pulumi/pulumi"], "@pulumi/kubernetes": docPins["@pulumi/kubernetes"] },
            devDependencies: { typescript: docPins.typescript, "@types/node": docPins["@types/node"] },
        }),
    );
    writeFileSync(
        join(app, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { target: "ES2022", module: "commonjs", strict: true, esModuleInterop: true, types: ["node"], typeRoots: [join(root, "node_modules/@types")] } }),
    );
    writeFileSync(join(app, "index.ts"), program);
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], app);
    // The repo's TypeScript against the shipped declarations only (no source of the components there).
    run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "."], app);
    planned = JSON.parse(run(process.execPath, ["index.js"], app));

    // docs/library.md's program, project edge: type-checked with the doc's tsconfig.json by the
    // TypeScript it installs, then planned by this checkout's plan with --program.
    const edge = join(app, "edge");
    run("mkdir", ["-p", edge], app);
    writeFileSync(join(edge, "Pulumi.yaml"), "name: edge\nruntime: nodejs\n");
    writeFileSync(join(edge, "tsconfig.json"), docBlock("json"));
    writeFileSync(join(edge, "index.ts"), docBlock("ts"));
    writeFileSync(join(edge, "Pulumi.dev.yaml"), "config:\n  edge:sshKey:\n    secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret\n");
    run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", "."], edge);
    edgePlan = run(process.execPath, ["--import", "tsx", "tools/plan.ts", join(edge, "Pulumi.dev.yaml"), "--program", join(edge, "index.ts")], root);
});

after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test("the tarball holds the compiled components, their declarations and node scripts, not the program or tests", () => {
    // policy/endpoint: the pack's endpoint spelling, which the config contract shares.
    for (const f of ["package.json", "dist/policy/endpoint.js", "dist/components/index.js", "dist/components/index.d.ts", "dist/components/lvm/lvmStorage.d.ts", "dist/components/node/lib.sh", "dist/components/node/ceph/ceph-osd.sh"]) {
        assert.ok(files.includes(f), `${f} missing from ${tarball}`);
    }
    const outside = files.filter((f) => f !== "package.json" && f !== "README.md" && !f.startsWith("dist/components/") && !f.startsWith("dist/policy/endpoint."));
    assert.deepEqual(outside, []);
    assert.deepEqual(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")), []);
});

test("the tarball's package.json has no private and no scripts; the repository's is as it was", () => {
    assert.equal(manifestAfterPack, manifestText);
    assert.equal(existsSync(join(root, ".cache/pack/package.json")), false);
    const { private: _private, scripts: _scripts, ...rest } = pkg;
    assert.deepEqual(packedManifest, rest);
});

test("docs/library.md pins the versions of this package.json", () => {
    assert.equal(docPins["@pulumi/pulumi"], pkg.dependencies["@pulumi/pulumi"]);
    assert.equal(docPins["@pulumi/kubernetes"], pkg.dependencies["@pulumi/kubernetes"]);
    assert.equal(docPins.typescript, pkg.devDependencies.typescript);
    assert.equal(docPins["@types/node"], pkg.devDependencies["@types/node"]);
});

test("docs/library.md's program type-checks with its tsconfig.json and plans with --program as project edge", () => {
    const lines = edgePlan.split("\n");
    assert.equal(
        lines[0],
        "advisory: edge:sshKey is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it); set it: pulumi config set -s dev --secret --path 'edge:sshKey' < ssh-key-file",
    );
    assert.ok(lines.includes("edge-local (LvmStorage)"), edgePlan);
    assert.ok(lines.includes("    edge-local prepare edge1 [/dev/disk/by-id/nvme-eui.0025388b91b2c3d4]"), edgePlan);
});

test("the exports map resolves the library entry and nothing else", () => {
    const app = join(scratch, "app");
    const resolved = (spec: string) => run(process.execPath, ["-e", `process.stdout.write(require.resolve(${JSON.stringify(spec)}))`], app);
    const entry = join(app, "node_modules/zcloud-storage/dist/components/index.js");
    assert.equal(resolved("zcloud-storage"), entry);
    assert.equal(resolved("zcloud-storage/components"), entry);
    assert.throws(() => resolved("zcloud-storage/dist/components/lvm/lvmStorage.js"), /ERR_PACKAGE_PATH_NOT_EXPORTED/);
});

test("the scratch program plans an LvmStorage: per node a disk command over SSH and a label, lvmd, a StorageClass on TopoLVM", () => {
    const { registered } = planned;
    assert.equal(planned.storageClassName, "fast");
    assert.deepEqual(planned.nodes, ["worker1", "worker2"]);
    assert.ok(planned.volumeGroup.length > 0);
    const ofType = (type: string) => registered.filter((r) => r.type === type);
    assert.deepEqual(ofType("zcloud:storage:LvmStorage").map((r) => r.name), ["fast"]);
    assert.deepEqual(ofType("zcloud:storage:TopolvmDriver").map((r) => r.name), ["topolvm"]);

    const classes = ofType("kubernetes:storage.k8s.io/v1:StorageClass");
    assert.equal(classes.length, 1);
    assert.equal(classes[0].inputs.metadata.name, "fast");
    assert.equal(classes[0].inputs.provisioner, "topolvm.io");
    assert.equal(classes[0].inputs.volumeBindingMode, "WaitForFirstConsumer");

    const commands = ofType("command:remote:Command");
    // The connection carries the private key: the whole of it stays a secret.
    const secretSig = "4dabf18193072939515e22adb298388d";
    const connections = commands.map((c) => c.inputs.connection);
    assert.deepEqual(connections.filter((c) => c?.[secretSig] === undefined), []);
    assert.deepEqual(connections.map((c) => `${c.value.user}@${c.value.host}:${c.value.port}`).sort(), ["ops@10.1.0.2:22", "root@10.1.0.1:22"]);
    // The node scripts ship in the package: the commands run the bundle stub read from them.
    for (const c of commands) assert.match(String(c.inputs.create), /^(sudo -n )?sh -c /);
    assert.ok(commands.some((c) => String(c.inputs.create).startsWith("sudo -n ")), "the ops user's node runs its scripts through sudo");

    const daemonSets = ofType("kubernetes:apps/v1:DaemonSet").map((d) => d.inputs.metadata.namespace);
    assert.ok(daemonSets.length >= 2, "lvmd and the TopoLVM node plugin");
    assert.deepEqual([...new Set(daemonSets)], ["storage"]);
});
