import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as yaml from "js-yaml";
import { CliInputError } from "./cliInputs";
import { describe, describeDelete, diskCommandDevices, nodeCommandArgs, nodeOf, urnName } from "./describe";
import { isNodeCommand, kubernetesKind, nodeLabelManifest, toManifest } from "./manifests";
import { PlannedResource } from "./model";
import { replaceFile } from "./outFiles";
import { prometheusFiles } from "./prometheusFiles";
import { scriptSetFiles } from "./scriptSets";

/**
 * `--out DIR` for review: one file per Kubernetes object named by kind, namespace and name, node
 * commands as readable scripts with a header, the script bundles they run, an index in apply
 * order, and a list of what was written (so a later `--out --force` removes exactly that).
 */
export const writtenList = ".zcloud-plan-out";
const listHeader = "# files written by `npm run plan -- ... --out`; `--force` removes these and nothing else";

export interface OutFile {
    path: string;
    text: string;
    mode?: number;
}

/** `manifests/<namespace>/<kind>-<name>.yaml`; cluster-scoped objects under `manifests/_cluster` (no namespace has a `_`). */
export function manifestPath(r: PlannedResource): string | undefined {
    const manifest = toManifest(r);
    if (!manifest) {
        return undefined;
    }
    const meta = (manifest.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    const kind = String(manifest.kind).toLowerCase();
    const name = typeof meta.name === "string" ? meta.name : r.name;
    const namespace = typeof meta.namespace === "string" ? meta.namespace : "_cluster";
    // Several storages patch one node: a patch is named by its resource (storage, node, role).
    const patch = kubernetesKind(r.type)?.kind.endsWith("Patch") || nodeLabelManifest(r) !== undefined;
    const base = patch ? `${kind}-patch-${r.name}` : `${kind}-${name}`;
    return `manifests/${namespace}/${base.replace(/[^A-Za-z0-9._-]/g, "_")}.yaml`;
}

/** Plain words for what a node script does, by script and action. */
const doesText: Record<string, string> = {
    "lvm-reconcile apply": "makes the volume group hold exactly the listed devices: creates PVs/VG, adds new devices, reduces and wipes devices no longer listed (refuses while they hold extents)",
    "lvm-reconcile release": "removes the volume group and wipes its PVs; refuses while logical volumes exist",
    "cephfs-disks apply": "prepares the listed devices for Ceph OSDs after the safety checks",
    "cephfs-disks release": "releases the OSD devices; refuses while OSD data is not drained",
    "iscsi-initiator apply": "writes the iSCSI node records (CHAP from stdin, 0600), logs in to each portal, waits for the LUN",
    "iscsi-initiator release": "logs out of the target and deletes the node records; refuses while an LV on it is active",
    "iscsi-vg apply": "creates or adopts the shared volume group on the LUN",
    "iscsi-vg release": "leaves the shared volume group (never removes it); refuses while it holds volumes",
};

function connectionOf(r: PlannedResource): { host?: string; port?: number; user?: string; proxy?: { host?: string } } {
    const c = (r.policyInputs ?? r.inputs).connection;
    return typeof c === "object" && c !== null ? (c as never) : {};
}

/** The text of a node command phase: a header, then the command as it runs on the node, the bundle by file. */
export function nodeCommandFile(r: PlannedResource, phase: string, command: string, bundles: ReadonlyMap<string, string>): string {
    const words = nodeCommandArgs(command);
    const [script, action] = words.split(" ");
    const sha = /\S+\.sh ([0-9a-f]{64})( |')/.exec(command)?.[1] ?? /\.sh ([0-9a-f]{64})/.exec(command)?.[1];
    const c = connectionOf(r);
    const where = `${c.user ?? "?"}@${c.host ?? "?"}:${c.port ?? 22}${c.proxy?.host ? ` via ${c.proxy.host}` : ""}`;
    const devices = diskCommandDevices(words.split(" "));
    const bundle = sha ? bundles.get(sha) : undefined;
    const header = [
        "#!/bin/sh",
        `# ${r.name}: ${phase}`,
        `# node:    ${nodeOf(r) ?? "(the VG's node)"} (${where})`,
        ...(devices.length ? [`# devices: ${devices.join(" ")}`] : []),
        `# does:    ${doesText[`${script} ${action}`] ?? describe(r)}`,
        `# runs:    ${words}`,
        ...(bundle ? [`# script:  ../${bundle} (sha256 ${sha})`] : []),
        "# The command Pulumi runs over SSH follows: a stub that checks the copied bundle's hash, then runs it.",
        "",
    ];
    return `${header.join("\n")}${command}\n`;
}

/** Every file `--out` writes, with the index last. */
export function outFiles(resources: PlannedResource[], bundleText: (sha256: string, assetPath: string) => string): OutFile[] {
    const files: OutFile[] = [];
    const byPath = new Map<string, string>();
    const add = (file: OutFile, owner: string) => {
        const other = byPath.get(file.path);
        if (other !== undefined) {
            throw new Error(`--out: ${owner} and ${other} would both be written to ${file.path}`);
        }
        byPath.set(file.path, owner);
        files.push(file);
    };
    // Bundles first: node commands name them.
    const bundles = new Map<string, string>();
    for (const r of resources.filter((x) => x.type === "command:remote:CopyToRemote")) {
        const source = r.inputs.source as { path?: string; sha256?: string } | undefined;
        if (source?.sha256 && source.path && !bundles.has(source.sha256)) {
            const file = `node-scripts/${source.sha256.slice(0, 12)}.sh`;
            bundles.set(source.sha256, file);
            add({ path: file, text: bundleText(source.sha256, source.path) }, r.name);
        }
    }
    const index: string[] = [];
    const removal: string[] = [];
    for (const r of resources) {
        const manifest = manifestPath(r);
        if (manifest) {
            add({ path: manifest, text: yaml.dump(toManifest(r), { lineWidth: -1 }) }, r.name);
            index.push(`${manifest}    # ${describe(r)}`);
        }
        if (isNodeCommand(r)) {
            for (const phase of ["create", "update", "delete"] as const) {
                const text = r.inputs[phase];
                if (typeof text === "string") {
                    const file = `node-commands/${r.name}.${phase}.sh`;
                    add({ path: file, text: nodeCommandFile(r, phase, text, bundles), mode: 0o755 }, r.name);
                    if (phase === "delete") {
                        removal.push(`${file}    # delete: ${describeDelete(r)}`);
                    } else if (phase === "create") {
                        index.push(`${file}    # ${describe(r)}`);
                    }
                }
            }
        }
        if (r.type === "command:remote:CopyToRemote") {
            const sha = (r.inputs.source as { sha256?: string } | undefined)?.sha256 ?? "";
            index.push(`${bundles.get(sha) ?? "?"}    # copied to ${nodeOf(r) ?? "the VG's node"} as ${String(r.inputs.remotePath)} (${urnName(r.urn)})`);
        }
    }
    for (const s of scriptSetFiles(resources)) {
        add({ path: s.path, text: s.text }, "script set");
    }
    const prometheus: string[] = [];
    for (const p of prometheusFiles(resources)) {
        add(p, "monitoring");
        prometheus.push(`${p.path}    # ${/-scrape-/.test(p.path) ? "scrape configs of the metrics Services" : "alert rules"}`);
    }
    const text = [
        "# What `pulumi up` applies, in order (a resource comes after what it depends on).",
        "# Node commands run over SSH on the node named in their header; manifests are kubectl-style objects.",
        ...index.map((line, i) => `${String(i + 1).padStart(3, " ")}  ${line}`),
        ...(removal.length ? ["", "# When a storage or node is removed, in reverse order:", ...removal.reverse().map((line) => `     ${line}`)] : []),
        ...(prometheus.length ? ["", "# For Prometheus (not applied; docs/monitoring.md):", ...prometheus.map((line) => `     ${line}`)] : []),
        "",
    ].join("\n");
    add({ path: "index.txt", text }, "index");
    return files;
}

/** Every file and link below `dir` (relative, `/`-separated), not following links; empty directories are not listed. */
function entriesBelow(dir: string, sub = ""): string[] {
    const here = path.join(dir, sub);
    return fs.readdirSync(here, { withFileTypes: true }).flatMap((e) => {
        const rel = sub ? `${sub}/${e.name}` : e.name;
        return e.isDirectory() && !e.isSymbolicLink() ? entriesBelow(dir, rel) : [rel];
    });
}

function readWrittenList(dir: string): Set<string> | undefined {
    const file = path.join(dir, writtenList);
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) {
        return undefined;
    }
    const listed = fs.readFileSync(file, "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
    // Only plain relative paths below DIR count; anything else is not ours to remove.
    return new Set(listed.filter((l) => !path.isAbsolute(l) && !l.split("/").includes("..") && !l.split("/").includes(".")));
}

const shown = (names: string[]) => (names.length > 5 ? `${names.slice(0, 5).join(", ")} and ${names.length - 5} more` : names.join(", "));

/**
 * Checks DIR before the plan runs: missing or empty is fine; otherwise it must hold only what an
 * earlier `--out` wrote (its list), and `--force` must be given to replace that. Makes nothing.
 * Returns the files to remove before writing.
 */
export function checkOutContents(dir: string, force: boolean): string[] {
    if (!fs.existsSync(dir)) {
        return [];
    }
    const entries = entriesBelow(dir);
    if (entries.length === 0) {
        return [];
    }
    const written = readWrittenList(dir);
    if (!written) {
        throw new CliInputError(`--out ${dir}: is not empty and was not written by --out (it holds ${shown(entries)}); give a new or empty folder`);
    }
    const foreign = entries.filter((e) => e !== writtenList && !written.has(e));
    if (foreign.length) {
        throw new CliInputError(`--out ${dir}: holds files an earlier --out did not write: ${shown(foreign)}; move them away (--force removes only what --out wrote)`);
    }
    const previous = entries.filter((e) => written.has(e));
    if (!force) {
        throw new CliInputError(`--out ${dir}: holds the output of an earlier --out (${previous.length} files); give --force to replace it, or a new folder`);
    }
    return previous;
}

/** Removes the earlier output, writes `files` and the list of them. No write goes through a link. */
export function writeOutDir(dir: string, files: OutFile[], previous: string[]): void {
    for (const rel of previous) {
        fs.rmSync(path.join(dir, rel), { force: true });
    }
    fs.mkdirSync(dir, { recursive: true });
    removeEmptyDirs(dir);
    for (const file of files) {
        const target = path.join(dir, file.path);
        refuseLinkedDirs(dir, path.dirname(target));
        fs.mkdirSync(path.dirname(target), { recursive: true });
        replaceFile(target, file.text, file.mode);
    }
    replaceFile(path.join(dir, writtenList), [listHeader, ...files.map((f) => f.path), ""].join("\n"));
}

function removeEmptyDirs(dir: string, sub = ""): void {
    const here = path.join(dir, sub);
    for (const e of fs.readdirSync(here, { withFileTypes: true })) {
        if (e.isDirectory()) {
            const rel = path.join(sub, e.name);
            removeEmptyDirs(dir, rel);
            if (fs.readdirSync(path.join(dir, rel)).length === 0) {
                fs.rmdirSync(path.join(dir, rel));
            }
        }
    }
}

/** Refuses to write below `dir` through a directory that is a symbolic link (planted between runs). */
function refuseLinkedDirs(dir: string, sub: string): void {
    for (let d = sub; d.length > dir.length && d.startsWith(dir); d = path.dirname(d)) {
        if (fs.lstatSync(d, { throwIfNoEntry: false })?.isSymbolicLink()) {
            throw new CliInputError(`--out ${dir}: ${d} is a symbolic link; the plan writes only into real directories, never through a link`);
        }
    }
}

/** A bundle's text from its file asset, checked against the hash the plan recorded. */
export function readBundle(sha256: string, assetPath: string): string {
    const text = fs.readFileSync(assetPath, "utf8");
    if (createHash("sha256").update(text).digest("hex") !== sha256) {
        throw new Error(`--out: script bundle ${assetPath} does not hash to ${sha256}`);
    }
    return text;
}
