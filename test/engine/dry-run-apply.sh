#!/usr/bin/env bash
# Checks every manifest `npm run plan -- <stack> --out <dir>` wrote against a real API server's
# validation with `kubectl apply --dry-run=server`.
#
# Usage: bash test/engine/dry-run-apply.sh <kubeconfig> <dir>
#   <dir> is the --out directory (its manifests/ is read) or a directory of manifests.
# The Namespaces and CustomResourceDefinitions among the manifests are first created for real
# (a dry run does not create them, and the objects in them or of their kinds could not be
# validated otherwise): use a scratch cluster. Then every manifest is dry-run applied.
# Output: one line per manifest "ok <file>" or "rejected <file>: <server message>"; exits 1 if
# any was rejected (or its kind is not served by the cluster).
set -eu

die() { echo "dry-run-apply: $*" >&2; exit 1; }

manifest_dir() {
  if [ -d "$1/manifests" ]; then echo "$1/manifests"; else echo "$1"; fi
}

kind_of() { sed -n 's/^kind: *//p' "$1" | head -n 1; }

# Creates the Namespaces and CRDs for real, waiting until each CRD is served.
# Every manifest below the directory (--out writes manifests/<namespace>/<kind>-<name>.yaml), sorted.
manifests() { find "$dir" -name '*.yaml' -type f | LC_ALL=C sort; }

create_prerequisites() {
  manifests | while IFS= read -r file; do
    case "$(kind_of "$file")" in
      Namespace|CustomResourceDefinition)
        kubectl --kubeconfig "$kubeconfig" apply -f "$file" >/dev/null ||
          die "could not create the prerequisite in $(basename "$file")" ;;
    esac
  done
  kubectl --kubeconfig "$kubeconfig" wait --for condition=Established --timeout 60s crd --all >/dev/null
}

# One kubectl for every manifest; only when it refuses something, one per manifest, so each
# rejection names its file (a kubectl per file costs about 0.2 s).
dry_run_all() {
  set --
  for file in $(manifests); do set -- "$@" -f "$file"; done
  if kubectl --kubeconfig "$kubeconfig" apply --dry-run=server "$@" >/dev/null 2>&1; then
    for file in $(manifests); do echo "ok ${file#"$dir"/}"; done
  else
    dry_run_each
  fi
}

dry_run_each() {
  rejected=0
  for file in $(manifests); do
    if out=$(kubectl --kubeconfig "$kubeconfig" apply --dry-run=server -f "$file" 2>&1); then
      echo "ok ${file#"$dir"/}"
    else
      echo "rejected ${file#"$dir"/}: $(echo "$out" | tr '\n' ' ')"
      rejected=$((rejected + 1))
    fi
  done
  [ "$rejected" -eq 0 ] || die "$rejected manifest(s) rejected by the API server"
}

main() {
  [ $# -eq 2 ] || die "usage: dry-run-apply.sh <kubeconfig> <dir>"
  kubeconfig=$1
  dir=$(manifest_dir "$2")
  [ -f "$kubeconfig" ] || die "no kubeconfig at $kubeconfig"
  [ -n "$(manifests)" ] || die "no manifests (*.yaml) in $dir"
  create_prerequisites
  dry_run_all
}

main "$@"
