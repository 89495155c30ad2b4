#!/bin/sh
# ceph-mon-init.sh --id <mon-id> --mon <id>=<addr> [--mon <id>=<addr>]... --initial <id>[,<id>]... [--allow-aes-keys]
#
# The init step of one monitor: creates its store only when absent and never changes an
# existing one (but for its keyring's mon. key, AES-128 replaced by the Secret's AES-256 key: a
# rotation; and its owner, when the image's ceph user has another uid). <addr> is a bare IP
# (the mon's Service ClusterIP; ports 3300/6789) or a full
# address vector such as [v2:10.0.0.5:3300,v1:10.0.0.5:6789]. Every mon of the current config is
# listed, this one included. --initial names the mons that may start a new cluster (the program
# renders the first mon in placement order): only they ever get a store with an initial monmap,
# and that monmap holds only them. Before creating a store the script asks the other listed mons
# (admin key, bounded by ZCLOUD_CEPH_TIMEOUT) for the quorum:
#   a quorum answers          -> join: mkfs with the cluster's current monmap; the daemon then
#                                asks the quorum to add it (never `ceph mon add` here: see mi_join)
#   none, this mon is initial -> create the cluster's first store (monmap: the initial mons)
#   none, not initial         -> refuse, exit 3: never a second quorum on fresh stores
# --allow-aes-keys: a new cluster's first monmap (Ceph 20 and later) accepts AES-128 (`aes`) keys
# beside AES-256 (`aes256k`): the program renders it when the CSI user's key is AES-128, the type
# every kernel CephFS client reads. An existing store is never changed by it.
# Store: $ZCLOUD_CEPH_DATA/mon/ceph-<mon-id>.
# Keys: $ZCLOUD_CEPH_KEYS/mon, admin and, optional, bootstrap-osd (bare keys, from a Secret).
# Output: one line per decision. Exit: 0 done or left untouched, 1 refused, 2 usage, 3 no quorum
# answered and this mon may not start a cluster (the pod restarts and asks again).
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

mi_usage="ceph-mon-init.sh --id <mon-id> --mon <id>=<addr> [--mon <id>=<addr>]... --initial <id>[,<id>]... [--allow-aes-keys]"

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

# mi_match_owner DIR: a store written under another uid or gid than this image's ceph user (an
# image built elsewhere: Debian's ceph is 64045, quay.io's 167) is handed to that user, whom the
# daemon runs as; nothing in it is changed. Also completes an earlier hand-over cut short.
# Returns 1 when nothing was done.
mi_match_owner() {
    mi_mo_ids=$(id -u "$ZCLOUD_CEPH_USER" 2>/dev/null):$(id -g "$ZCLOUD_CEPH_USER" 2>/dev/null) || return 1
    mi_mo_other=$(find "$1" \( ! -user "${mi_mo_ids%:*}" -o ! -group "${mi_mo_ids#*:}" \) -print -quit)
    [ -n "$mi_mo_other" ] || return 1
    mi_mo_was=$(stat -c %u:%g -- "$mi_mo_other")
    zcc_chown "$1"
    zc_log "mon.$mi_id" "store at $1 was owned by $mi_mo_was, not by this image's $ZCLOUD_CEPH_USER user ($mi_mo_ids): handed to it"
}

# mi_check_existing DIR FSID: an existing store is left as it is (but for its owner, see
# mi_match_owner); one that zcloud created for another cluster (its zcloud-fsid marker differs)
# is refused, because the mon would not join.
mi_check_existing() {
    if [ -r "$1/zcloud-fsid" ]; then
        IFS= read -r mi_ce_fsid <"$1/zcloud-fsid" || true
        if [ "$mi_ce_fsid" != "$2" ]; then
            zc_die "mon.$mi_id" "store $1 belongs to cluster $mi_ce_fsid, not $2; not touching it"
        fi
    fi
    mi_ce_but=
    if mi_match_owner "$1"; then mi_ce_but=" but for its owner"; fi
    if mi_refresh_keyring "$1"; then
        zc_log "mon.$mi_id" "store exists at $1; its keyring's AES-128 mon. key replaced by the Secret's AES-256 one"
        return 0
    fi
    zc_log "mon.$mi_id" "store exists at $1; left untouched$mi_ce_but"
}

