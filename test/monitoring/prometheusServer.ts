/**
 * A real Prometheus server (Debian's 2.42, tools.ts) for a tier that has real daemons to scrape:
 * started on 127.0.0.1 at a free port with its storage in the test's directory, fast scrape and
 * evaluation intervals, and the rule files given; queried through its HTTP API. Every wait is
 * bounded and names what it waits for.
 */
import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { freePort } from "../helpers/net";
import { prometheus } from "./tools";

export interface Series {
    metric: Record<string, string>;
    value: [number, string];
}

export interface ActiveAlert {
    labels: Record<string, string>;
    annotations: Record<string, string>;
    state: "pending" | "firing";
    activeAt: string;
    value: string;
}

export interface PrometheusServer {
    readonly url: string;
    /** An instant query; the series it returns. */
    query(expr: string): Promise<Series[]>;
    /** /api/v1/alerts: pending and firing alerts. */
    alerts(): Promise<ActiveAlert[]>;
    /** Polls `check` every second until it returns something other than undefined; fails naming `what` after `ms`. */
    until<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T>;
    /** The server's output so far. */
    log(): string;
    stop(): Promise<void>;
}

export interface PrometheusOptions {
    /** Storage, configuration and rule files live below it. */
    dir: string;
    scrapeConfigs: object[];
    /** Rule file contents, each written to a file of its own. */
    ruleFiles?: string[];
    /** Scrape and evaluation interval. */
    interval?: string;
    /** Scrape interval (and so timeout) where it differs: a slow target's scrape may take longer. */
    scrapeInterval?: string;
}

/**
 * A rule file with every `for:` set to `holds` (a test cannot wait the real minutes; promtool's
 * `test rules` cases, test/monitoring/promtool.test.ts, prove the real durations).
 */
export function withFor(ruleFile: string, holds: string): string {
    const doc = yaml.load(ruleFile) as { groups: { rules: { for?: string }[] }[] };
    for (const g of doc.groups) {
        for (const r of g.rules) {
            if (r.for !== undefined) r.for = holds;
        }
    }
    return yaml.dump(doc, { lineWidth: -1, noRefs: true });
}

/**
 * The metric names a PromQL expression reads: its identifiers less label matchers, ranges, the
 * label lists of by/without/on/ignoring/group_left/group_right, function names and keywords.
 */
export function metricNames(expr: string): string[] {
    const bare = expr
        .replace(/"(?:[^"\\]|\\.)*"/g, '""')
        .replace(/\{[^}]*\}/g, " ")
        .replace(/\[[^\]]*\]/g, " ")
        .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
    const keywords = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan"]);
    const names = [...bare.matchAll(/(?<![a-zA-Z0-9_:])[a-zA-Z_:][a-zA-Z0-9_:]*(?![a-zA-Z0-9_:])(?!\s*\()/g)].map((m) => m[0]);
    return [...new Set(names.filter((n) => !keywords.has(n.toLowerCase())))];
}

async function getJson(url: string): Promise<any> {
    const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const body = (await r.json()) as { status: string; data: any };
    assert.equal(body.status, "success", `${url}: ${JSON.stringify(body)}`);
    return body.data;
}

export async function startPrometheus(o: PrometheusOptions): Promise<PrometheusServer> {
    const interval = o.interval ?? "2s";
    fs.mkdirSync(o.dir, { recursive: true });
    const ruleFiles = (o.ruleFiles ?? []).map((text, i) => {
        const f = path.join(o.dir, `rules-${i}.yaml`);
        fs.writeFileSync(f, text);
        return f;
    });
    const config = path.join(o.dir, "prometheus.yml");
    fs.writeFileSync(config, yaml.dump({ global: { scrape_interval: o.scrapeInterval ?? interval, evaluation_interval: interval }, rule_files: ruleFiles, scrape_configs: o.scrapeConfigs }, { lineWidth: -1, noRefs: true }));
    let out = "";
    let proc: ChildProcess | undefined;
    let url = "";
    // The port is picked free, then bound by Prometheus: retry if another run took it meanwhile.
    for (let attempt = 1; attempt <= 3; attempt++) {
        const port = await freePort();
        url = `http://127.0.0.1:${port}`;
        out = "";
        proc = spawn(prometheus(), [`--config.file=${config}`, `--storage.tsdb.path=${path.join(o.dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"], { stdio: ["ignore", "pipe", "pipe"] });
        proc.stdout!.on("data", (d) => (out += d));
        proc.stderr!.on("data", (d) => (out += d));
        const exited = new Promise<void>((r) => proc!.once("exit", () => r()));
        const deadline = Date.now() + 60_000;
        let ready = false;
        while (Date.now() < deadline && proc.exitCode === null) {
            ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
            if (ready) break;
            await Promise.race([exited, new Promise((r) => setTimeout(r, 500))]);
        }
        if (ready) break;
        const inUse = /address already in use/.test(out);
        proc.kill("SIGKILL");
        assert.ok(inUse && attempt < 3, `Prometheus ready at ${url}: not within 60 s\n${out.slice(-4000)}`);
    }
    const p = proc!;
    const server: PrometheusServer = {
        url,
        query: async (expr) => (await getJson(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
        alerts: async () => (await getJson(`${url}/api/v1/alerts`)).alerts,
        async until(what, ms, check) {
            const deadline = Date.now() + ms;
            for (;;) {
                const found = await check();
                if (found !== undefined) return found;
                assert.ok(Date.now() < deadline, `${what}: not within ${ms} ms\n--- alerts: ${JSON.stringify(await server.alerts().catch((e) => String(e)))}\n--- Prometheus:\n${out.slice(-3000)}`);
                await new Promise((r) => setTimeout(r, 1000));
            }
        },
        log: () => out,
        stop: () =>
            new Promise<void>((resolve) => {
                if (p.exitCode !== null || p.signalCode !== null) return resolve();
                const kill = setTimeout(() => p.kill("SIGKILL"), 10_000);
                p.once("exit", () => {
                    clearTimeout(kill);
                    resolve();
                });
                p.kill("SIGTERM");
            }),
    };
    return server;
}
