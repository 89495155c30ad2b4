#!/usr/bin/env bash
# Pull-request check without cluster credentials: for every stack changed between the base branch
# and HEAD, plan it offline against the base branch's version (`npm run plan -- NEW --diff-ref
# BASE`: the stack file and the config files it lists, as they were at BASE), and write the change
# list and the policy results to the job summary. A change to any other file in the stacks'
# directory (a stack's `configFiles` inventory lives there) counts as a change of every stack.
# When the zcloud-storage program is part of this repository (ZCLOUD_DIR inside it) and the change
# touches it (e.g. a bump of zcloud-storage), the base is planned by the base's own program: a
# checkout of the base commit in a temp dir, its own dependencies ($BASE_INSTALL), its `--json`
# plan; then every stack is planned with `--diff-plan` against that, so the summary shows what the
# new program does to each stack.
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
# BASE_INSTALL how the base checkout gets its dependencies (default `npm ci --ignore-scripts
#            --no-audit --no-fund`), run in the base's ZCLOUD_DIR.
#
# Exit codes: 0 every changed stack plans without config errors or mandatory violations;
# 1 at least one does not (the summary says which); 2 usage or git errors.
set -euo pipefail

base_ref=${1:-${BASE_REF:-origin/main}}
stacks_glob=${STACKS_GLOB:-stacks/Pulumi.*.yaml}
summary=${SUMMARY:-${GITHUB_STEP_SUMMARY:-plan-summary.md}}
zcloud_dir=${ZCLOUD_DIR:-.}
base_install=${BASE_INSTALL:-npm ci --ignore-scripts --no-audit --no-fund}
scratch=$(mktemp -d)
base_tree=''
# shellcheck disable=SC2016 # expanded when the trap runs
trap '[ -z "$base_tree" ] || git worktree remove --force "$base_tree" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT

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

# changed_stacks BASE: stack files added or modified since BASE, one per line; every stack file
# when another file under the stacks' directory changed (a config file a stack lists: which
# stacks list it, the plan knows; planning all of them is safe, an unaffected one shows no change).
changed_stacks() {
    if [ -n "$(git diff --name-only "$1" HEAD -- "${stacks_glob%/*}" ":(exclude)$stacks_glob")" ]; then
        git ls-files -- "$stacks_glob"
    else
        git diff --name-only --diff-filter=AMR "$1" HEAD -- "$stacks_glob"
    fi
}

# deleted_stacks BASE: stack files removed since BASE (nothing to plan; the summary names them).
deleted_stacks() {
    git diff --name-only --diff-filter=D "$1" HEAD -- "$stacks_glob"
}

# existed BASE FILE: whether FILE was a stack file at BASE (else it is new: planned without a base).
existed() {
    git cat-file -e "$1:$2" 2>/dev/null
}

# plan ARGS...: the offline plan of the zcloud-storage checkout (paths given absolute).
plan() {
    npm --prefix "$zcloud_dir" run --silent plan -- "$@"
}

# program_path: ZCLOUD_DIR relative to the repository's top, when the program is part of it.
program_path() {
    local top dir
    top=$(git rev-parse --show-toplevel)
    dir=$(cd "$zcloud_dir" && pwd -P)
    case $dir/ in
        "$(cd "$top" && pwd -P)"/*) printf '%s\n' "${dir#"$(cd "$top" && pwd -P)"}" | sed 's|^/||' ;;
        *) return 1 ;;
    esac
}

# program_changed BASE: true when anything outside the stack files changed under the program's
# path since BASE (its code, package.json, package-lock.json).
program_changed() {
    local at
    at=$(program_path) || return 1
    [ -n "$(git diff --name-only "$1" HEAD -- "${at:-.}" ":(exclude)$stacks_glob")" ]
}

# base_program BASE TREE: a checkout of BASE at TREE with its own dependencies; prints the base's
# ZCLOUD_DIR. The base plans with the program it had, not with this one.
base_program() {
    local at
    at=$(program_path)
    git worktree add --quiet --detach "$2" "$1" >&2
    (cd "$2/$at" && $base_install) >&2 || {
        echo "plan-changed-stacks: installing the base's dependencies ($base_install) failed" >&2
        exit 2
    }
    printf '%s\n' "$2/$at"
}

# base_plan DIR OLD: the base's --json plan of OLD (the stack file in the base's checkout, its
# config files beside it as they were) with the base's program in DIR; prints the JSON file, or
# nothing when the base's program cannot plan it (then the stack is compared with --diff-ref
# under the new program).
base_plan() {
    local json=$scratch/${2##*/}.json
    npm --prefix "$1" run --silent plan -- "$2" --json >"$json" 2>"$json.err" || true
    if [ -s "$json" ]; then printf '%s\n' "$json"; else echo "plan-changed-stacks: the base's program did not plan ${2##*/}: $(head -c 500 "$json.err")" >&2; fi
}

# plan_one FILE BASE EXISTED [BASE_JSON]: plans FILE (against BASE_JSON, the base program's plan,
# else against FILE as it was at BASE when it EXISTED there) into the summary; returns the
# plan's exit code.
plan_one() {
    local file=$1 base=$2 existed=$3 saved=${4:-} out code=0
    local args=("$PWD/$file")
    if [ -n "$saved" ]; then
        args+=(--diff-plan "$saved")
    elif [ "$existed" = 1 ]; then
        args+=(--diff-ref "$base")
    fi
    out=$(plan "${args[@]}" 2>&1) || code=$?
    if [ -n "${PLAN_JSON_DIR:-}" ]; then
        mkdir -p "$PLAN_JSON_DIR"
        plan "${args[@]}" --json >"$PLAN_JSON_DIR/${file##*/}.json" 2>/dev/null || true
    fi
    say "### \`$file\` $([ "$existed" = 0 ] && echo '(new stack)' || echo "(changes from $base_ref$([ -z "$saved" ] || echo ", planned by its own program"))")" ""
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
    local base files deleted failed=0 file was base_dir='' saved
    base=$(merge_base)
    files=$(changed_stacks "$base")
    deleted=$(deleted_stacks "$base")
    say "## zcloud-storage plan of changed stacks" "" "Base: \`$base_ref\` (merge base \`${base:0:12}\`)" ""
    if program_changed "$base"; then
        # The program changed: every stack may change, each compared with the base program's plan.
        base_tree=$scratch/base-tree # set here: the EXIT trap removes it
        base_dir=$(base_program "$base" "$base_tree")
        files=$(git ls-files -- "$stacks_glob")
        say "The zcloud-storage program changed: every stack is planned, the base by the base's own program." ""
    fi
    if [ -z "$files" ]; then
        say "No stack changed."
    fi
    for file in $deleted; do
        say "- \`$file\` deleted: \`pulumi destroy\` of that stack is a separate, deliberate step." ""
    done
    for file in $files; do
        was=0
        existed "$base" "$file" && was=1
        saved=''
        [ -z "$base_dir" ] || [ "$was" = 0 ] || saved=$(base_plan "$base_dir" "$base_tree/$file")
        plan_one "$file" "$base" "$was" "$saved" || failed=1
    done
    echo "plan-changed-stacks: summary in $summary" >&2
    return "$failed"
}

main
