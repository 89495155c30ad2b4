// The package.json `npm pack` ships (tools/pack-manifest.cjs): the repository's without `private`
// and without the scripts that run files the tarball lacks.
import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";

const { packedManifest, filesOfScript } = require(path.resolve(__dirname, "../../tools/pack-manifest.cjs")) as {
    packedManifest: (manifest: Record<string, unknown>, exists?: (file: string) => boolean) => Record<string, unknown>;
    filesOfScript: (command: string) => string[];
};

test("the files a script names: words with a / or a file extension", () => {
    assert.deepEqual(filesOfScript("tsc --noEmit -p tsconfig.json"), ["tsconfig.json"]);
    assert.deepEqual(filesOfScript("bash tools/build-lib.sh && node tools/pack-manifest.cjs write"), ["tools/build-lib.sh", "tools/pack-manifest.cjs"]);
    assert.deepEqual(filesOfScript("bash test/run all"), ["test/run"]);
    assert.deepEqual(filesOfScript("tsx tools/plan.ts"), ["tools/plan.ts"]);
    assert.deepEqual(filesOfScript("echo hi"), []);
});

test("the repository's package.json ships without private and without a script", () => {
    const manifest = require(path.resolve(__dirname, "../../package.json")) as Record<string, unknown>;
    const packed = packedManifest(manifest);
    assert.equal("private" in packed, false);
    assert.equal("scripts" in packed, false);
    const { private: _p, scripts: _s, ...rest } = manifest;
    assert.deepEqual(packed, rest);
});

test("a script whose files are all in the tarball stays; one naming a file outside it or missing goes", () => {
    const manifest = {
        name: "x",
        private: true,
        files: ["dist"],
        scripts: { check: "node dist/check.js", gone: "node dist/gone.js", build: "tsc -p tsconfig.json", hello: "echo hello" },
    };
    const packed = packedManifest(manifest, (f) => f !== "dist/gone.js");
    assert.deepEqual(packed, { name: "x", files: ["dist"], scripts: { check: "node dist/check.js", hello: "echo hello" } });
});
