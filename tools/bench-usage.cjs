// Preloaded by `npm run bench` into each plan process: on exit, writes the process's peak RSS and
// CPU time to the file named by ZCLOUD_BENCH_USAGE_FILE (the parent cannot read a child's rusage).
const fs = require("fs");
const file = process.env.ZCLOUD_BENCH_USAGE_FILE;
if (file) {
    process.on("exit", () => {
        const u = process.resourceUsage();
        fs.writeFileSync(file, JSON.stringify({ maxRssKiB: u.maxRSS, cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6 }));
    });
}
