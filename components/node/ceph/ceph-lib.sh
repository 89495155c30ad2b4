# shellcheck shell=sh
# zcloud Ceph library (POSIX sh): settings, keys, the admin CLI and bounded waits.
#
# Shipped after components/node/lib.sh (zc_log, zc_refuse, zc_die, zc_fail and the device
# guards) and before one ceph-*.sh script, inside the Ceph container. It only defines functions
# and defaults. Functions keep their scratch variables under their own zcc_<fn>_ prefix.
#
# Settings (environment; container defaults in brackets):
#   CEPH_CONF            ceph.conf with fsid and mon_host, no keys   [/etc/ceph/ceph.conf]
#   ZCLOUD_CEPH_DATA     daemon data root (mon/, mgr/, mds/, osd/)    [/var/lib/ceph]
#   ZCLOUD_CEPH_KEYS     directory of bare keys from Kubernetes Secrets, one file per entity:
#                        admin, mon, bootstrap-osd (each holds only the base64 key)
#                                                                     [/etc/zcloud/ceph-keys]
#   ZCLOUD_CEPH_USER     owner of daemon data (daemons run --setuser) [ceph]
#   ZCLOUD_CEPH_TIMEOUT  bound in seconds for one cluster command     [30]
#   ZCLOUD_CEPH_POLL     seconds between two polls of a bounded wait  [2]
# Keys are read with the shell's `read` builtin and written with `printf` (also a builtin), so
# no key ever appears in a process's arguments; rendered keyrings are mode 0600.

: "${CEPH_CONF:=/etc/ceph/ceph.conf}"
: "${ZCLOUD_CEPH_DATA:=/var/lib/ceph}"
: "${ZCLOUD_CEPH_KEYS:=/etc/zcloud/ceph-keys}"
: "${ZCLOUD_CEPH_USER:=ceph}"
: "${ZCLOUD_CEPH_TIMEOUT:=30}"
: "${ZCLOUD_CEPH_POLL:=2}"
export CEPH_CONF
zcc_tmp=''
# shellcheck disable=SC2034 # read by the scripts after a bounded wait
zcc_wait_out=''

# Exit codes shared by the ceph scripts.
# shellcheck disable=SC2034 # used by the scripts shipped after this library
ZCC_EXIT_REFUSED=1   # a guard refused; nothing was changed by this step
ZCC_EXIT_USAGE=2     # bad arguments
# shellcheck disable=SC2034
ZCC_EXIT_TIMEOUT=3   # a bounded wait ran out; the message says what was left as it is

# zcc_usage TEXT: print usage on stderr and exit 2.
zcc_usage() {
    printf 'usage: %s\n' "$1" >&2
    exit "$ZCC_EXIT_USAGE"
}

# zcc_need_value OPTION VALUE: options that take a value must get one.
zcc_need_value() {
    [ -n "$2" ] || zcc_usage "$1 needs a value"
}

# zcc_conf KEY: a value of ceph.conf (from the [global] view), or nothing.
zcc_conf() {
    ceph-conf -c "$CEPH_CONF" --lookup "$1" 2>/dev/null || true
}

# zcc_fsid: the cluster fsid from ceph.conf; stops when ceph.conf has none.
zcc_fsid() {
    zcc_fsid_v=$(zcc_conf fsid)
    [ -n "$zcc_fsid_v" ] || zc_die "$CEPH_CONF" "has no fsid"
    printf '%s\n' "$zcc_fsid_v"
}

# zcc_require_cluster FSID: stops unless ceph.conf and the cluster the admin key reaches are
# FSID (the storage's cluster, from Pulumi state): removal steps never act on another cluster.
zcc_require_cluster() {
    zcc_rq_conf=$(zcc_fsid)
    if [ "$zcc_rq_conf" != "$1" ]; then
        zc_die "cluster $1" "the admin pod's ceph.conf is of cluster $zcc_rq_conf, not this storage's cluster $1; nothing was changed"
    fi
    zcc_rq_live=$(zcc_ceph fsid 2>/dev/null) || zc_fail "cluster $1" "cannot ask the cluster for its fsid"
    if [ "$zcc_rq_live" != "$1" ]; then
        zc_die "cluster $1" "the admin pod reaches cluster $zcc_rq_live, not this storage's cluster $1; nothing was changed"
    fi
}

# zcc_read_key FILE: prints the bare key held in FILE after checking its shape.
# The caller captures it with $(...): a builtin's output, never an argument of a program.
zcc_read_key() {
    [ -r "$1" ] || zc_die "$1" "key file is missing or unreadable"
    zcc_rk_key=
    IFS= read -r zcc_rk_key <"$1" || [ -n "$zcc_rk_key" ] || zc_die "$1" "key file is empty"
    case $zcc_rk_key in
        '' | *[!A-Za-z0-9+/=]*) zc_die "$1" "key file does not hold one base64 Ceph key" ;;
    esac
    [ "${#zcc_rk_key}" -ge 40 ] || zc_die "$1" "key file holds a key that is too short"
    printf '%s\n' "$zcc_rk_key"
}

