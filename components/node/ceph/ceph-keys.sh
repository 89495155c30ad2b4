#!/bin/sh
# ceph-keys.sh: moves an upgraded cluster's AES-128 keys to AES-256 (aes256k), the steps of
# docs/cephfs.md "Key rotation", run in an admin pod as client.admin. Each step is idempotent and
# acts only on what is still AES-128; no key is printed or passed as an argument.
# ceph-keys.sh daemons
#   The mons' service and preferred ciphers to aes256k; every mgr, mds and OSD key rotated in the
#   running daemon (a pending key, `tell <daemon> rotate-key`; an OSD first stores it in its
#   bluestore label, `rotate-stored-key`), then committed; Ceph's own bootstrap keys the program
#   never uses rotated; the rotating service keys made again. A mgr or mds that does not take
#   its key (a standby mgr) gets it in the cluster only, and its pod must restart (said so); an
#   OSD that does not take it keeps its old key and is named: the step fails.
# ceph-keys.sh replace <entity> <role> --key-file <file> [--fs <fs>] [--admin-key-file <file>]
#   <entity> (client.admin, mon., client.bootstrap-osd, client.csi) gets the AES-256 key held in
#   <file> (a bare key from the program's Secret) with <role>'s caps, only while it holds an
#   AES-128 key; already that key: nothing to do; any other key is refused. --admin-key-file:
#   client.admin authenticates with that file's key (the cluster's, while the Secret already
#   holds client.admin's new one).
# ceph-keys.sh finish
#   The mons accept AES-256 keys only (auth_allowed_ciphers aes256k), once no entity holds an
#   AES-128 key; refused, naming them, while any is left.
# Exit: 0 done, 1 refused or failed, 2 usage.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

ks_usage="ceph-keys.sh daemons | replace <entity> <role> --key-file <file> [--fs <fs>] [--admin-key-file <file>] | finish"

# ks_type KEY: aes (AES-128, base64 `AQ...`, type 1), aes256k (AES-256, `Ag...`, type 2), or unknown.
ks_type() {
    case $1 in
        AQ*) echo aes ;;
        Ag*) echo aes256k ;;
        *) echo unknown ;;
    esac
}

# ks_admin_key_file FILE: client.admin authenticates with FILE's key from now on (a private copy
# stands in for the Secret's key directory).
ks_admin_key_file() {
    ks_ak_key=$(zcc_read_key "$1")
    mkdir -m 700 -- "$zcc_tmp/admin-keys"
    (umask 077 && printf '%s\n' "$ks_ak_key" >"$zcc_tmp/admin-keys/admin")
    ks_ak_key=
    ZCLOUD_CEPH_KEYS=$zcc_tmp/admin-keys
}

# ks_key_of ENTITY: the entity's key; returns 2 when it does not exist, fails (1) on other errors.
ks_key_of() {
    if zcc_ceph auth get "$1" >"$zcc_tmp/entity" 2>"$zcc_tmp/entity.err"; then
        sed -n 's/^[[:space:]]*key = //p' "$zcc_tmp/entity" | head -n 1
        rm -f -- "$zcc_tmp/entity"
        return 0
    fi
    grep -q ENOENT "$zcc_tmp/entity.err" && return 2
    sed 's/^/  /' "$zcc_tmp/entity.err" >&2
    zc_fail "$1" "cannot read the entity from the cluster"
}

