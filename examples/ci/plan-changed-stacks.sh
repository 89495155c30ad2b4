#!/usr/bin/env bash
# Pull-request check without cluster credentials: for every stack file changed between the base
# branch and HEAD, plan it offline against the base branch's version (`npm run plan -- NEW
# --diff BASE`), and write the change list and the policy results to the job summary.
#
#   bash examples/ci/plan-changed-stacks.sh [BASE_REF]
#
# BASE_REF   the base branch as git knows it (default: $BASE_REF, else origin/main); the merge
#            base with HEAD is compared, so changes on the base branch since do not show.
# STACKS_GLOB  which files are stack files (default 'stacks/Pulumi.*.yaml')
# SUMMARY    where the Markdown summary goes: $GITHUB_STEP_SUMMARY when set (GitHub Actions),
#            else plan-summary.md in the working directory.
# PLAN_JSON_DIR  if set, also writes each plan with --json there (<stack file name>.json).
# ZCLOUD_DIR the zcloud-storage checkout whose `npm run plan` plans (default: the current
#            directory; set it when the stacks live in a repository of their own).
#
# Exit codes: 0 every changed stack plans without config errors or mandatory violations;
# 1 at least one does not (the summary says which); 2 usage or git errors.
set -euo pipefail

base_ref=${1:-${BASE_REF:-origin/main}}
stacks_glob=${STACKS_GLOB:-stacks/Pulumi.*.yaml}
summary=${SUMMARY:-${GITHUB_STEP_SUMMARY:-plan-summary.md}}
zcloud_dir=${ZCLOUD_DIR:-.}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# say LINE...: one line into the summary.
say() {
    printf '%s\n' "$@" >>"$summary"
}

# merge_base: the commit the change started from.
merge_base() {
    if ! git rev-parse --verify --quiet "$base_ref^{commit}" >/dev/null; then
        echo "plan-changed-stacks: base $base_ref is not a commit here (fetch it, e.g. git fetch origin main)" >&2
        exit 2
    fi
    git merge-base "$base_ref" HEAD
}

# changed_stacks BASE: stack files added or modified since BASE, one per line.
changed_stacks() {
    git diff --name-only --diff-filter=AMR "$1" HEAD -- "$stacks_glob"
}

# deleted_stacks BASE: stack files removed since BASE (nothing to plan; the summary names them).
deleted_stacks() {
    git diff --name-only --diff-filter=D "$1" HEAD -- "$stacks_glob"
}

# base_version BASE FILE: the file as it was at BASE, under the same name in the scratch dir
# (so the stack name matches); nothing when the file is new.
base_version() {
    git cat-file -e "$1:$2" 2>/dev/null || return 0
    mkdir -p "$scratch/base"
    git show "$1:$2" >"$scratch/base/${2##*/}"
    printf '%s\n' "$scratch/base/${2##*/}"
}

# plan ARGS...: the offline plan of the zcloud-storage checkout (paths given absolute).
plan() {
    npm --prefix "$zcloud_dir" run --silent plan -- "$@"
}

# plan_one FILE OLD: plans FILE (against OLD, its base version, if any) into the summary;
# returns the plan's exit code.
plan_one() {
    local file=$1 old=$2 out code=0
    local args=("$PWD/$file")
    [ -z "$old" ] || args+=(--diff "$old")
    out=$(plan "${args[@]}" 2>&1) || code=$?
    if [ -n "${PLAN_JSON_DIR:-}" ]; then
        mkdir -p "$PLAN_JSON_DIR"
        plan "${args[@]}" --json >"$PLAN_JSON_DIR/${file##*/}.json" 2>/dev/null || true
    fi
    say "### \`$file\` $([ -z "$old" ] && echo '(new stack)' || echo "(changes from $base_ref)")" ""
    case $code in
        0) say "Result: **ok**" ;;
        1) say "Result: **failed**: config errors or mandatory policy violations" ;;
        *) say "Result: **failed**: the plan did not run (exit $code)" ;;
    esac
    say "" '```' "$out" '```' ""
    printf '%s: exit %s\n' "$file" "$code" >&2
    return "$code"
}

main() {
    local base files deleted failed=0 file old
    base=$(merge_base)
    files=$(changed_stacks "$base")
    deleted=$(deleted_stacks "$base")
    say "## zcloud-storage plan of changed stacks" "" "Base: \`$base_ref\` (merge base \`${base:0:12}\`)" ""
    if [ -z "$files" ]; then
        say "No stack file changed."
    fi
    for file in $deleted; do
        say "- \`$file\` deleted: \`pulumi destroy\` of that stack is a separate, deliberate step." ""
    done
    for file in $files; do
        old=$(base_version "$base" "$file")
        plan_one "$file" "$old" || failed=1
    done
    echo "plan-changed-stacks: summary in $summary" >&2
    return "$failed"
}

main
