// Preloaded (--require) into every plan process the plan forks (tools/plan/runner.ts) instead of
// `--import tsx`: TypeScript through tsx's CommonJS hook, but the packages under node_modules (the
// SDK and providers: most of a plan process's start) through Node's own loader. tsx's hook checks
// and reworks every file it loads: it doubled the SDK's load time (1.35 s CPU and 195 MiB to load
// @pulumi/pulumi, kubernetes and command, against 0.6 s and 126 MiB) in each piece of a big plan.
// Packages there are plain CommonJS that Node loads as they are, or they would not load anywhere.
const Module = require("module");
const path = require("path");

const nodeLoader = Module._extensions[".js"];
require("tsx/cjs/api").register();
const tsxLoader = Module._extensions[".js"];
const inNodeModules = `${path.sep}node_modules${path.sep}`;

Module._extensions[".js"] = function loadJs(module, filename) {
    return (filename.includes(inNodeModules) ? nodeLoader : tsxLoader).call(this, module, filename);
};
