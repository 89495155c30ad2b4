/**
 * A planned local command (a CephFS drain's or mon leave's delete, a gate's create) run against the
 * tier's cluster as the command provider runs it where `pulumi up` runs.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { CephTestCluster, RunResult } from "./cluster";
import { CephPlan } from "./planned";

/**
 * Runs a planned local command string as the command provider would (`/bin/sh -c <command>`,
 * its environment) with fake-kubectl.sh as kubectl, which serves the planned script-set
 * ConfigMaps of `from` and `exec`s in the test cluster with the admin container's env;
 * `prepare` fills its pods/ and nodes/ directories. Returns the result and the kubectl argv it made.
 */
export async function runPlannedLocalCommand(
    c: CephTestCluster,
    command: string,
    environment: Record<string, string> | undefined,
    from: CephPlan,
    adminPod: string,
    prepare: (dir: string) => void = () => undefined,
): Promise<{ r: RunResult; calls: string[][] }> {
    fs.mkdirSync(path.join(c.tmp, "scratch"), { recursive: true });
    const dir = fs.mkdtempSync(path.join(c.tmp, "scratch", "kubectl-"));
    fs.symlinkSync(path.join(__dirname, "fake-kubectl.sh"), path.join(dir, "kubectl"));
    fs.mkdirSync(path.join(dir, "pods"));
    fs.mkdirSync(path.join(dir, "nodes"));
    // the script-set ConfigMaps as the API server holds them once `pulumi up` made them
    for (const [name, data] of Object.entries(from.scriptSets)) {
        fs.mkdirSync(path.join(dir, "configmaps", name), { recursive: true });
        for (const [key, text] of Object.entries(data)) fs.writeFileSync(path.join(dir, "configmaps", name, key), text);
    }
    prepare(dir);
    const adminEnv = c.env();
    fs.writeFileSync(path.join(dir, "admin.env"), Object.entries(adminEnv).map(([k, v]) => `${k}=${v}`).join("\n") + "\n");
    const log = path.join(dir, "calls");
    fs.writeFileSync(log, "");
    const started = Date.now();
    const r = await new Promise<RunResult>((resolve, reject) => {
        const child = spawn("/bin/sh", ["-c", command], {
            env: {
                PATH: `${dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
                ...(environment ?? {}),
                ZCLOUD_TEST_KUBECTL_LOG: log,
                ZCLOUD_TEST_ADMIN_POD: adminPod,
                ZCLOUD_TEST_ADMIN_ENV: path.join(dir, "admin.env"),
                ZCLOUD_TEST_NSPID: String(c.nsTarget),
                ZCLOUD_TEST_PODS: path.join(dir, "pods"),
                ZCLOUD_TEST_NODES: path.join(dir, "nodes"),
                ZCLOUD_TEST_CONFIGMAPS: path.join(dir, "configmaps"),
            },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += String(d)));
        child.stderr.on("data", (d) => (stderr += String(d)));
        const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
        child.on("error", reject);
        child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, stdout, stderr, ms: Date.now() - started });
        });
    });
    c.transcript.push(r.stdout, r.stderr);
    const words = fs.readFileSync(log, "utf8").split("\0");
    const calls: string[][] = [];
    for (let i = 0; i < words.length - 1; ) {
        const n = Number(words[i]);
        calls.push(words.slice(i + 1, i + 1 + n));
        i += 1 + n;
    }
    return { r, calls };
}
