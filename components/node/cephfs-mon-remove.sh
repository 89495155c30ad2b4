#!/bin/sh
# cephfs-mon-remove.sh --namespace <ns> --fsid <fsid> --mon <id> --admin-selector <labels>
#                      --script-configmap <name> --library-configmap <name>
#                      [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env] [--timeout <s>]
#
# The delete step of a mon's leave resource (<s>-mon-<id>-leave): runs where `pulumi up` runs,
# before Pulumi deletes the mon's workload and Service, and after the OSD drains of the same
# change (they depend on it). In a running admin pod of the storage (any node's: the monmap is
# the cluster's) it runs ceph-mon-remove.sh (lib.sh + ceph-lib.sh + it, read from the immutable
# ConfigMaps whose names carry their hashes): mon.<id> leaves the monmap only while the mons that
# stay hold a quorum without it, so deleting its workload never costs the quorum. kubectl talks
# to the cluster the Kubernetes provider uses (cephfs-kube.sh). No key passes through this script.
# Output: one line per decision. Exit: 0 done, 1 refused or failed, 2 usage, 3 bound ran out.
set -eu

mv_usage() {
    printf 'usage: %s\n' "cephfs-mon-remove.sh --namespace <ns> --fsid <fsid> --mon <id> --admin-selector <labels> --script-configmap <name> --library-configmap <name> [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env] [--timeout <s>]" >&2
    exit 2
}

mv_die() {
    printf 'zcloud: mon.%s: refused: %s\n' "$mv_mon" "$1" >&2
    exit "${2:-1}"
}

ck_ns='' ck_ctx='' ck_kcfg='' ck_kcfg_env=0 mv_fsid='' mv_mon='' mv_admin='' mv_cm='' mv_lib='' mv_timeout=600
while [ $# -gt 0 ]; do
    if [ "$1" = --kubeconfig-from-env ]; then
        ck_kcfg_env=1
        shift
        continue
    fi
    [ -n "${2:-}" ] || mv_usage
    case $1 in
        --namespace) ck_ns=$2 ;;
        --fsid) mv_fsid=$2 ;;
        --mon) mv_mon=$2 ;;
        --admin-selector) mv_admin=$2 ;;
        --script-configmap) mv_cm=$2 ;;
        --library-configmap) mv_lib=$2 ;;
        --context) ck_ctx=$2 ;;
        --kubeconfig) ck_kcfg=$2 ;;
        --timeout) mv_timeout=$2 ;;
        *) mv_usage ;;
    esac
    shift 2
done
for mv_v in "$ck_ns" "$mv_fsid" "$mv_mon" "$mv_admin" "$mv_cm" "$mv_lib"; do
    [ -n "$mv_v" ] || mv_usage
done
case $mv_timeout in '' | *[!0-9]*) mv_usage ;; esac
case $mv_fsid in *[!0-9a-f-]*) mv_usage ;; esac
case $mv_mon in *[!a-z0-9]*) mv_usage ;; esac
case $mv_cm$mv_lib in *[!a-z0-9.-]*) mv_usage ;; esac

# shellcheck source-path=SCRIPTDIR source=cephfs-kube.sh
command -v ck_kubectl >/dev/null 2>&1 || . "${0%/*}/cephfs-kube.sh"
# shellcheck disable=SC2034 # read by cephfs-kube.sh
ck_unchanged="mon.$mv_mon stays in the monmap and its workload stays"
ck_die() { mv_die "$@"; }
ck_usage() { mv_usage; }

# mv_admin_pod: the name of a running admin pod that is not being deleted, or nothing (as the
# gates pick one; not moved into cephfs-kube.sh, whose every change runs every gate once more).
mv_admin_pod() {
    ck_kubectl get pods --selector "$mv_admin" --field-selector status.phase=Running \
        --output 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
        awk 'NF == 1 { print $1; exit }'
}

ck_kube_target
mv_script=$(ck_ceph_set "$mv_cm" ceph-mon-remove.sh "$mv_lib" "the mon removal's") || exit $?
mv_pod=$(mv_admin_pod) || mv_die "cannot list the admin pods (see above); $ck_unchanged"
[ -n "$mv_pod" ] || mv_die "no running admin pod of the storage ($mv_admin); $ck_unchanged"
mv_rc=0
ck_kubectl exec "$mv_pod" -- sh -c "$mv_script" ceph-mon-remove --id "$mv_mon" --fsid "$mv_fsid" --timeout "$mv_timeout" || mv_rc=$?
exit "$mv_rc"