# ks_replace ENTITY ROLE KEYFILE FS
ks_replace() {
    case $1 in client.?* | mon.) ;; *) zcc_usage "entity '$1' must be client.<id> or mon." ;; esac
    zcc_caps "$2" "$4" >/dev/null
    ks_new=$(zcc_read_key "$3")
    [ "$(ks_type "$ks_new")" = aes256k ] || zc_die "$1" "$3 holds no AES-256 key; nothing was changed"
    ks_rc=0
    ks_have=$(ks_key_of "$1") || ks_rc=$?
    case $ks_rc in
        0) ;;
        2) zc_die "$1" "does not exist; nothing to replace" ;;
        *) exit 1 ;;
    esac
    if [ "$ks_have" = "$ks_new" ]; then
        zc_log "$1" "holds the AES-256 key from $3 already"
        return 0
    fi
    if [ "$(ks_type "$ks_have")" != aes ]; then
        zc_die "$1" "holds another $(ks_type "$ks_have") key than the one in $3; only an AES-128 key is replaced"
    fi
    (umask 077 && zcc_keyring_entry "$1" "$ks_new" "$2" "$4" >"$zcc_tmp/import.keyring")
    zcc_ceph auth import -i "$zcc_tmp/import.keyring" >/dev/null 2>&1 || zc_fail "$1" "ceph auth import"
    rm -f -- "$zcc_tmp/import.keyring"
    zc_log "$1" "AES-128 key replaced by the AES-256 key from $3 (role $2 caps)"
}

# ks_insecure: writes the entities whose key is AES-128 to $zcc_tmp/insecure, one per line, sorted
# (run in this shell, not in $(...): a failure stops the script).
ks_insecure() {
    zcc_ceph auth ls >"$zcc_tmp/auth-ls" 2>"$zcc_tmp/auth-ls.err" || {
        sed 's/^/  /' "$zcc_tmp/auth-ls.err" >&2
        zc_fail "auth" "cannot list the cluster's entities"
    }
    awk '/^[^ \t]/ { e = $1 } /^[ \t]+key: AQ/ { print e }' "$zcc_tmp/auth-ls" >"$zcc_tmp/insecure"
    # mon. may be missing from the listing: asked by name
    ks_mon=$(ks_key_of mon.) || zc_fail "mon." "cannot read its key"
    [ "$(ks_type "$ks_mon")" != aes ] || echo mon. >>"$zcc_tmp/insecure"
    ks_mon=
    sort -u "$zcc_tmp/insecure" >"$zcc_tmp/insecure.sorted"
    mv -- "$zcc_tmp/insecure.sorted" "$zcc_tmp/insecure"
    rm -f -- "$zcc_tmp/auth-ls"
}

# ks_mon_set NAME VALUE: one monmap auth setting.
ks_mon_set() {
    zcc_ceph mon set "$1" "$2" >/dev/null 2>&1 || zc_fail "monmap" "ceph mon set $1 $2"
    zc_log "monmap" "$1 = $2"
}

# ks_tell ENTITY COMMAND: `ceph tell ENTITY COMMAND` with the pending key as its input; its
# errors indented on stderr. Returns its status.
ks_tell() {
    zcc_ceph tell "$1" "$2" -i "$zcc_tmp/pending.key" >/dev/null 2>"$zcc_tmp/tell.err" && return 0
    sed 's/^/  /' "$zcc_tmp/tell.err" >&2
    return 1
}

# ks_rotate_daemon ENTITY: a pending AES-256 key (the preferred cipher's) handed to the running
# daemon as its bare key (an OSD first stores it in its bluestore label), then committed. A mgr
# or mds that does not take it (a standby mgr) gets the new key in the cluster only; its pod's
# keyring init writes it at the next start: said so. Returns 1 when an OSD does not take it
# (pending key cleared: the OSD keeps its old key, in the cluster and in its label).
ks_rotate_daemon() {
    (umask 077 && zcc_ceph auth get-or-create-pending "$1" --format json >"$zcc_tmp/pending.json" 2>/dev/null) ||
        zc_fail "$1" "ceph auth get-or-create-pending"
    (umask 077 && printf '%s' "$(sed -n 's/.*"pending_key": *"\([A-Za-z0-9+/=]*\)".*/\1/p' "$zcc_tmp/pending.json")" >"$zcc_tmp/pending.key")
    rm -f -- "$zcc_tmp/pending.json"
    [ -s "$zcc_tmp/pending.key" ] || zc_fail "$1" "no pending key in the answer of get-or-create-pending"
    ks_rd_ok=1
    case $1 in
        osd.*) ks_tell "$1" rotate-stored-key || ks_rd_ok=0 ;;
    esac
    [ "$ks_rd_ok" = 0 ] || ks_tell "$1" rotate-key || ks_rd_ok=0
    rm -f -- "$zcc_tmp/pending.key"
    if [ "$ks_rd_ok" = 1 ]; then
        # the daemon's next authentication commits it; committed here so that it holds now
        zcc_ceph auth commit-pending "$1" >/dev/null 2>&1 || true
        [ "$(ks_type "$(ks_key_of "$1")")" = aes256k ] || zc_fail "$1" "still holds an AES-128 key after taking the new one"
        zc_log "$1" "AES-128 key rotated to AES-256 (the running daemon took it)"
        return 0
    fi
    zcc_ceph auth clear-pending "$1" >/dev/null 2>&1 || true
    case $1 in
        osd.*)
            zc_refuse "$1" "did not take a new key (not running?); it keeps its AES-128 key"
            return 1
            ;;
    esac
    zcc_ceph auth rotate "$1" --key_type aes256k >/dev/null 2>&1 || zc_fail "$1" "ceph auth rotate"
    zc_log "$1" "AES-128 key rotated to AES-256 in the cluster; the running daemon did not take it: restart its pod now (its keyring init writes the new key)"
}

