# shellcheck shell=sh
# Runs a local script set of a CephFS storage where `pulumi up` runs (its health gates, its OSD
# drains): sh -c "$stub" NAME CONFIGMAP SHA256 [ARGS...]. The set (cephfs-kube.sh + NAME.sh) lives
# in the storage's immutable ConfigMap CONFIGMAP, key NAME.sh, named by its hash; the command
# carries only this stub (comments and indentation dropped). It reads the set with kubectl from
# the cluster ARGS name (--namespace with --context, --kubeconfig or --kubeconfig-from-env: the
# kubeconfig's content in $ZCLOUD_DRAIN_KUBECONFIG, never in argv), checks its sha256 and runs it
# as NAME ARGS. No cluster named, a missing, empty or altered set: a refusal before anything runs
# (a delete never skips a drain).
set -eu
name=$0 cm=$1 sum=$2
shift 2
ns="" ctx="" kcfg="" env="" prev=""
for a; do
	[ "$a" != -- ] || break
	case $prev in --namespace) ns=$a ;; --context) ctx=$a ;; --kubeconfig) kcfg=$a ;; esac
	[ "$a" != --kubeconfig-from-env ] || env=1
	prev=$a
done
die() {
	echo "zcloud: $name: refused: $1; nothing was run" >&2
	exit 1
}
[ -n "$ctx$kcfg$env" ] || die "cannot tell which Kubernetes cluster the stack's provider uses (neither kubernetes:context nor kubernetes:kubeconfig is set)"
if [ -n "$env" ]; then
	kcfg=$(umask 077 && mktemp "${TMPDIR:-/tmp}/zcloud-kubeconfig.XXXXXX")
	trap 'rm -f -- "$kcfg"' EXIT
	printf "%s\n" "${ZCLOUD_DRAIN_KUBECONFIG:?}" >"$kcfg"
fi
get() {
	set -- --namespace "$ns" get configmap "$cm" --output "jsonpath={.data.$name\\.sh}"
	[ -z "$kcfg" ] || set -- --kubeconfig "$kcfg" "$@"
	[ -z "$ctx" ] || set -- --context "$ctx" "$@"
	kubectl "$@"
}
text=$(get) || die "cannot read its script set, ConfigMap $cm (see above)"
[ -n "$text" ] || die "ConfigMap $cm holds no $name.sh"
got=$(printf "%s\n" "$text" | { sha256sum 2>/dev/null || shasum -a 256; })
[ "${got%% *}" = "$sum" ] || die "ConfigMap $cm does not hold script set $sum (altered)"
[ -z "$env" ] || rm -f -- "$kcfg"
trap - EXIT
exec sh -c "$text" "$name" "$@"
