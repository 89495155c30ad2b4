import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/**
 * Monitoring with the Prometheus Operator needs its CRDs in the cluster. Without them the
 * Kubernetes provider fails on the first ServiceMonitor with a long error; this check, run where
 * `pulumi preview`/`up` runs (kubectl, with the stack's kubernetes:context/kubeconfig, as the node
 * label commands use it), stops the program before any resource with one line that says what to do.
 */

/** The CRDs the monitoring objects need (kind -> CRD name). */
export const operatorCrds = ["servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"];

/** Set by the offline plan (`npm run plan`), which has no cluster to ask. */
export const offlinePlanEnv = "ZCLOUD_OFFLINE_PLAN";

export interface KubectlTarget {
    context?: string;
    kubeconfigPath?: string;
    /** kubeconfig content (a secret): written to a 0600 temp file for kubectl, removed after. */
    kubeconfigContent?: string;
}

export type CrdCheck = { missing: string[] } | { unknown: string };

export type Kubectl = (args: string[]) => { status: number; stdout: string; stderr: string };

/** kubectl as a child process, bounded; never throws. */
export const runKubectl: Kubectl = (args) => {
    try {
        const stdout = execFileSync("kubectl", args, { encoding: "utf8", timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
        return { status: 0, stdout, stderr: "" };
    } catch (e) {
        const err = e as { status?: number | null; stdout?: string; stderr?: string; message: string };
        return { status: err.status ?? 127, stdout: err.stdout ?? "", stderr: err.stderr || err.message };
    }
};

/** Which of the CRDs the cluster lacks; `unknown` with kubectl's first line when it cannot tell. */
export function checkOperatorCrds(target: KubectlTarget, kubectl: Kubectl = runKubectl): CrdCheck {
    const dir = target.kubeconfigContent !== undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-kube-")) : undefined;
    try {
        const kubeconfig = dir ? path.join(dir, "config") : target.kubeconfigPath;
        if (dir) {
            fs.writeFileSync(kubeconfig!, target.kubeconfigContent!, { mode: 0o600 });
        }
        const args = [...(target.context ? ["--context", target.context] : []), ...(kubeconfig ? ["--kubeconfig", kubeconfig] : []), "get", "customresourcedefinitions", ...operatorCrds, "-o", "name", "--ignore-not-found"];
        const r = kubectl(args);
        if (r.status !== 0) {
            return { unknown: (r.stderr.trim().split("\n")[0] ?? "").slice(0, 300) || `kubectl exited ${r.status}` };
        }
        const found = new Set(r.stdout.split("\n").map((l) => l.trim().replace(/^customresourcedefinition\.apiextensions\.k8s\.io\//, "")));
        return { missing: operatorCrds.filter((c) => !found.has(c)) };
    } finally {
        if (dir) {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }
}

export function missingCrdsMessage(missing: string[]): string {
    return `the cluster has no ${missing.join(" and no ")}: install the Prometheus Operator's CRDs first (kube-prometheus-stack or kube-prometheus bring them), or set prometheusOperator: false to get a rule file and scrape configs instead (docs/monitoring.md)`;
}

export function uncheckedCrdsMessage(reason: string): string {
    return `monitoring: could not check the cluster for the Prometheus Operator's CRDs (${reason}); if they are missing, the first ServiceMonitor fails`;
}