# mi_refresh_keyring DIR: the store's keyring gets the Secret's mon. key only when it holds an
# AES-128 key and the Secret an AES-256 one (a rotation, docs/cephfs.md "Key rotation": the
# cluster's mon. entity got that key first). Returns 1 when nothing was written.
mi_refresh_keyring() {
    [ -r "$1/keyring" ] || return 1
    mi_rk_have=$(sed -n 's/^[[:space:]]*key = //p' "$1/keyring" | head -n 1)
    mi_rk_new=$(zcc_read_key "$(zcc_key_file mon)")
    # AES-128 keys are base64 `AQ...` (type 1), AES-256 ones `Ag...` (type 2)
    case $mi_rk_have/$mi_rk_new in
        AQ*/Ag*) ;;
        *) return 1 ;;
    esac
    (umask 077 && zcc_keyring_entry mon. "$mi_rk_new" mon "" >"$1/keyring.new")
    zcc_chown "$1/keyring.new"
    mv -- "$1/keyring.new" "$1/keyring"
}

# mi_is_initial ID: whether ID is one of the --initial mons.
mi_is_initial() {
    case ",$mi_initial," in
        *",$1,"*) return 0 ;;
        *) return 1 ;;
    esac
}

# mi_legacy_keys: true when the mon key from the Secret is AES-128 (type 1: base64 `AQ`).
mi_legacy_keys() {
    case $(zcc_read_key "$(zcc_key_file mon)") in
        AQ*) return 0 ;;
        *) return 1 ;;
    esac
}

# mi_allows_aes: true when the new monmap must accept AES-128 keys: asked (--allow-aes-keys, an
# AES-128 CSI key) or the mon key itself is AES-128 (an older program's keys).
mi_allows_aes() {
    [ "$mi_allow_aes" = yes ] || mi_legacy_keys
}

