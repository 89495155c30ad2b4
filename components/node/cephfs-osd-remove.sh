#!/bin/sh
# cephfs-osd-remove.sh --namespace <ns> --fsid <fsid> --node <node> --device <dev>
#                      --devices-annotation <key> --admin-selector <labels>
#                      --osd-deployment <name> --osd-selector <labels> --script-configmap <name> --library-configmap <name>
#                      [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env] [--timeout <s>]
#
# kubectl talks to the cluster the Kubernetes provider uses: --context and/or --kubeconfig (the
# stack's kubernetes:context and kubernetes:kubeconfig; --kubeconfig-from-env takes the file's
# content from $ZCLOUD_DRAIN_KUBECONFIG). With none of them the cluster cannot be known: refused.
# <fsid> is the storage's cluster from Pulumi state: every Ceph step refuses another cluster.
#
# The delete step of one OSD's drain resource. Runs where `pulumi up` runs, with kubectl, before
# Pulumi deletes the OSD workload and long before the node's disk command is released:
#   1. finds the storage's admin pod on <node> (privileged, /dev, admin key from its Secret),
#      checks that its ceph.conf and the cluster it reaches are <fsid>, reads the paths now
#      declared for the node (annotation <key> of the Node; unreadable or empty: refused), and
#      reads the OSD id from <dev>'s bluestore label in the pod (only the whoami field leaves
#      it); a device without a label held no OSD: nothing to drain;
#   1b. rename: when another declared path resolves (readlink -f, in the pod) to the same disk,
#      the disk is still in use under its new name: the OSD is kept, exit 0, nothing changed.
#      Pulumi runs creates and updates before deletes, so the annotation already holds the new
#      list, and the new path's workload activates the OSD from its label;
#   2. drain: marks the OSD out and waits, bounded, until it is safe to destroy (ceph-osd-drain.sh);
#   3. stops the daemon: scales the OSD Deployment to 0 and waits for its pod to be gone;
#   4. purge: removes the OSD from the osdmap, crush map and auth (only while still safe);
#   5. zap: erases the device's label, only now that its OSD no longer exists in the cluster.
# Any refusal or timeout stops here with exit != 0: the delete fails, the OSD workload and the
# disk command stay, nothing is zapped; re-running `pulumi up` continues where it stopped.
# The Ceph scripts run inside the admin pod: the script set (lib.sh + ceph-lib.sh +
# ceph-osd-drain.sh) is read from the immutable ConfigMap <name> (its name carries the set's hash;
# the drain resource depends on it, so it outlives every drain that names it). A missing or empty
# ConfigMap refuses before anything is drained. No key passes through this script.
# Output: one line per decision. Exit: 0 done, 1 refused or failed, 2 usage, 3 bound ran out.
set -eu

rm_usage() {
    printf 'usage: %s\n' "cephfs-osd-remove.sh --namespace <ns> --fsid <fsid> --node <node> --device <dev> --devices-annotation <key> --admin-selector <labels> --osd-deployment <name> --osd-selector <labels> --script-configmap <name> --library-configmap <name> [--context <ctx>] [--kubeconfig <file> | --kubeconfig-from-env] [--timeout <s>]" >&2
    exit 2
}

rm_log() {
    printf 'zcloud: %s: %s\n' "$rm_subject" "$1"
}

rm_die() {
    printf 'zcloud: %s: refused: %s\n' "$rm_subject" "$1" >&2
    exit "${2:-1}"
}

