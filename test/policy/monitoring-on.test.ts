import assert from "node:assert/strict";
import { describe, it } from "node:test";

import fc from "fast-check";

import {
    checkMonitoringOn,
    evaluatePolicies,
    PackConfigError,
    PlannedResource,
    productionPattern,
    resolvePackConfig,
    stackOfUrn,
} from "../../policy/policies";
import { DEFAULT_PRODUCTION_STACKS } from "../../policy/model";
import { configMap, storageClass } from "./fixtures";

/** The fixture resource as the stack `stack` plans it. */
function inStack(r: PlannedResource, stack: string): PlannedResource {
    return { ...r, urn: r.urn.replace(/^urn:pulumi:dev::/, `urn:pulumi:${stack}::`) };
}

function prometheusRule(name: string): PlannedResource {
    return {
        type: "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
        name,
        urn: `urn:pulumi:dev::zcloud-storage::zcloud:storage:Monitoring$kubernetes:monitoring.coreos.com/v1:PrometheusRule::${name}`,
        props: { apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { name, namespace: "zcloud-storage" } },
    };
}

/** A ConfigMap with rule files, as `prometheusOperator: false` deploys it (or another one's, by labels). */
function rulesConfigMap(name: string, labels: Record<string, string>): PlannedResource {
    const cm = configMap(name, { [`${name}.rules.yaml`]: "groups: []\n" });
    (cm.props!.metadata as Record<string, unknown>).labels = labels;
    return cm;
}

const OURS = { "app.kubernetes.io/managed-by": "zcloud-storage", "app.kubernetes.io/part-of": "zcloud-storage", "app.kubernetes.io/component": "alerts" };
const params = { productionStacks: DEFAULT_PRODUCTION_STACKS };
const classes = (stack: string) => [inStack(storageClass("local-fast", true), stack), inStack(storageClass("shared-fs", false), stack)];

function message(stack: string, pattern: string): string {
    return (
        `Stack '${stack}' deploys StorageClasses 'local-fast' and 'shared-fs' with monitoring off: no alert tells anyone when a volume group or ` +
        "thin pool fills, a Ceph mon leaves the quorum, an OSD goes down or a driver pod stops. Turn it on with zcloud-storage:monitoring " +
        "in the stack config (docs/monitoring.md). The pack counts this stack as production because its name matches " +
        `'${pattern}' in this policy's productionStacks parameter.`
    );
}

