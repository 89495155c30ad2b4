#!/usr/bin/env bash
# Compiles the components library into dist/ (JS, .d.ts and source maps) with the node scripts the
# components read at run time next to the compiled code: what `npm pack` ships (see docs/library.md).
set -eu
cd "$(dirname "$0")/.."

clean() {
  rm -rf dist
}

compile() {
  npx tsc -p tsconfig.lib.json
}

# The shell scripts under components/ (read through __dirname), at the same relative paths.
copy_scripts() {
  find components -name '*.sh' | while read -r file; do
    mkdir -p "dist/$(dirname "$file")"
    cp "$file" "dist/$file"
  done
}

clean
compile
copy_scripts
echo "build-lib: dist/components ($(find dist -name '*.js' | wc -l) modules, $(find dist -name '*.sh' | wc -l) scripts)" >&2
