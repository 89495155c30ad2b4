/**
 * One Node minimum everywhere: package.json `engines` is the least Node that every installed
 * package (package-lock.json, @pulumi/pulumi and its dependencies included) accepts, @types/node
 * is that major, the Node the tiers run under (test/engine/build-tools.sh, picked by test/run)
 * satisfies it, and so does the Node running this test.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import semver from "semver";

const root = resolve(__dirname, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));

type LockPackages = Record<string, { engines?: { node?: string } | string[] }>;

/** Package path -> its `engines.node` range, for every locked package but the project itself. */
function nodeRanges(packages: LockPackages): Map<string, string> {
    const ranges = new Map<string, string>();
    for (const [path, entry] of Object.entries(packages)) {
        const engines = entry.engines;
        if (path !== "" && engines && !Array.isArray(engines) && engines.node) {
            ranges.set(path, engines.node);
        }
    }
    return ranges;
}

/**
 * The least version every range accepts: it is the lower bound of one of the ranges' comparator
 * sets (or 0.0.0), so only those candidates are tried. Undefined when none satisfies them all.
 */
function leastCommonVersion(ranges: string[]): string | undefined {
    const candidates = new Set(["0.0.0"]);
    for (const range of ranges) {
        for (const set of new semver.Range(range).set) {
            const least = semver.minVersion(set.map((c) => c.value).join(" "));
            if (least) candidates.add(least.version);
        }
    }
    return [...candidates].sort(semver.compare).find((v) => ranges.every((r) => semver.satisfies(v, r)));
}

function pinnedNode(): string {
    const script = readFileSync(join(root, "test/engine/build-tools.sh"), "utf8");
    const found = /^NODE_VERSION=(\S+)/m.exec(script);
    assert.ok(found, "test/engine/build-tools.sh sets no NODE_VERSION");
    return found[1];
}

describe("leastCommonVersion", () => {
    test("takes the lower bound that every range accepts", () => {
        assert.equal(leastCommonVersion([">=22", "^20.17.0 || >=22.9.0", ">= 4.9.1"]), "22.9.0");
        assert.equal(leastCommonVersion([">=18", "^18.19.0 || >=20.6.0"]), "18.19.0");
        assert.equal(leastCommonVersion([]), "0.0.0");
    });
    test("is undefined when the ranges exclude each other", () => {
        assert.equal(leastCommonVersion(["<20", ">=22"]), undefined);
    });
});

describe("Node version", () => {
    const engines: string = pkg.engines.node;
    const minimum = semver.minVersion(engines)!.version;

    test("engines.node is the least Node every locked package accepts", () => {
        const ranges = nodeRanges(lock.packages);
        assert.ok(ranges.get("node_modules/@pulumi/pulumi"), "package-lock.json has no engines for @pulumi/pulumi");
        const least = leastCommonVersion([...ranges.values()]);
        const excluding = [...ranges].filter(([, r]) => !semver.satisfies(minimum, r)).map(([p, r]) => `${p} ${r}`);
        assert.deepEqual(excluding, [], `engines.node ${engines} allows Node ${minimum}, which these packages refuse`);
        assert.equal(engines, `>=${least}`);
        assert.equal(lock.packages[""].engines.node, engines, "package-lock.json is stale: run npm install");
    });

    test("@types/node is the minimum's major", () => {
        const types: string = pkg.devDependencies["@types/node"];
        assert.equal(semver.major(types), semver.major(minimum), `@types/node ${types} for engines ${engines}`);
    });

    test("the Node the tiers run under satisfies engines", () => {
        assert.ok(semver.satisfies(pinnedNode(), engines), `test/engine/build-tools.sh NODE_VERSION ${pinnedNode()} does not satisfy ${engines}`);
    });

    test("the example CI pipelines run the Node major the tiers run under", () => {
        const examples = ["examples/ci/github/zcloud-storage.yml", "examples/ci/gitlab/zcloud-storage.gitlab-ci.yml"];
        const majors = examples.flatMap((file) =>
            [...readFileSync(join(root, file), "utf8").matchAll(/(?:node-version: |image: node:)(\d+)/g)].map((m) => `${file} ${m[1]}`),
        );
        assert.ok(majors.length >= 3, `no Node versions found in ${examples.join(", ")}`);
        const major = semver.major(pinnedNode());
        assert.deepEqual(majors.filter((m) => Number(m.split(" ")[1]) !== major), [], `the examples should run Node ${major}`);
    });

    test("this test runs under a Node that satisfies engines", () => {
        assert.ok(
            semver.satisfies(process.versions.node, engines),
            `running under Node ${process.versions.node}, engines wants ${engines}: run the tests through bash test/run (it uses the pinned Node ${pinnedNode()})`,
        );
    });
});
