/**
 * The Prometheus programs the monitoring tier runs: Debian's prometheus package, unpacked by
 * test/monitoring/ensure-prometheus.sh into the cache outside the clone (no service installed or
 * started on the host). A missing program fails the tier, naming the command that provides it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const prometheusCache = process.env.ZCLOUD_PROMETHEUS_DIR ?? path.join(os.homedir(), ".cache", "zcloud-storage", "prometheus");

function program(name: string): string {
    const file = path.join(prometheusCache, "current", "usr", "bin", name);
    if (!fs.existsSync(file)) {
        throw new Error(`${file} is missing: run bash test/monitoring/ensure-prometheus.sh (test/setup does)`);
    }
    return file;
}

export const promtool = () => program("promtool");
export const prometheus = () => program("prometheus");