rm_ns='' rm_fsid='' rm_node='' rm_dev='' rm_annotation='' rm_admin='' rm_osd='' rm_osd_sel='' rm_script_cm='' rm_lib_cm='' rm_script='' rm_ctx='' rm_kcfg='' rm_kcfg_env=0 rm_timeout=600
while [ $# -gt 0 ]; do
    if [ "$1" = --kubeconfig-from-env ]; then
        rm_kcfg_env=1
        shift
        continue
    fi
    [ -n "${2:-}" ] || rm_usage
    case $1 in
        --namespace) rm_ns=$2 ;;
        --fsid) rm_fsid=$2 ;;
        --kubeconfig) rm_kcfg=$2 ;;
        --node) rm_node=$2 ;;
        --device) rm_dev=$2 ;;
        --devices-annotation) rm_annotation=$2 ;;
        --admin-selector) rm_admin=$2 ;;
        --osd-deployment) rm_osd=$2 ;;
        --osd-selector) rm_osd_sel=$2 ;;
        --script-configmap) rm_script_cm=$2 ;;
        --library-configmap) rm_lib_cm=$2 ;;
        --context) rm_ctx=$2 ;;
        --timeout) rm_timeout=$2 ;;
        *) rm_usage ;;
    esac
    shift 2
done
for rm_v in "$rm_ns" "$rm_fsid" "$rm_node" "$rm_dev" "$rm_annotation" "$rm_admin" "$rm_osd" "$rm_osd_sel" "$rm_script_cm" "$rm_lib_cm"; do
    [ -n "$rm_v" ] || rm_usage
done
case $rm_timeout in '' | *[!0-9]*) rm_usage ;; esac
case $rm_fsid in *[!0-9a-f-]*) rm_usage ;; esac
case $rm_annotation in *[!A-Za-z0-9./-]*) rm_usage ;; esac
case $rm_script_cm$rm_lib_cm in *[!a-z0-9.-]*) rm_usage ;; esac
rm_subject="$rm_node $rm_dev"

# shellcheck source-path=SCRIPTDIR source=cephfs-kube.sh
command -v ck_kubectl >/dev/null 2>&1 || . "${0%/*}/cephfs-kube.sh"
ck_ns=$rm_ns ck_ctx=$rm_ctx ck_kcfg=$rm_kcfg ck_kcfg_env=$rm_kcfg_env ck_unchanged="nothing was drained or deleted"
ck_die() { rm_die "$@"; }
ck_usage() { rm_usage; }

# rm_ceph POD ACTION ARGS...: ceph-osd-drain.sh ACTION inside the admin pod.
rm_ceph() {
    rm_c_pod=$1
    shift
    ck_kubectl exec "$rm_c_pod" -- sh -c "$rm_script" ceph-osd-drain "$@" --fsid "$rm_fsid"
}

ck_kube_target
rm_script=$(ck_ceph_set "$rm_script_cm" ceph-osd-drain.sh "$rm_lib_cm" "the drain's") || exit $?

rm_pod=$(ck_kubectl get pods --selector "$rm_admin" --field-selector "spec.nodeName=$rm_node,status.phase=Running" \
    --output 'jsonpath={.items[0].metadata.name}') || rm_die "cannot list the admin pods"
[ -n "$rm_pod" ] || rm_die "no running admin pod of the storage on $rm_node; cannot drain (is the node up and labelled?)"

# rm_lock_dir: this user's private directory for the drains' locks where pulumi up runs
# (created 0700; refused when it is a link, another user's, or writable by others).
rm_lock_dir() {
    rm_ld=${TMPDIR:-/tmp}/zcloud-storage-drains-$(id -u)
    mkdir -m 700 "$rm_ld" 2>/dev/null || true
    rm_ld_ls=$(ls -ldn "$rm_ld" 2>/dev/null) || rm_die "cannot create $rm_ld for the drains' lock; nothing was drained or deleted"
    # shellcheck disable=SC2086 # ls's fields
    set -- $rm_ld_ls
    case $1 in drwx------*) ;; *) rm_die "$rm_ld is not a private directory (mode $1): remove it, or set TMPDIR to a directory of your own; nothing was drained or deleted" ;; esac
    [ "$3" = "$(id -u)" ] || rm_die "$rm_ld belongs to uid $3, not to this user: remove it, or set TMPDIR to a directory of your own; nothing was drained or deleted"
    printf '%s\n' "$rm_ld"
}