# mi_monmap FILE FSID: the initial monmap: the listed mons that are initial, nothing else.
mi_monmap() {
    set -- --create --fsid "$2" "$1"
    set -f # address vectors look like glob brackets
    for mi_mm in $mi_mons; do
        if mi_is_initial "${mi_mm%%=*}"; then
            set -- "$@" --addv "${mi_mm%%=*}" "$(mi_addrvec "${mi_mm#*=}")"
        fi
    done
    set +f
    # Ceph 20 monmaps name the ciphers the mons accept, aes256k only by default. AES-128 keys
    # (`aes`, `AQ...`: an older program's, or the CSI user's): then allow both (older monmaptool
    # has no such option and takes aes). Only AES-256 keys (`Ag...`): the secure default.
    if mi_allows_aes && monmaptool --help 2>&1 | grep -q -e --auth-allowed-ciphers; then
        set -- "$@" --auth-allowed-ciphers aes,aes256k
    fi
    monmaptool "$@" >/dev/null || zc_fail "mon.$mi_id" "monmaptool could not build the monmap"
}

# mi_mkfs_keyring FILE [join]: mon., client.admin and (when its Secret file is there)
# client.bootstrap-osd keys with their caps, mode 0600, keys via printf. A new monitor store
# otherwise gets a bootstrap-osd key of its own that nobody knows. A joining mon gets mon. only:
# the cluster's auth database comes from its peers.
mi_mkfs_keyring() {
    mi_mk_mon=$(zcc_read_key "$(zcc_key_file mon)")
    (umask 077 && zcc_keyring_entry mon. "$mi_mk_mon" mon "" >"$1")
    [ "${2:-}" != join ] || return 0
    mi_mk_admin=$(zcc_read_key "$(zcc_key_file admin)")
    mi_mk_osd=
    if [ -e "$(zcc_key_file bootstrap-osd)" ]; then
        mi_mk_osd=$(zcc_read_key "$(zcc_key_file bootstrap-osd)")
    fi
    (
        umask 077
        zcc_keyring_entry client.admin "$mi_mk_admin" admin "" >>"$1"
        if [ -n "$mi_mk_osd" ]; then
            zcc_keyring_entry client.bootstrap-osd "$mi_mk_osd" bootstrap-osd "" >>"$1"
        fi
    )
}

# mi_mkfs DIR FSID MONMAP KEYRING: mkfs into a sibling directory, then move it in place: never
# half a store.
mi_mkfs() {
    mi_mf_new="$(dirname -- "$1")/.ceph-$mi_id.new"
    rm -rf -- "$mi_mf_new"
    mkdir -p -- "$mi_mf_new"
    if ! ceph-mon --conf "$CEPH_CONF" --cluster ceph --mkfs --id "$mi_id" --mon-data "$mi_mf_new" \
        --monmap "$3" --keyring "$4" >"$zcc_tmp/mkfs.log" 2>&1; then
        sed 's/^/  /' "$zcc_tmp/mkfs.log" >&2
        rm -rf -- "$mi_mf_new"
        zc_fail "mon.$mi_id" "ceph-mon --mkfs"
    fi
    # The store's own keyring needs only the mon. key; never leave the admin key on the host.
    (umask 077 && zcc_keyring_entry mon. "$mi_mk_mon" mon "" >"$mi_mf_new/keyring")
    printf '%s\n' "$2" >"$mi_mf_new/zcloud-fsid"
    zcc_chown "$mi_mf_new"
    [ ! -d "$1" ] || rmdir -- "$1"
    mv -- "$mi_mf_new" "$1"
}

# mi_create DIR FSID: the cluster's first store, with the initial monmap.
mi_create() {
    mi_monmap "$zcc_tmp/monmap" "$2"
    mi_mkfs_keyring "$zcc_tmp/keyring"
    mi_mkfs "$1" "$2" "$zcc_tmp/monmap" "$zcc_tmp/keyring"
    zc_log "mon.$mi_id" "created store at $1 for cluster $2 (initial monmap: $mi_initial)"
}

# mi_others: the -m value of the listed mons other than this one (empty when there are none).
mi_others() {
    mi_ot=
    set -f
    for mi_mm in $mi_mons; do
        if [ "${mi_mm%%=*}" != "$mi_id" ]; then
            mi_ot="$mi_ot${mi_ot:+,}$(mi_addrvec "${mi_mm#*=}")"
        fi
    done
    set +f
    printf '%s\n' "$mi_ot"
}

# mi_quorum: asks the other listed mons for the quorum (bounded); succeeds when one answers.
# A mon out of quorum answers no command, so an answer means a running cluster.
mi_quorum() {
    [ -n "$mi_peers" ] || return 1
    zcc_ceph -m "$mi_peers" quorum_status >"$zcc_tmp/quorum" 2>"$zcc_tmp/quorum.err"
}

# mi_check_join_addr ADDRVEC: a joining mon is added at the address its daemon announces, its
# --public-addr IP with the default ports (v2 3300, v1 6789); an address vector in another form
# could never be the one it joins with: refused.
mi_check_join_addr() {
    mi_bi=${1#\[v2:}
    mi_bi=${mi_bi%%:3300,*}
    mi_bi=${mi_bi#\[}
    mi_bi=${mi_bi%\]}
    if [ "$(mi_addrvec "$mi_bi")" != "$1" ]; then
        zc_die "mon.$mi_id" "cannot join with address vector $1: only [v2:<ip>:3300,v1:<ip>:6789] can be added"
    fi
}

# mi_map_addr MONMAP ID: this mon's address vector in a monmap (ports without nonce), or nothing.
mi_map_addr() {
    monmaptool --print "$1" 2>/dev/null |
        awk -v m="mon.$2" '$NF == m { a = $2; gsub(/\/[0-9]+/, "", a); print a; exit }'
}

# mi_join DIR FSID: the cluster runs: a store from its current monmap (mon. key only); already
# in that map at this address: nothing more; at another address: refused. A mon not in the map
# is not added here: its daemon, once it runs, finds the quorum and asks the leader to add it at
# its public address (Ceph's own join; docs.ceph.com "Adding a Monitor (Manual)"). Adding it
# first (`ceph mon add` before the daemon ran) made the map need the mon for a quorum before it
# ran, and then the leader and the new mon started their elections in the same instant and
# timed out together, round after round: minutes without a quorum (docs/cephfs.md, "Mons").
mi_join() {
    mi_jn_addr=$(mi_addrvec "$mi_addr")
    mi_check_join_addr "$mi_jn_addr"
    zcc_ceph -m "$mi_peers" mon getmap -o "$zcc_tmp/monmap" >/dev/null 2>"$zcc_tmp/getmap.err" ||
        zc_fail "mon.$mi_id" "ceph mon getmap: $(tail -n 1 "$zcc_tmp/getmap.err")"
    mi_jn_fsid=$(monmaptool --print "$zcc_tmp/monmap" | awk '$1 == "fsid" { print $2; exit }')
    [ "$mi_jn_fsid" = "$2" ] ||
        zc_die "mon.$mi_id" "the mons answering are of cluster $mi_jn_fsid, not $2; not joining"
    mi_jn_have=$(mi_map_addr "$zcc_tmp/monmap" "$mi_id")
    if [ -n "$mi_jn_have" ] && [ "$mi_jn_have" != "$mi_jn_addr" ]; then
        zc_die "mon.$mi_id" "is in the monmap at $mi_jn_have, not $mi_jn_addr; not joining"
    fi
    mi_mkfs_keyring "$zcc_tmp/keyring" join
    mi_mkfs "$1" "$2" "$zcc_tmp/monmap" "$zcc_tmp/keyring"
    zc_log "mon.$mi_id" "created store at $1 from the monmap of running cluster $2"
    if [ -n "$mi_jn_have" ]; then
        zc_log "mon.$mi_id" "already in the monmap at $mi_jn_have"
        return 0
    fi
    zc_log "mon.$mi_id" "not in the monmap yet; the daemon asks the quorum to add it at $mi_jn_addr"
}

# mi_addr_of ID: the listed address of mon ID.
mi_addr_of() {
    set -f
    for mi_ao in $mi_mons; do
        if [ "${mi_ao%%=*}" = "$1" ]; then
            printf '%s\n' "${mi_ao#*=}"
        fi
    done
    set +f
}

# mi_check_initial: every --initial mon is a valid, listed mon.
mi_check_initial() {
    mi_ci_old_ifs=$IFS
    IFS=,
    set -f
    for mi_ci in $mi_initial; do
        mi_valid_id "$mi_ci"
        if [ -z "$(IFS=$mi_ci_old_ifs && mi_addr_of "$mi_ci")" ]; then
            zcc_usage "initial mon $mi_ci is not one of the listed monitors ($mi_mons)"
        fi
    done
    set +f
    IFS=$mi_ci_old_ifs
}

# mi_new_store DIR FSID: join a running cluster, start one (initial mon), or refuse (exit 3).
mi_new_store() {
    zcc_private_dir
    mi_peers=$(mi_others)
    if mi_quorum; then
        zc_log "mon.$mi_id" "a quorum of cluster $2 answered; joining it"
        mi_join "$1" "$2"
    elif mi_is_initial "$mi_id"; then
        if [ -n "$mi_peers" ]; then
            zc_log "mon.$mi_id" "no quorum answered within ${ZCLOUD_CEPH_TIMEOUT}s; initial mon starts the cluster"
        fi
        mi_create "$1" "$2"
    else
        zc_refuse "mon.$mi_id" "no quorum answered within ${ZCLOUD_CEPH_TIMEOUT}s and this mon is not initial ($mi_initial); no store created, retry later"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
}

mi_id=
mi_mons=
mi_initial=
mi_allow_aes=no
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
        --initial)
            zcc_need_value "$1" "${2:-}"
            mi_initial="$mi_initial${mi_initial:+,}$2"
            shift 2
            ;;
        --allow-aes-keys) mi_allow_aes=yes; shift ;;
        *) zcc_usage "$mi_usage" ;;
    esac
done
if [ -z "$mi_id" ] || [ -z "$mi_mons" ] || [ -z "$mi_initial" ]; then zcc_usage "$mi_usage"; fi
mi_valid_id "$mi_id"
case " $mi_mons " in
    *" $mi_id="*) ;;
    *) zc_die "mon.$mi_id" "is not in the listed monitors ($mi_mons)" ;;
esac
mi_addr=$(mi_addr_of "$mi_id")
mi_check_initial

mi_fsid=$(zcc_fsid)
mi_dir="$ZCLOUD_CEPH_DATA/mon/ceph-$mi_id"
case $(mi_store_state "$mi_dir") in
    store) mi_check_existing "$mi_dir" "$mi_fsid" ;;
    foreign) zc_die "mon.$mi_id" "$mi_dir is not empty and holds no monitor store; not touching it" ;;
    absent | empty)
        mkdir -p -- "$ZCLOUD_CEPH_DATA/mon"
        mi_new_store "$mi_dir" "$mi_fsid"
        ;;
esac
