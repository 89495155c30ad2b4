#!/bin/sh
# cephfs-gate.sh --namespace <ns> --admin-selector <labels> --script-configmap <name> --library-configmap <name>
#                [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env]
#                [--daemons <selector>] -- <gate args>
#
# One health gate of a CephFS storage's rolling restart (a Pulumi local command, run where
# `pulumi up` runs, on create and on every update). kubectl talks to the cluster the Kubernetes
# provider uses (as the OSD drain does, cephfs-kube.sh); the gate's Ceph script set (lib.sh +
# ceph-lib.sh + ceph-gate.sh) is read from its immutable ConfigMap <name> and runs with <gate
# args> (`ceph-gate.sh <action> ... --fsid <fsid> --timeout <s>`) in a running admin pod of the
# storage (any node's: the gate asks the cluster, not the node). While no admin pod runs yet (a
# new storage: its nodes get their label once their disk command ran) it waits, bounded by the
# gate's --timeout. With --daemons (the roll's first gate, roll-start): while no Deployment of the
# namespace that <selector> matches (the storage's daemon Deployments) has an available pod - the
# storage's creation, when none exists yet - no daemon runs that a restart could disrupt: it
# passes without asking Ceph; once one runs, Ceph is asked. No key passes through this script.
# Output: the gate's lines. Exit: the gate's (0 passed, 1 refused, 2 usage, 3 bound ran out).
set -eu

gs_usage() {
    printf 'usage: %s\n' "cephfs-gate.sh --namespace <ns> --admin-selector <labels> --script-configmap <name> --library-configmap <name> [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env] [--daemons <selector>] -- <ceph-gate.sh args>" >&2
    exit 2
}

gs_die() {
    printf 'zcloud: gate %s: refused: %s\n' "$gs_subject" "$1" >&2
    exit "${2:-1}"
}

ck_ns='' ck_ctx='' ck_kcfg='' ck_kcfg_env=0 gs_admin='' gs_cm='' gs_lib='' gs_subject='' gs_daemons=''
while [ $# -gt 0 ]; do
    case $1 in
        --kubeconfig-from-env) ck_kcfg_env=1; shift; continue ;;
        --) shift; break ;;
    esac
    [ -n "${2:-}" ] || gs_usage
    case $1 in
        --namespace) ck_ns=$2 ;;
        --admin-selector) gs_admin=$2 ;;
        --script-configmap) gs_cm=$2 ;;
        --library-configmap) gs_lib=$2 ;;
        --context) ck_ctx=$2 ;;
        --kubeconfig) ck_kcfg=$2 ;;
        --daemons) gs_daemons=$2 ;;
        *) gs_usage ;;
    esac
    shift 2
done
for gs_v in "$ck_ns" "$gs_admin" "$gs_cm" "$gs_lib" "${1:-}"; do
    [ -n "$gs_v" ] || gs_usage
done
case $gs_cm$gs_lib in *[!a-z0-9.-]*) gs_usage ;; esac
gs_subject=$*
gs_limit=600
gs_prev=''
for gs_a in "$@"; do
    [ "$gs_prev" != --timeout ] || gs_limit=$gs_a
    gs_prev=$gs_a
done
case $gs_limit in '' | *[!0-9]*) gs_usage ;; esac

# shellcheck source-path=SCRIPTDIR source=cephfs-kube.sh
command -v ck_kubectl >/dev/null 2>&1 || . "${0%/*}/cephfs-kube.sh"
# shellcheck disable=SC2034 # read by cephfs-kube.sh
ck_unchanged="no daemon was restarted after this gate"
ck_die() { gs_die "$@"; }
ck_usage() { gs_usage; }

# gs_admin_pod: the name of a running admin pod that is not being deleted, or nothing.
gs_admin_pod() {
    ck_kubectl get pods --selector "$gs_admin" --field-selector status.phase=Running \
        --output 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
        awk 'NF == 1 { print $1; exit }'
}

# gs_no_daemon_runs: true, saying so, when --daemons is given and no Deployment it matches has an
# available pod: the storage's creation (none exists yet), or every daemon of it already down.
gs_no_daemon_runs() {
    [ -n "$gs_daemons" ] || return 1
    gs_found=$(ck_kubectl get deployments --selector "$gs_daemons" --output 'jsonpath={range .items[*]}{.metadata.name} {.status.availableReplicas}{"\n"}{end}') ||
        gs_die "cannot list the storage's daemon Deployments ($gs_daemons, see above); $ck_unchanged"
    gs_running=$(printf '%s\n' "$gs_found" | awk 'NF == 2 && $2 > 0 { print $1 }')
    [ -z "$gs_running" ] || return 1
    if [ -z "$gs_found" ]; then
        printf 'zcloud: gate %s: no daemon Deployment of the storage exists yet (%s): a new storage, no running daemon to disrupt; passed\n' "$gs_subject" "$gs_daemons"
    else
        printf 'zcloud: gate %s: no daemon Deployment of the storage has an available pod (%s): no running daemon to disrupt; passed\n' "$gs_subject" "$(printf '%s\n' "$gs_found" | awk 'NF { print $1 }' | tr '\n' ' ' | sed 's/ $//')"
    fi
}

ck_kube_target
! gs_no_daemon_runs || exit 0
gs_script=$(ck_ceph_set "$gs_cm" ceph-gate.sh "$gs_lib" "the gate's") || exit $?
gs_deadline=$(($(date +%s) + gs_limit))
gs_said=''
while :; do
    gs_pod=$(gs_admin_pod) || gs_die "cannot list the admin pods (see above); $ck_unchanged"
    [ -z "$gs_pod" ] || break
    [ "$(date +%s)" -lt "$gs_deadline" ] ||
        gs_die "no running admin pod of the storage ($gs_admin) after ${gs_limit}s: is any storage node up and labelled? $ck_unchanged" 3
    [ -n "$gs_said" ] || printf 'zcloud: gate %s: waiting up to %ss for a running admin pod\n' "$gs_subject" "$gs_limit"
    gs_said=1
    sleep 2
done
gs_rc=0
ck_kubectl exec "$gs_pod" -- sh -c "$gs_script" ceph-gate "$@" || gs_rc=$?
exit "$gs_rc"