# rm_lock_wait SECONDS: one OSD drain of the storage at a time, across hosts and within one.
# Pulumi starts the deletes of one change together; each drain checks that the pools keep room
# for their copies without its OSD before marking it out, which holds only while no other drain
# of the same cluster is taking OSDs away. The lock is a symbolic link named by the cluster whose
# target is its holder ("<pid> <node> <device>": made in one step, so never half written); a lock
# whose holder process is gone (a killed run) is taken over. Waits, bounded, then refuses (exit 3).
rm_lock_wait() {
    rm_lock=$(rm_lock_dir)/cephfs-drain-$rm_fsid
    rm_lw_deadline=$(($(date +%s) + $1))
    rm_lw_said=''
    while ! ln -s "$$ $rm_node $rm_dev" "$rm_lock" 2>/dev/null; do
        rm_lw_holder=$(readlink "$rm_lock" 2>/dev/null) || continue
        if ! kill -0 "${rm_lw_holder%% *}" 2>/dev/null; then
            rm_lock_take_over "$rm_lw_holder"
            continue
        fi
        [ "$(date +%s)" -lt "$rm_lw_deadline" ] ||
            rm_die "the drain of ${rm_lw_holder#* } (the same storage) still runs after ${1}s; drains run one at a time; nothing was drained or deleted - run pulumi up again" 3
        [ -n "$rm_lw_said" ] || rm_log "waiting up to ${1}s for the drain of ${rm_lw_holder#* }: drains of one storage run one at a time"
        rm_lw_said=1
        sleep 2
    done
    # shellcheck disable=SC2064 # expand now: fixed paths
    trap "rm -f -- '$rm_lock'${ck_kfile:+; rm -f -- '$ck_kfile'}" EXIT
}

# rm_lock_take_over HOLDER: removes a lock whose holder process is gone (renamed away first, so
# of several drains seeing it at once only one removes it; one that moved a newer lock puts it back).
rm_lock_take_over() {
    mv -- "$rm_lock" "$rm_lock.$$" 2>/dev/null || return 0
    rm_lt_moved=$(readlink "$rm_lock.$$" 2>/dev/null) || rm_lt_moved=''
    if [ "$rm_lt_moved" = "$1" ]; then
        rm_log "took over the lock of a drain that is gone (${1#* })"
        rm -f -- "$rm_lock.$$"
    else
        ln -s "$rm_lt_moved" "$rm_lock" 2>/dev/null || true
        rm -f -- "$rm_lock.$$"
    fi
}

# rm_declared: prints the node's devices annotation (the paths now declared, comma-separated),
# or refuses: without it a renamed disk cannot be told from a removed one.
rm_declared() {
    rm_dc_path=$(printf '%s' "$rm_annotation" | sed 's/\./\\./g')
    rm_dc_list=$(ck_kubectl get node "$rm_node" --output "jsonpath={.metadata.annotations.$rm_dc_path}") ||
        rm_die "cannot read annotation $rm_annotation of node $rm_node (see above), so cannot tell whether $rm_dev is still declared under another name; nothing was drained or deleted"
    [ -n "$rm_dc_list" ] ||
        rm_die "node $rm_node has no annotation $rm_annotation, so cannot tell whether $rm_dev is still declared under another name; nothing was drained or deleted"
    printf '%s\n' "$rm_dc_list"
}