describe("storage-monitoring-on", () => {
    it("reports a production stack's storages without alert rules, once, for the stack", () => {
        assert.deepEqual(checkMonitoringOn(classes("prod"), params), [{ message: message("prod", "prod") }]);
        assert.deepEqual(checkMonitoringOn(classes("prod-pool-a"), params), [{ message: message("prod-pool-a", "prod-*") }]);
        assert.deepEqual(checkMonitoringOn(classes("eu-prod"), params), [{ message: message("eu-prod", "*-prod") }]);
        assert.deepEqual(checkMonitoringOn(classes("production"), params), [{ message: message("production", "production") }]);
        const one = checkMonitoringOn([inStack(storageClass("nfs", undefined), "prod")], params);
        assert.match(one[0].message, /^Stack 'prod' deploys StorageClass 'nfs' with monitoring off: /);
    });

    it("passes a production stack with the program's alert rules, with or without the Prometheus Operator", () => {
        assert.deepEqual(checkMonitoringOn([...classes("prod"), inStack(prometheusRule("zcloud-storage-local-fast"), "prod")], params), []);
        assert.deepEqual(checkMonitoringOn([...classes("prod"), inStack(rulesConfigMap("zcloud-storage-local-fast-prometheus", OURS), "prod")], params), []);
    });

    it("does not count a ConfigMap someone else labelled alerts", () => {
        const foreign = rulesConfigMap("alerts", { "app.kubernetes.io/component": "alerts" });
        assert.equal(checkMonitoringOn([...classes("prod"), inStack(foreign, "prod")], params).length, 1);
    });

    it("leaves other stacks, and stacks without StorageClasses, alone", () => {
        for (const stack of ["dev", "staging", "preprod", "prod2", "productions", "my-prod-test"]) {
            assert.deepEqual(checkMonitoringOn(classes(stack), params), [], stack);
        }
        assert.deepEqual(checkMonitoringOn([inStack(configMap("x"), "prod")], params), []);
        assert.deepEqual(checkMonitoringOn([], params), []);
    });

    it("is advisory by default; all: mandatory makes it fail production stacks only", () => {
        const levels = (stack: string, config = {}) =>
            evaluatePolicies(classes(stack), config)
                .filter((v) => v.policy === "storage-monitoring-on")
                .map((v) => v.enforcementLevel);
        assert.deepEqual(levels("prod"), ["advisory"]);
        assert.deepEqual(levels("prod", { all: "mandatory" }), ["mandatory"]);
        assert.deepEqual(levels("dev", { all: "mandatory" }), []);
        assert.deepEqual(levels("prod", { all: "mandatory", "storage-monitoring-on": "advisory" }), ["advisory"]);
        assert.deepEqual(levels("prod", { "storage-monitoring-on": "disabled" }), []);
    });

    it("takes the production stacks from its parameter", () => {
        const config = { "storage-monitoring-on": { productionStacks: ["live", "live-*"] } };
        assert.deepEqual(resolvePackConfig(config).params.productionStacks, ["live", "live-*"]);
        assert.equal(evaluatePolicies(classes("live-eu"), config).filter((v) => v.policy === "storage-monitoring-on").length, 1);
        assert.equal(evaluatePolicies(classes("prod"), config).filter((v) => v.policy === "storage-monitoring-on").length, 0);
        const none = { "storage-monitoring-on": { productionStacks: [] } };
        assert.equal(evaluatePolicies(classes("prod"), none).filter((v) => v.policy === "storage-monitoring-on").length, 0);
    });

    it("refuses a productionStacks parameter that is not a list of names or patterns", () => {
        const problem = (value: unknown) => {
            try {
                resolvePackConfig({ "storage-monitoring-on": { productionStacks: value } } as never);
                return "accepted";
            } catch (e) {
                assert.ok(e instanceof PackConfigError);
                return e.problems.join("\n");
            }
        };
        assert.equal(problem("prod"), "storage-monitoring-on.productionStacks: must be a list of stack names or patterns (`*` for any characters)");
        assert.equal(
            problem(["prod", "prod/eu", "", 3]),
            `storage-monitoring-on.productionStacks: "prod/eu", "", 3: not a stack name or pattern (letters, digits, '-', '_', '.', and '*' for any characters)`,
        );
        assert.equal(
            problem(["a\u001b[31m"]),
            `storage-monitoring-on.productionStacks: "a\\u001b[31m": not a stack name or pattern (letters, digits, '-', '_', '.', and '*' for any characters)`,
        );
    });

    it("reads the stack from a URN", () => {
        assert.equal(stackOfUrn("urn:pulumi:prod-eu::zcloud-storage::kubernetes:core/v1:ConfigMap::x"), "prod-eu");
        assert.equal(stackOfUrn("urn:other"), undefined);
    });
});

describe("productionPattern", () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/);

    it("matches a pattern without '*' to that name only ('.' is no wildcard)", () => {
        fc.assert(fc.property(name, name, (a, b) => (productionPattern(a, [b]) === b) === (a === b)));
        assert.equal(productionPattern("prodx", ["prod."]), undefined);
    });

    it("matches 'p*s' to every name that starts with p and ends with s", () => {
        fc.assert(
            fc.property(name, name, name, (p, mid, s) => {
                assert.equal(productionPattern(`${p}${mid}${s}`, [`${p}*${s}`]), `${p}*${s}`);
                assert.equal(productionPattern(`${p}${s}`, [`${p}*${s}`]), `${p}*${s}`);
            }),
        );
    });

    it("answers the first matching pattern", () => {
        assert.equal(productionPattern("prod-prod", ["x", "*-prod", "prod-*"]), "*-prod");
    });
});
