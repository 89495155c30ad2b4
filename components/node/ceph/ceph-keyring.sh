#!/bin/sh
# ceph-keyring.sh daemon <mgr|mds> <id>
#   Makes sure entity <type>.<id> exists with its role's caps (the cluster generates the key) and
#   that $ZCLOUD_CEPH_DATA/<type>/ceph-<id>/keyring holds its key (mode 0600, daemon user).
# ceph-keyring.sh import <entity> <role> --key-file <file> [--fs <fs>]
#   Makes sure <entity> exists with the key held in <file> (a bare key from a Secret) and the
#   caps of <role> (bootstrap-osd, csi, ...; csi needs --fs). An entity that exists with another
#   key is refused: key rotation is a deliberate step, never a side effect.
# Both run as client.admin ($ZCLOUD_CEPH_KEYS/admin) and are idempotent: caps that drifted are
# set again, everything else is left alone. Output: one line per decision.
# Exit: 0 done, 1 refused or failed, 2 usage.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

kr_usage="ceph-keyring.sh daemon <mgr|mds> <id> | import <entity> <role> --key-file <file> [--fs <fs>]"
kr_tab=$(printf '\t')

# kr_export ENTITY: sets kr_exported to the entity's keyring text; returns 1 when it does not
# exist, stops on any other error (an unreachable cluster is not "absent").
kr_export() {
    kr_exported=
    if kr_exported=$(zcc_ceph auth get "$1" 2>"$zcc_tmp/auth-get.err"); then
        return 0
    fi
    if grep -q ENOENT "$zcc_tmp/auth-get.err"; then
        return 1
    fi
    sed 's/^/  /' "$zcc_tmp/auth-get.err" >&2
    zc_fail "$1" "cannot read the entity from the cluster"
}

# kr_key_of TEXT: the key of a keyring text.
kr_key_of() {
    printf '%s\n' "$1" | sed -n 's/^[[:space:]]*key = //p' | head -n 1
}

# kr_caps_of TEXT: "service<TAB>capability" lines of a keyring text, sorted.
kr_caps_of() {
    printf '%s\n' "$1" | sed -n "s/^[[:space:]]*caps \\([a-z]*\\) = \"\\(.*\\)\"\$/\\1$kr_tab\\2/p" | sort
}

# kr_ensure_caps ENTITY ROLE FS: sets the role's caps when the entity's caps differ.
kr_ensure_caps() {
    if [ "$(kr_caps_of "$kr_exported")" = "$(zcc_caps "$2" "$3" | sort)" ]; then
        zc_log "$1" "exists; caps match role $2"
        return 0
    fi
    zcc_ceph_caps "$2" "$3" auth caps "$1" >/dev/null 2>&1 || zc_fail "$1" "ceph auth caps"
    zc_log "$1" "exists; caps set to role $2"
}

# kr_write_keyring FILE: writes kr_exported to FILE (0600, daemon user) through a temp file.
kr_write_keyring() {
    (umask 077 && printf '%s\n' "$kr_exported" >"$1.new")
    zcc_chown "$1.new"
    mv -- "$1.new" "$1"
}

# kr_daemon TYPE ID
kr_daemon() {
    case $1 in mgr | mds) ;; *) zcc_usage "$kr_usage" ;; esac
    case $2 in '' | *[!A-Za-z0-9_-]*) zcc_usage "daemon id '$2' must be letters, digits, - or _" ;; esac
    kr_entity="$1.$2"
    kr_dir="$ZCLOUD_CEPH_DATA/$1/ceph-$2"
    mkdir -p -- "$kr_dir"
    zcc_chown "$kr_dir"
    if kr_export "$kr_entity"; then
        kr_ensure_caps "$kr_entity" "$1" ""
        kr_export "$kr_entity" || zc_fail "$kr_entity" "vanished while being read"
    else
        zcc_ceph_caps "$1" "" auth get-or-create "$kr_entity" >/dev/null 2>&1 ||
            zc_fail "$kr_entity" "ceph auth get-or-create"
        zc_log "$kr_entity" "created with role $1 caps"
        kr_export "$kr_entity" || zc_fail "$kr_entity" "not found right after creation"
    fi
    if [ -r "$kr_dir/keyring" ] &&
        [ "$(kr_key_of "$(cat -- "$kr_dir/keyring")")" = "$(kr_key_of "$kr_exported")" ]; then
        zc_log "$kr_entity" "keyring $kr_dir/keyring in place"
    else
        kr_write_keyring "$kr_dir/keyring"
        zc_log "$kr_entity" "keyring written to $kr_dir/keyring"
    fi
}

# kr_import ENTITY ROLE KEYFILE FS
kr_import() {
    case $1 in client.?* | mgr.?* | mds.?* | osd.?*) ;; *) zcc_usage "entity '$1' must be <type>.<id>" ;; esac
    zcc_caps "$2" "$4" >/dev/null
    kr_key=$(zcc_read_key "$3")
    if kr_export "$1"; then
        if [ "$(kr_key_of "$kr_exported")" != "$kr_key" ]; then
            zc_die "$1" "exists with another key than $3; rotating a key is a deliberate step, not done here"
        fi
        kr_ensure_caps "$1" "$2" "$4"
        return 0
    fi
    (umask 077 && zcc_keyring_entry "$1" "$kr_key" "$2" "$4" >"$zcc_tmp/import.keyring")
    zcc_ceph auth import -i "$zcc_tmp/import.keyring" >/dev/null 2>&1 || zc_fail "$1" "ceph auth import"
    zc_log "$1" "created with the key from $3 and role $2 caps"
}

zcc_private_dir
case ${1:-} in
    daemon)
        [ $# -eq 3 ] || zcc_usage "$kr_usage"
        kr_daemon "$2" "$3"
        ;;
    import)
        [ $# -ge 3 ] || zcc_usage "$kr_usage"
        kr_i_entity=$2
        kr_i_role=$3
        kr_i_file=
        kr_i_fs=
        shift 3
        while [ $# -gt 0 ]; do
            case $1 in
                --key-file) zcc_need_value "$1" "${2:-}"; kr_i_file=$2; shift 2 ;;
                --fs) zcc_need_value "$1" "${2:-}"; kr_i_fs=$2; shift 2 ;;
                *) zcc_usage "$kr_usage" ;;
            esac
        done
        [ -n "$kr_i_file" ] || zcc_usage "$kr_usage"
        kr_import "$kr_i_entity" "$kr_i_role" "$kr_i_file" "$kr_i_fs"
        ;;
    *) zcc_usage "$kr_usage" ;;
esac
