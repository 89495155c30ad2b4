// The Prometheus Operator CRD check (components/monitoring/operatorCrds.ts): what it asks kubectl,
// how it reads the answers, and the one line a stack without the CRDs stops with. The engine tier
// runs the same check with the real kubectl against a real API server.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { describe, test } from "node:test";
import { Kubectl, checkOperatorCrds, missingCrdsMessage, operatorCrds, uncheckedCrdsMessage } from "../../components/monitoring/operatorCrds";

const found = (names: string[]): Kubectl => () => ({ status: 0, stdout: names.map((n) => `customresourcedefinition.apiextensions.k8s.io/${n}\n`).join(""), stderr: "" });

describe("Prometheus Operator CRD check", () => {
    test("asks for both CRDs with the stack's context and kubeconfig path; both there: nothing missing", () => {
        const calls: string[][] = [];
        const kubectl: Kubectl = (args) => (calls.push(args), found(operatorCrds)(args));
        assert.deepEqual(checkOperatorCrds({ context: "prod-admin", kubeconfigPath: "/etc/kube/config" }, kubectl), { missing: [] });
        assert.deepEqual(calls, [["--context", "prod-admin", "--kubeconfig", "/etc/kube/config", "get", "customresourcedefinitions", ...operatorCrds, "-o", "name", "--ignore-not-found"]]);
    });

    test("a missing CRD is named; the message says what to do", () => {
        assert.deepEqual(checkOperatorCrds({}, found(["servicemonitors.monitoring.coreos.com"])), { missing: ["prometheusrules.monitoring.coreos.com"] });
        assert.deepEqual(checkOperatorCrds({}, found([])), { missing: operatorCrds });
        assert.equal(
            missingCrdsMessage(operatorCrds),
            "the cluster has no servicemonitors.monitoring.coreos.com and no prometheusrules.monitoring.coreos.com: install the Prometheus Operator's CRDs first (kube-prometheus-stack or kube-prometheus bring them), or set prometheusOperator: false to get a rule file and scrape configs instead (docs/monitoring.md)",
        );
    });

    test("a kubeconfig's content goes to kubectl as a 0600 file that is gone afterwards, never in its arguments", () => {
        let seen: { file: string; mode: number; text: string } | undefined;
        const kubectl: Kubectl = (args) => {
            const file = args[args.indexOf("--kubeconfig") + 1];
            seen = { file, mode: fs.statSync(file).mode & 0o777, text: fs.readFileSync(file, "utf8") };
            assert.ok(!args.some((a) => a.includes("secret-token")));
            return found(operatorCrds)(args);
        };
        checkOperatorCrds({ kubeconfigContent: "apiVersion: v1\nusers: [{ name: u, user: { token: secret-token } }]\n" }, kubectl);
        assert.equal(seen!.mode, 0o600);
        assert.match(seen!.text, /secret-token/);
        assert.equal(fs.existsSync(seen!.file), false);
    });

    test("kubectl cannot answer: unknown, with its first line (the program only warns)", () => {
        const r = checkOperatorCrds({ context: "gone" }, () => ({ status: 1, stdout: "", stderr: 'error: context "gone" does not exist\nmore\n' }));
        assert.deepEqual(r, { unknown: 'error: context "gone" does not exist' });
        assert.equal(
            uncheckedCrdsMessage((r as { unknown: string }).unknown),
            'monitoring: could not check the cluster for the Prometheus Operator\'s CRDs (error: context "gone" does not exist); if they are missing, the first ServiceMonitor fails',
        );
    });
});
