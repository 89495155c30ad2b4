/**
 * Layers point down: the program's import graph (relative imports of the TypeScript sources, read
 * with TypeScript's own pre-processor) has no cycle, the config contract imports nothing from a
 * storage type's folder, and components import nothing from the tools above them.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, test } from "node:test";
import ts from "typescript";

const root = resolve(__dirname, "../..");
const sourceDirs = ["components", "tools", "policy"];
const storageFolders = ["cephfs", "lvm", "nfs", "iscsi"];

function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((entry) => {
        const path = join(dir, entry);
        if (entry === "node_modules") return [];
        if (statSync(path).isDirectory()) return sources(path);
        return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
    });
}

/** Repo-relative file -> the repo-relative files it imports (relative specifiers only). */
function importGraph(): Map<string, string[]> {
    const files = [join(root, "index.ts"), ...sourceDirs.flatMap((d) => sources(join(root, d)))];
    const graph = new Map<string, string[]>();
    for (const file of files) {
        const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
        const targets = importedFiles
            .map((i) => i.fileName)
            .filter((spec) => spec.startsWith("."))
            .map((spec) => {
                const base = resolve(dirname(file), spec);
                const found = [`${base}.ts`, join(base, "index.ts")].find((p) => existsSync(p));
                assert.ok(found, `${relative(root, file)} imports ${spec}, which resolves to no .ts file`);
                return relative(root, found);
            });
        graph.set(relative(root, file), targets);
    }
    return graph;
}

/** Every cycle found by a depth-first walk, each as `a -> b -> a`. */
function importCycles(graph: Map<string, string[]>): string[] {
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const cycles: string[] = [];
    const visit = (file: string) => {
        state.set(file, "open");
        path.push(file);
        for (const next of graph.get(file) ?? []) {
            if (state.get(next) === "open") cycles.push([...path.slice(path.indexOf(next)), next].join(" -> "));
            else if (!state.has(next)) visit(next);
        }
        path.pop();
        state.set(file, "done");
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    return cycles;
}

describe("import layers", () => {
    const graph = importGraph();

    test("the walk finds a cycle when there is one", () => {
        const cyclic = new Map([
            ["a.ts", ["b.ts"]],
            ["b.ts", ["c.ts"]],
            ["c.ts", ["a.ts"]],
        ]);
        assert.deepEqual(importCycles(cyclic), ["a.ts -> b.ts -> c.ts -> a.ts"]);
    });

    test("no import cycles in components, tools and policy", () => {
        assert.deepEqual(importCycles(graph), []);
    });

    test("the config contract and monitoring's builders import nothing from a storage type's folder (each type builds its own monitoring from them)", () => {
        const offending = [...graph]
            .filter(([file]) => file.startsWith("components/config/") || file.startsWith("components/monitoring/"))
            .flatMap(([file, deps]) => deps.filter((d) => storageFolders.some((s) => d.startsWith(`components/${s}/`))).map((d) => `${file} -> ${d}`));
        assert.deepEqual(offending, []);
    });

    test("components import nothing from tools", () => {
        const offending = [...graph]
            .filter(([file]) => file.startsWith("components/"))
            .flatMap(([file, deps]) => deps.filter((d) => d.startsWith("tools/")).map((d) => `${file} -> ${d}`));
        assert.deepEqual(offending, []);
    });
});
