import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as yaml from "js-yaml";
import { parseStackConfig } from "../../components/config/parse";

const project = yaml.load(fs.readFileSync(path.join(__dirname, "..", "..", "Pulumi.yaml"), "utf8")) as {
    name: string;
    stackConfigDir: string;
    config?: Record<string, { default?: unknown; value?: unknown }>;
};

test("Pulumi.yaml declares no required config: the CLI demands every project key without default or value", () => {
    // The Pulumi CLI's rule (ValidateStackConfigAndApplyProjectConfig): a key of the project's own
    // namespace that a stack lacks must have a default or a value, or the stack is refused.
    const required = Object.entries(project.config ?? {})
        .filter(([key]) => !key.includes(":") || key.startsWith(`${project.name}:`))
        .filter(([, decl]) => decl === null || typeof decl !== "object" || (decl.default === undefined && decl.value === undefined))
        .map(([key]) => key);
    assert.deepEqual(required, []);
    assert.equal(project.stackConfigDir, "stacks");
});

test("the defaults Pulumi.yaml declares are the program's own defaults", () => {
    const withDefaults = Object.fromEntries(Object.entries(project.config ?? {}).map(([key, decl]) => [key.slice(key.indexOf(":") + 1), decl.default]));
    const applied = parseStackConfig(withDefaults);
    const absent = parseStackConfig({});
    assert.deepEqual(applied.model, absent.model);
    assert.deepEqual(applied.errors, []);
});