# Inside the admin pod: "none" only when the device has no bluestore label at all; the OSD id
# when it has this cluster's label, followed by the declared path that resolves (readlink -f, as
# cephfs-disks.sh does) to the same disk when there is one; anything else (unreadable label,
# another cluster) fails, so an OSD is never deleted undrained because its label could not be read.
# shellcheck disable=SC2016 # the script's variables expand inside the pod
rm_label_script='dev=$1
magic=$(head -c 22 "$dev" 2>/dev/null) || { echo "cannot read $dev" >&2; exit 1; }
[ "$magic" = "bluestore block device" ] || { echo none; exit 0; }
label=$(ceph-bluestore-tool show-label --dev "$dev" </dev/null 2>/dev/null) || { echo "$dev has a bluestore label that ceph-bluestore-tool cannot read" >&2; exit 1; }
id=$(printf "%s\n" "$label" | sed -n "s/^[[:space:]]*\"whoami\": \"\([0-9][0-9]*\)\".*/\1/p" | head -n 1)
fsid=$(printf "%s\n" "$label" | sed -n "s/^[[:space:]]*\"ceph_fsid\": \"\([0-9a-f-]*\)\".*/\1/p" | head -n 1)
[ -n "$id" ] || { echo "$dev has a bluestore label without an OSD id" >&2; exit 1; }
[ "$fsid" = "$2" ] || { echo "$dev holds an OSD of cluster $fsid, not of this storage cluster ($2)" >&2; exit 1; }
canon=$(readlink -f -- "$dev") || { echo "cannot resolve $dev" >&2; exit 1; }
set -f
IFS=,
for other in $3; do
    [ "$other" != "$dev" ] || continue
    [ "$(readlink -f -- "$other" 2>/dev/null)" != "$canon" ] || { echo "$id $other"; exit 0; }
done
echo "$id"'
rm_ceph "$rm_pod" check ||
    rm_die "the admin pod on $rm_node is not of this storage's cluster $rm_fsid (see above); nothing was drained or deleted"
rm_list=$(rm_declared) || exit $?
rm_found=$(ck_kubectl exec "$rm_pod" -- sh -c "$rm_label_script" cephfs-osd-id "$rm_dev" "$rm_fsid" "$rm_list") ||
    rm_die "cannot tell which OSD $rm_dev holds (see above); nothing was drained or deleted"
rm_id=${rm_found%% *}
case $rm_found in
    none)
        rm_log "no bluestore label on the device; nothing to drain"
        exit 0
        ;;
    *' '/dev/*)
        case $rm_id in '' | *[!0-9]*) rm_die "unexpected OSD id '$rm_id' for $rm_dev; nothing was drained or deleted" ;; esac
        printf 'zcloud: %s: kept osd.%s: same disk is declared as %s\n' "$rm_dev" "$rm_id" "${rm_found#* }"
        exit 0
        ;;
    '' | *[!0-9]*) rm_die "unexpected OSD id '$rm_found' for $rm_dev; nothing was drained or deleted" ;;
esac
rm_lock_wait "$((3 * rm_timeout))"
rm_log "holds osd.$rm_id; draining before its workload is deleted"

rm_rc=0
rm_ceph "$rm_pod" drain --id "$rm_id" --timeout "$rm_timeout" || rm_rc=$?
[ "$rm_rc" = 0 ] || rm_die "drain of osd.$rm_id did not finish (exit $rm_rc); nothing was destroyed" "$rm_rc"

if [ -n "$(ck_kubectl get deployment "$rm_osd" --ignore-not-found --output name)" ]; then
    ck_kubectl scale deployment "$rm_osd" --replicas=0 >/dev/null || rm_die "cannot scale $rm_osd to 0"
    rm_log "osd.$rm_id workload $rm_osd scaled to 0"
fi
ck_kubectl wait --for=delete pod --selector "$rm_osd_sel" --timeout "${rm_timeout}s" >/dev/null 2>&1 ||
    rm_die "the pod of $rm_osd is still there after ${rm_timeout}s; osd.$rm_id stays out, not purged" 3

rm_rc=0
rm_ceph "$rm_pod" purge --id "$rm_id" --timeout "$rm_timeout" || rm_rc=$?
[ "$rm_rc" = 0 ] || rm_die "purge of osd.$rm_id failed (exit $rm_rc); the device is not zapped" "$rm_rc"
rm_rc=0
rm_ceph "$rm_pod" zap --device "$rm_dev" || rm_rc=$?
[ "$rm_rc" = 0 ] || rm_die "zap failed (exit $rm_rc) after osd.$rm_id was purged" "$rm_rc"
rm_log "osd.$rm_id drained, purged and zapped"
