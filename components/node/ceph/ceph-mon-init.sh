#!/bin/sh
# ceph-mon-init.sh --id <mon-id> --mon <id>=<addr> [--mon <id>=<addr>]...
#
# The init step of one monitor: creates its store only when absent and never touches an
# existing one. <addr> is a bare IP (the mon's Service ClusterIP; ports 3300/6789) or a full
# address vector such as [v2:10.0.0.5:3300,v1:10.0.0.5:6789]. Every mon of the initial monmap is
# listed, this one included. Store: $ZCLOUD_CEPH_DATA/mon/ceph-<mon-id>.
# Keys: $ZCLOUD_CEPH_KEYS/mon, admin and, optional, bootstrap-osd (bare keys, from a Secret).
# Output: one line per decision. Exit: 0 done or left untouched, 1 refused, 2 usage.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

mi_usage="ceph-mon-init.sh --id <mon-id> --mon <id>=<addr> [--mon <id>=<addr>]..."

# mi_addrvec ADDR: the address vector monmaptool --addv takes.
mi_addrvec() {
    case $1 in
        \[*) printf '%s\n' "$1" ;;
        *:*) printf '[v2:[%s]:3300,v1:[%s]:6789]\n' "$1" "$1" ;;
        *) printf '[v2:%s:3300,v1:%s:6789]\n' "$1" "$1" ;;
    esac
}

# mi_valid_id ID: mon ids are short DNS-label-like names.
mi_valid_id() {
    case $1 in
        '' | *[!a-z0-9-]* | -*) zcc_usage "mon id '$1' must be lower-case letters, digits and -" ;;
    esac
}

# mi_store_state DIR: absent | empty | store | foreign (a non-empty directory without a store).
mi_store_state() {
    if [ ! -e "$1" ]; then
        echo absent
    elif [ -d "$1/store.db" ]; then
        echo store
    elif [ -d "$1" ] && [ -z "$(ls -A -- "$1")" ]; then
        echo empty
    else
        echo foreign
    fi
}

# mi_check_existing DIR FSID: an existing store is left untouched; one that zcloud created for
# another cluster (its zcloud-fsid marker differs) is refused, because the mon would not join.
mi_check_existing() {
    if [ -r "$1/zcloud-fsid" ]; then
        IFS= read -r mi_ce_fsid <"$1/zcloud-fsid" || true
        if [ "$mi_ce_fsid" != "$2" ]; then
            zc_die "mon.$mi_id" "store $1 belongs to cluster $mi_ce_fsid, not $2; not touching it"
        fi
    fi
    zc_log "mon.$mi_id" "store exists at $1; left untouched"
}

# mi_monmap FILE FSID: the initial monmap with every listed mon.
mi_monmap() {
    set -- --create --fsid "$2" "$1"
    set -f # address vectors look like glob brackets
    for mi_mm in $mi_mons; do
        set -- "$@" --addv "${mi_mm%%=*}" "$(mi_addrvec "${mi_mm#*=}")"
    done
    set +f
    monmaptool "$@" >/dev/null || zc_fail "mon.$mi_id" "monmaptool could not build the monmap"
}

# mi_mkfs_keyring FILE: mon., client.admin and (when its Secret file is there)
# client.bootstrap-osd keys with their caps, mode 0600, keys via printf. A new monitor store
# otherwise gets a bootstrap-osd key of its own that nobody knows.
mi_mkfs_keyring() {
    mi_mk_mon=$(zcc_read_key "$(zcc_key_file mon)")
    mi_mk_admin=$(zcc_read_key "$(zcc_key_file admin)")
    mi_mk_osd=
    if [ -e "$(zcc_key_file bootstrap-osd)" ]; then
        mi_mk_osd=$(zcc_read_key "$(zcc_key_file bootstrap-osd)")
    fi
    (
        umask 077
        zcc_keyring_entry mon. "$mi_mk_mon" mon "" >"$1"
        zcc_keyring_entry client.admin "$mi_mk_admin" admin "" >>"$1"
        if [ -n "$mi_mk_osd" ]; then
            zcc_keyring_entry client.bootstrap-osd "$mi_mk_osd" bootstrap-osd "" >>"$1"
        fi
    )
}

# mi_create DIR FSID: mkfs into a sibling directory, then move it in place: never half a store.
mi_create() {
    zcc_private_dir
    mi_cr_new="$(dirname -- "$1")/.ceph-$mi_id.new"
    rm -rf -- "$mi_cr_new"
    mkdir -p -- "$mi_cr_new"
    mi_monmap "$zcc_tmp/monmap" "$2"
    mi_mkfs_keyring "$zcc_tmp/keyring"
    if ! ceph-mon --conf "$CEPH_CONF" --cluster ceph --mkfs --id "$mi_id" --mon-data "$mi_cr_new" \
        --monmap "$zcc_tmp/monmap" --keyring "$zcc_tmp/keyring" >"$zcc_tmp/mkfs.log" 2>&1; then
        sed 's/^/  /' "$zcc_tmp/mkfs.log" >&2
        rm -rf -- "$mi_cr_new"
        zc_fail "mon.$mi_id" "ceph-mon --mkfs"
    fi
    # The store's own keyring needs only the mon. key; never leave the admin key on the host.
    (umask 077 && zcc_keyring_entry mon. "$mi_mk_mon" mon "" >"$mi_cr_new/keyring")
    printf '%s\n' "$2" >"$mi_cr_new/zcloud-fsid"
    zcc_chown "$mi_cr_new"
    [ ! -d "$1" ] || rmdir -- "$1"
    mv -- "$mi_cr_new" "$1"
    zc_log "mon.$mi_id" "created store at $1 for cluster $2 (monmap: $mi_mons)"
}

mi_id=
mi_mons=
while [ $# -gt 0 ]; do
    case $1 in
        --id) zcc_need_value "$1" "${2:-}"; mi_id=$2; shift 2 ;;
        --mon)
            zcc_need_value "$1" "${2:-}"
            case $2 in *=?*) ;; *) zcc_usage "$mi_usage" ;; esac
            mi_valid_id "${2%%=*}"
            mi_mons="$mi_mons${mi_mons:+ }$2"
            shift 2
            ;;
        *) zcc_usage "$mi_usage" ;;
    esac
done
if [ -z "$mi_id" ] || [ -z "$mi_mons" ]; then zcc_usage "$mi_usage"; fi
mi_valid_id "$mi_id"
case " $mi_mons " in
    *" $mi_id="*) ;;
    *) zc_die "mon.$mi_id" "is not in the listed monitors ($mi_mons)" ;;
esac

mi_fsid=$(zcc_fsid)
mi_dir="$ZCLOUD_CEPH_DATA/mon/ceph-$mi_id"
case $(mi_store_state "$mi_dir") in
    store) mi_check_existing "$mi_dir" "$mi_fsid" ;;
    foreign) zc_die "mon.$mi_id" "$mi_dir is not empty and holds no monitor store; not touching it" ;;
    absent | empty)
        mkdir -p -- "$ZCLOUD_CEPH_DATA/mon"
        mi_create "$mi_dir" "$mi_fsid"
        ;;
esac
