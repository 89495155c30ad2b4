#!/bin/bash
# fake-kubectl.sh: `kubectl` for the Ceph tier's run of the planned OSD drain and gates (their
# stub, components/node/run-script-set.sh, then cephfs-osd-remove.sh / cephfs-gate.sh), which
# have no API server to talk to. It answers only the calls they make, records every argv, and
# plays Kubernetes' part against the test cluster:
#   get configmap <name> --output jsonpath={.data.<key>\.sh} (ceph-osd-drain, cephfs-osd-remove,
#                                       ceph-gate, cephfs-gate, ceph-library)
#                                    -> the content of $ZCLOUD_TEST_CONFIGMAPS/<name>/<key>.sh
#                                       (the planned ConfigMap); none: NotFound, as the API says
#   get pods ...                     -> the one admin pod, $ZCLOUD_TEST_ADMIN_POD
#   get node <name> --output jsonpath={.metadata.annotations.<key>}
#                                    -> the content of $ZCLOUD_TEST_NODES/<name> (the node's
#                                       devices annotation); no such file: fails as an API
#                                       error would (the annotation cannot be read)
#   exec [-n <ns>] <pod> -- <argv>           -> <argv> in the test cluster's namespace with the admin
#                                       container's env (file $ZCLOUD_TEST_ADMIN_ENV, NAME=VALUE
#                                       lines), as `kubectl exec` runs it in the pod
#   get deployment <name> ...        -> deployment.apps/<name> while $ZCLOUD_TEST_PODS/<name> exists
#   scale deployment <name> --replicas=0 -> SIGTERM to the pid in $ZCLOUD_TEST_PODS/<name>
#   wait --for=delete pod --selector storage.zcloud.io/ceph-osd=<name> --timeout <n>s
#                                    -> waits (bounded) until that pid is gone
# Record: $ZCLOUD_TEST_KUBECTL_LOG gets, per call, the argument count and the arguments, each
# NUL-terminated. Anything else exits 1 with a message.
set -eu

log=${ZCLOUD_TEST_KUBECTL_LOG:?}
printf '%s\0' "$#" "$@" >>"$log"

while [ $# -gt 0 ]; do
    case $1 in
        --context | --namespace | --kubeconfig) shift 2 ;;
        *) break ;;
    esac
done

# status's `exec -n <namespace> <pod> -- ...`: the namespace after the verb
if [ "${1:-}" = exec ] && { [ "${2:-}" = -n ] || [ "${2:-}" = --namespace ]; }; then
    set -- exec "${@:4}"
fi

die() {
    echo "fake kubectl: $*" >&2
    exit 1
}

case "${1:-} ${2:-}" in
    "get configmap")
        case "${4:-} ${5:-}" in
            "--output jsonpath={.data.ceph-osd-drain\.sh}") key=ceph-osd-drain.sh ;;
            "--output jsonpath={.data.cephfs-osd-remove\.sh}") key=cephfs-osd-remove.sh ;;
            "--output jsonpath={.data.ceph-gate\.sh}") key=ceph-gate.sh ;;
            "--output jsonpath={.data.cephfs-gate\.sh}") key=cephfs-gate.sh ;;
            "--output jsonpath={.data.ceph-mon-remove\.sh}") key=ceph-mon-remove.sh ;;
            "--output jsonpath={.data.cephfs-mon-remove\.sh}") key=cephfs-mon-remove.sh ;;
            "--output jsonpath={.data.ceph-library\.sh}") key=ceph-library.sh ;;
            *) die "get configmap: unexpected $*" ;;
        esac
        [ -e "$ZCLOUD_TEST_CONFIGMAPS/$3/$key" ] || { echo "Error from server (NotFound): configmaps \"$3\" not found" >&2; exit 1; }
        cat "$ZCLOUD_TEST_CONFIGMAPS/$3/$key"
        ;;
    "get pods")
        printf '%s' "$ZCLOUD_TEST_ADMIN_POD"
        ;;
    "get node")
        if [ "${4:-}" != --output ] || [ "${5:-}" != 'jsonpath={.metadata.annotations.storage\.zcloud\.io/cephfs-devices}' ]; then
            die "get node: unexpected $*"
        fi
        [ -e "$ZCLOUD_TEST_NODES/$3" ] || { echo "Error from server: cannot read node $3" >&2; exit 1; }
        cat "$ZCLOUD_TEST_NODES/$3"
        ;;
    "exec $ZCLOUD_TEST_ADMIN_POD")
        shift 2
        [ "${1:-}" = "--" ] || die "exec without --"
        shift
        mapfile -t env_lines <"$ZCLOUD_TEST_ADMIN_ENV"
        exec nsenter -t "$ZCLOUD_TEST_NSPID" -m -n -r -w -- env -i "${env_lines[@]}" "$@"
        ;;
    "get deployment")
        [ -e "$ZCLOUD_TEST_PODS/$3" ] && printf 'deployment.apps/%s\n' "$3"
        exit 0
        ;;
    "scale deployment")
        [ "${4:-}" = "--replicas=0" ] || die "scale: only --replicas=0"
        [ -e "$ZCLOUD_TEST_PODS/$3" ] || die "scale: no deployment $3"
        kill -TERM "$(cat "$ZCLOUD_TEST_PODS/$3")" 2>/dev/null || true
        echo "deployment.apps/$3 scaled"
        ;;
    "wait --for=delete")
        if [ "${3:-}" != pod ] || [ "${4:-}" != --selector ] || [ "${6:-}" != --timeout ]; then
            die "wait: unexpected $*"
        fi
        name=${5#storage.zcloud.io/ceph-osd=}
        secs=${7%s}
        [ -e "$ZCLOUD_TEST_PODS/$name" ] || exit 0
        pid=$(cat "$ZCLOUD_TEST_PODS/$name")
        end=$((SECONDS + secs))
        while kill -0 "$pid" 2>/dev/null; do
            [ "$SECONDS" -lt "$end" ] || exit 1
            sleep 0.5
        done
        rm -f "$ZCLOUD_TEST_PODS/$name"
        ;;
    *) die "unexpected call: $*" ;;
esac
