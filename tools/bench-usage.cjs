// Preloaded by `npm run bench` into each plan process: on exit, writes the process's peak RSS
// to the file named by ZCLOUD_BENCH_USAGE_FILE (the parent cannot read a child's rusage).
const fs = require("fs");
const file = process.env.ZCLOUD_BENCH_USAGE_FILE;
if (file) {
    process.on("exit", () => fs.writeFileSync(file, JSON.stringify({ maxRssKiB: process.resourceUsage().maxRSS })));
}