# zcc_key_file NAME: the path of a bare key from the Secret (admin, mon, bootstrap-osd).
zcc_key_file() {
    printf '%s/%s\n' "$ZCLOUD_CEPH_KEYS" "$1"
}

# zcc_private_dir: creates a private scratch directory (0700) in $zcc_tmp, removed on exit.
zcc_private_dir() {
    zcc_tmp=$(umask 077 && mktemp -d "${TMPDIR:-/tmp}/zcloud-ceph.XXXXXX") ||
        zc_fail "scratch" "cannot create a private directory"
    # shellcheck disable=SC2064 # expand now: the path is fixed
    trap "rm -rf -- '$zcc_tmp'" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# zcc_caps ROLE FS: the capabilities of a role, one "service<TAB>capability" per line.
# The least-privilege CSI user follows ceph-csi's documented CephFS capabilities.
zcc_caps() {
    case $1 in
        admin)
            printf 'mds\tallow *\nmgr\tallow *\nmon\tallow *\nosd\tallow *\n' ;;
        mon)
            printf 'mon\tallow *\n' ;;
        mgr)
            printf 'mds\tallow *\nmon\tallow profile mgr\nosd\tallow *\n' ;;
        mds)
            printf 'mds\tallow\nmgr\tallow profile mds\nmon\tallow profile mds\nosd\tallow rwx\n' ;;
        bootstrap-osd)
            printf 'mon\tallow profile bootstrap-osd\n' ;;
        csi)
            [ -n "$2" ] || zcc_usage "role csi needs --fs"
            printf 'mds\tallow r fsname=%s path=/volumes, allow rws fsname=%s path=/volumes/csi\n' "$2" "$2"
            printf 'mgr\tallow rw\n'
            printf 'mon\tallow r fsname=%s\n' "$2"
            printf 'osd\tallow rw tag cephfs metadata=%s, allow rw tag cephfs data=%s\n' "$2" "$2"
            ;;
        *) zcc_usage "unknown role $1 (admin, mon, mgr, mds, bootstrap-osd, csi)" ;;
    esac
}

# zcc_keyring_entry ENTITY KEY ROLE FS: one keyring section on stdout (printf only).
zcc_keyring_entry() {
    printf '[%s]\n\tkey = %s\n' "$1" "$2"
    zcc_caps "$3" "$4" | while IFS="$(printf '\t')" read -r zcc_ke_svc zcc_ke_cap; do
        printf '\tcaps %s = "%s"\n' "$zcc_ke_svc" "$zcc_ke_cap"
    done
}

# zcc_ceph ARGS...: the ceph CLI as client.admin, key from the Secret file, bounded.
zcc_ceph() {
    timeout "$((ZCLOUD_CEPH_TIMEOUT + 5))" ceph --conf "$CEPH_CONF" --name client.admin \
        --keyfile "$(zcc_key_file admin)" --connect-timeout "$ZCLOUD_CEPH_TIMEOUT" "$@" </dev/null
}

# zcc_ceph_caps ROLE FS ARGS...: runs zcc_ceph ARGS... followed by the role's capabilities as
# "service capability" argument pairs (capabilities are not secret).
zcc_ceph_caps() {
    zcc_cc_role=$1
    zcc_cc_fs=$2
    shift 2
    zcc_cc_list=$(zcc_caps "$zcc_cc_role" "$zcc_cc_fs")
    while IFS="$(printf '\t')" read -r zcc_cc_svc zcc_cc_cap; do
        set -- "$@" "$zcc_cc_svc" "$zcc_cc_cap"
    done <<EOF
$zcc_cc_list
EOF
    zcc_ceph "$@"
}

# zcc_now: seconds since the epoch.
zcc_now() {
    date +%s
}

# zcc_wait SUBJECT SECONDS WHAT COMMAND...: polls COMMAND until it succeeds or SECONDS pass.
# Prints one line when it starts waiting; returns 1 on timeout (the caller decides the message).
# The last output of COMMAND is kept in $zcc_wait_out for that message.
zcc_wait() {
    zcc_w_subject=$1
    zcc_w_bound=$2
    zcc_w_deadline=$(($(zcc_now) + $2))
    zcc_w_what=$3
    shift 3
    zcc_w_said=
    while :; do
        # shellcheck disable=SC2034 # read by the caller
        if zcc_wait_out=$("$@" 2>&1); then
            return 0
        fi
        if [ "$(zcc_now)" -ge "$zcc_w_deadline" ]; then
            return 1
        fi
        if [ -z "$zcc_w_said" ]; then
            zc_log "$zcc_w_subject" "waiting up to ${zcc_w_bound}s for $zcc_w_what"
            zcc_w_said=1
        fi
        sleep "$ZCLOUD_CEPH_POLL"
    done
}

# zcc_chown PATH...: gives daemon data to the daemon user (when that user exists).
zcc_chown() {
    if [ -n "$ZCLOUD_CEPH_USER" ] && id "$ZCLOUD_CEPH_USER" >/dev/null 2>&1; then
        chown -R "$ZCLOUD_CEPH_USER:$ZCLOUD_CEPH_USER" -- "$@"
    fi
}
