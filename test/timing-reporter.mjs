// A node:test reporter beside `spec`: per test file, the sum of its top-level tests' durations
// (hooks included, the file's process start-up not), the slowest files one line each; last, a
// line "counts <passed> <failed> <skipped>" of the tests (not suites) that test/run adds up into
// its closing line. test/run prints the rest after each run of tiers.
import * as path from "node:path";

export default async function* timingReporter(source) {
    const files = new Map();
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for await (const event of source) {
        const data = event.data;
        if (event.type !== "test:pass" && event.type !== "test:fail") continue;
        if (data.details?.type === "test") {
            if (data.skip || data.todo) counts.skipped++;
            else if (event.type === "test:pass") counts.passed++;
            else counts.failed++;
        }
        if (data.file && data.nesting === 0) {
            files.set(data.file, (files.get(data.file) ?? 0) + (data.details?.duration_ms ?? 0));
        }
    }
    const rows = [...files].map(([file, ms]) => ({ file: path.relative(process.cwd(), file), s: ms / 1000 })).sort((a, b) => b.s - a.s);
    yield `slowest test files (their top-level tests' durations, s):\n`;
    for (const r of rows.slice(0, 12)) {
        yield `  ${r.s.toFixed(1).padStart(7)}  ${r.file}\n`;
    }
    yield `  ${rows.length} files, ${rows.reduce((sum, r) => sum + r.s, 0).toFixed(1)} s of top-level tests in all\n`;
    yield `counts ${counts.passed} ${counts.failed} ${counts.skipped}\n`;
}