# ks_daemons: see the header.
ks_daemons() {
    ks_mon_set auth_service_cipher aes256k
    ks_mon_set auth_preferred_cipher aes256k
    ks_failed=
    ks_insecure
    while IFS= read -r ks_e; do
        case $ks_e in
            mgr.* | mds.* | osd.*) ks_rotate_daemon "$ks_e" || ks_failed="$ks_failed $ks_e" ;;
            client.bootstrap-mds | client.bootstrap-mgr | client.bootstrap-rbd | client.bootstrap-rbd-mirror | client.bootstrap-rgw)
                zcc_ceph auth rotate "$ks_e" --key_type aes256k >/dev/null 2>&1 || zc_fail "$ks_e" "ceph auth rotate"
                zc_log "$ks_e" "AES-128 key rotated to AES-256 (Ceph's own, unused by the program)"
                ;;
        esac
    done <"$zcc_tmp/insecure"
    zcc_ceph auth wipe-rotating-service-keys >/dev/null 2>&1 || zc_fail "auth" "ceph auth wipe-rotating-service-keys"
    zc_log "auth" "rotating service keys made again as AES-256"
    [ -z "$ks_failed" ] || zc_die "auth" "not rotated:$ks_failed; start them and run again"
}

# ks_finish: see the header.
ks_finish() {
    ks_insecure
    ks_left=$(tr '\n' ' ' <"$zcc_tmp/insecure")
    [ -z "$ks_left" ] || zc_die "auth" "AES-128 keys left: ${ks_left% }; the mons still accept them"
    ks_mon_set auth_allowed_ciphers aes256k
}

zcc_private_dir
case ${1:-} in
    daemons)
        [ $# -eq 1 ] || zcc_usage "$ks_usage"
        ks_daemons
        ;;
    finish)
        [ $# -eq 1 ] || zcc_usage "$ks_usage"
        ks_finish
        ;;
    replace)
        [ $# -ge 3 ] || zcc_usage "$ks_usage"
        ks_r_entity=$2
        ks_r_role=$3
        ks_r_file=
        ks_r_fs=
        shift 3
        while [ $# -gt 0 ]; do
            case $1 in
                --key-file) zcc_need_value "$1" "${2:-}"; ks_r_file=$2; shift 2 ;;
                --fs) zcc_need_value "$1" "${2:-}"; ks_r_fs=$2; shift 2 ;;
                --admin-key-file) zcc_need_value "$1" "${2:-}"; ks_admin_key_file "$2"; shift 2 ;;
                *) zcc_usage "$ks_usage" ;;
            esac
        done
        [ -n "$ks_r_file" ] || zcc_usage "$ks_usage"
        ks_replace "$ks_r_entity" "$ks_r_role" "$ks_r_file" "$ks_r_fs"
        ;;
    *) zcc_usage "$ks_usage" ;;
esac
