#!/bin/sh
# cephfs-kube.sh: what the local scripts that act through a CephFS storage's admin pods share
# (the OSD drain, cephfs-osd-remove.sh; the health gates, cephfs-gate.sh): kubectl against the
# cluster the stack's Kubernetes provider uses, and a Ceph script set read with the storage's
# shared library from their immutable ConfigMaps. Sourced (or prepended) by them; defines functions only.
# The caller sets ck_ns (namespace), ck_ctx (--context), ck_kcfg (--kubeconfig file),
# ck_kcfg_env (1: the kubeconfig's content is in $ZCLOUD_DRAIN_KUBECONFIG), ck_unchanged (what
# a refusal leaves unchanged, e.g. "nothing was drained or deleted") and defines
# ck_die MESSAGE [EXIT] and ck_usage.
# shellcheck disable=SC2154 # ck_ns, ck_ctx, ck_kcfg, ck_kcfg_env, ck_unchanged: the caller's

ck_kfile=''

# ck_kube_target: sets the kubectl options of the provider's cluster, or refuses.
ck_kube_target() {
    if [ -z "$ck_ctx" ] && [ -z "$ck_kcfg" ] && [ "$ck_kcfg_env" = 0 ]; then
        ck_die "cannot tell which Kubernetes cluster the stack's provider uses (neither kubernetes:context nor kubernetes:kubeconfig is set); refusing to run kubectl against its current context - set one of them and run again; $ck_unchanged"
    fi
    ck_kfile=$ck_kcfg
    if [ "$ck_kcfg_env" = 1 ]; then
        [ -z "$ck_kcfg" ] || ck_usage
        [ -n "${ZCLOUD_DRAIN_KUBECONFIG:-}" ] || ck_die "--kubeconfig-from-env but ZCLOUD_DRAIN_KUBECONFIG is empty; $ck_unchanged"
        ck_kfile=$(umask 077 && mktemp "${TMPDIR:-/tmp}/zcloud-kubeconfig.XXXXXX") || ck_die "cannot create a private kubeconfig file"
        # shellcheck disable=SC2064 # expand now: fixed path
        trap "rm -f -- '$ck_kfile'" EXIT
        printf '%s\n' "$ZCLOUD_DRAIN_KUBECONFIG" >"$ck_kfile"
    fi
    command -v kubectl >/dev/null 2>&1 || ck_die "kubectl is not installed where pulumi runs; $ck_unchanged"
}

# ck_kubectl ARGS...: kubectl in the storage's namespace of the provider's cluster.
ck_kubectl() {
    set -- --namespace "$ck_ns" "$@"
    [ -z "$ck_kfile" ] || set -- --kubeconfig "$ck_kfile" "$@"
    [ -z "$ck_ctx" ] || set -- --context "$ck_ctx" "$@"
    kubectl "$@"
}

# ck_script_set CONFIGMAP SCRIPT WHOSE: prints the script set SCRIPT of its ConfigMap, or refuses
# (never skips: a step that cannot run changes nothing). WHOSE names it in the refusal.
ck_script_set() {
    ck_ss_key=$(printf '%s' "$2" | sed 's/\./\\./g')
    ck_ss_text=$(ck_kubectl get configmap "$1" --output "jsonpath={.data.$ck_ss_key}") ||
        ck_die "cannot read $3 script set, ConfigMap $1 (see above); $ck_unchanged"
    [ -n "$ck_ss_text" ] || ck_die "ConfigMap $1 holds no $2; $ck_unchanged"
    printf '%s\n' "$ck_ss_text"
}

# ck_ceph_set CONFIGMAP SCRIPT LIBRARY WHOSE: prints what a Ceph script set runs as: the library
# (ConfigMap LIBRARY, key ceph-library.sh), then the set SCRIPT of its ConfigMap, each checked
# against the id its ConfigMap's name ends with (the first 12 hex digits of its sha256); a
# missing, empty or altered one refuses.
ck_ceph_set() {
    ck_cs_lib=$(ck_script_set "$3" ceph-library.sh "$4 library") || exit $?
    ck_cs_set=$(ck_script_set "$1" "$2" "$4") || exit $?
    ck_checked "$3" "$ck_cs_lib" "$4 library"
    ck_checked "$1" "$ck_cs_set" "$4"
    printf '%s\n%s\n' "$ck_cs_lib" "$ck_cs_set"
}

# ck_checked CONFIGMAP TEXT WHOSE: refuses unless TEXT's sha256 starts with the id CONFIGMAP's
# name ends with.
ck_checked() {
    ck_ck_sum=$(printf '%s\n' "$2" | { sha256sum 2>/dev/null || shasum -a 256; })
    case $ck_ck_sum in
        "${1##*-}"*) ;;
        *) ck_die "ConfigMap $1 does not hold $3 script set ${1##*-} (altered); $ck_unchanged" ;;
    esac
}
