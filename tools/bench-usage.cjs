// Preloaded by `npm run bench` into each plan process (through NODE_OPTIONS, so the `--diff`
// base's worker too): on exit, writes the process's peak RSS and CPU time to <pid>.json in the
// directory named by ZCLOUD_BENCH_USAGE_DIR (the parent cannot read a child's rusage).
const fs = require("fs");
const path = require("path");
const dir = process.env.ZCLOUD_BENCH_USAGE_DIR;
if (dir) {
    process.on("exit", () => {
        const u = process.resourceUsage();
        fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify({ maxRssKiB: u.maxRSS, cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6 }));
    });
}
