#!/usr/bin/env bash
# A Kubernetes control plane on 127.0.0.1 with kwok standing in for kubelets.
#
# Usage:
#   bash test/engine/controlplane.sh start <dir>           etcd, kube-apiserver (RBAC+Node authz,
#        privileged pods allowed as in kubeadm clusters, client-certificate admin),
#        kube-controller-manager, kube-scheduler and kwok, each on a free 127.0.0.1 port, and the
#        snapshot CRDs of cluster-crds.yaml; writes <dir>/kubeconfig; logs in <dir>/logs, pids in
#        <dir>/pids.
#   bash test/engine/controlplane.sh add-node <dir> <name>... Nodes managed by kwok, all created,
#        then waited Ready.
#   bash test/engine/controlplane.sh stop <dir>            ends every process start began (also
#        after a failed start); removes nothing outside <dir>.
# Needs on PATH: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok,
# openssl, node (source the env file test/engine/build-tools.sh prints).
# Env: ZCLOUD_CONTROLPLANE_TIMEOUT  seconds each component gets to become ready (default 60).
#      ZCLOUD_CONTROLPLANE_ADDRESS  an address of this machine the API server also listens on and
#        advertises (the `kubernetes` Service's endpoint), for real kubelets and pods on other
#        network namespaces (test/nodes); default none: 127.0.0.1 only.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
timeout_s=${ZCLOUD_CONTROLPLANE_TIMEOUT:-60}
address=${ZCLOUD_CONTROLPLANE_ADDRESS:-}

die() { echo "controlplane: $*" >&2; exit 1; }
say() { echo "controlplane: $*"; }

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# Runs a component in the background, its output in logs/<name>.log, its pid in pids/<name>.
launch() {
  name=$1; shift
  "$@" >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name"
}

# Polls <check...> once a second until it succeeds; fails naming the component and its log.
await() {
  name=$1; shift
  deadline=$(( $(date +%s) + timeout_s ))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$dir/pids/$name")" 2>/dev/null ||
      die "$name exited before it was ready; last lines of $dir/logs/$name.log:
$(tail -n 15 "$dir/logs/$name.log")"
    [ "$(date +%s)" -lt "$deadline" ] ||
      die "$name not ready within ${timeout_s}s; last lines of $dir/logs/$name.log:
$(tail -n 15 "$dir/logs/$name.log")"
    sleep 1
  done
  say "$name ready"
}

# A certificate signed by the cluster CA: <name> <subject> [subjectAltName].
issue_cert() {
  name=$1 subject=$2 san=${3:-}
  pki=$dir/pki
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  ext=$pki/$name.ext
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >"$ext"
  [ -z "$san" ] || echo "subjectAltName=$san" >>"$ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
}

make_pki() {
  pki=$dir/pki
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=zcloud-engine-ca" \
    -days 2 -out "$pki/ca.crt" 2>/dev/null
  # 10.0.2.2: how a QEMU guest of the VM tier (user-mode network) reaches this machine's 127.0.0.1.
  # 10.96.0.1: the `kubernetes` Service's ClusterIP, which pods on real nodes dial.
  issue_cert apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:10.0.2.2,IP:10.96.0.1,${address:+IP:$address,}DNS:localhost,DNS:kubernetes.default.svc"
  issue_cert admin "/O=system:masters/CN=zcloud-admin"
  # The API server's client certificate towards kubelets (exec, logs, port-forward).
  issue_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

write_kubeconfig() {
  kc=$dir/kubeconfig
  kubectl config set-cluster engine --kubeconfig "$kc" --server "https://127.0.0.1:$1" \
    --certificate-authority "$dir/pki/ca.crt" --embed-certs >/dev/null
  kubectl config set-credentials admin --kubeconfig "$kc" --client-certificate "$dir/pki/admin.crt" \
    --client-key "$dir/pki/admin.key" --embed-certs >/dev/null
  kubectl config set-context engine --kubeconfig "$kc" --cluster engine --user admin >/dev/null
  kubectl config use-context engine --kubeconfig "$kc" >/dev/null
}

api_ready() { kubectl --kubeconfig "$dir/kubeconfig" get --raw /readyz; }
http_ok() { curl -fsS "$1"; }
https_ok() { curl -fsSk "$1"; }
default_sa_exists() { kubectl --kubeconfig "$dir/kubeconfig" -n default get serviceaccount default; }

start_etcd() {
  client=$(free_port) peer=$(free_port)
  launch etcd etcd --name engine --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "engine=http://127.0.0.1:$peer" --log-outputs stderr
  await etcd http_ok "http://127.0.0.1:$client/health"
  etcd_url=http://127.0.0.1:$client
}

start_apiserver() {
  api_port=$(free_port)
  pki=$dir/pki
  bind=127.0.0.1 kubelet_address=()
  # Real kubelets: reached at their node's address (their names resolve nowhere).
  [ -z "$address" ] || { bind=0.0.0.0; kubelet_address=(--kubelet-preferred-address-types InternalIP); }
  write_kubeconfig "$api_port"
  launch kube-apiserver kube-apiserver --etcd-servers "$etcd_url" \
    --bind-address "$bind" --advertise-address "${address:-127.0.0.1}" \
    --secure-port "$api_port" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" "${kubelet_address[@]}" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
    --enable-admission-plugins NodeRestriction --cert-dir "$pki/apiserver-generated" \
    --allow-privileged=true
  await kube-apiserver api_ready
}

# The CRDs a cluster with volume snapshots brings (cluster-crds.yaml), served before start returns.
create_cluster_crds() {
  kubectl --kubeconfig "$dir/kubeconfig" apply -f "$here/cluster-crds.yaml" >/dev/null
  kubectl --kubeconfig "$dir/kubeconfig" wait --for condition=Established --timeout "${timeout_s}s" \
    crd/volumesnapshotclasses.snapshot.storage.k8s.io >/dev/null
  say "cluster CRDs established"
}

start_controller_manager() {
  port=$(free_port)
  launch kube-controller-manager kube-controller-manager --kubeconfig "$dir/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$port" --leader-elect=false \
    --service-account-private-key-file "$dir/pki/sa.key" --root-ca-file "$dir/pki/ca.crt" \
    --use-service-account-credentials --cert-dir "$dir/pki/kcm-generated"
  await kube-controller-manager https_ok "https://127.0.0.1:$port/healthz"
  await kube-controller-manager default_sa_exists
}

start_scheduler() {
  port=$(free_port)
  launch kube-scheduler kube-scheduler --kubeconfig "$dir/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$port" --leader-elect=false
  await kube-scheduler https_ok "https://127.0.0.1:$port/healthz"
}

start_kwok() {
  port=$(free_port)
  launch kwok kwok --kubeconfig "$dir/kubeconfig" --config "$here/kwok-stages.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --server-address "127.0.0.1:$port" --node-ip 127.0.0.1 --cidr 10.244.0.1/16
  await kwok http_ok "http://127.0.0.1:$port/healthz"
}

stop_if_failed() {
  status=$?
  [ "$status" -eq 0 ] || stop
  exit "$status"
}

start() {
  [ ! -e "$dir/pids" ] || die "$dir already holds a control plane (stop it first)"
  for bin in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok openssl node curl; do
    command -v "$bin" >/dev/null || die "$bin is not on PATH (source the env file build-tools.sh prints)"
  done
  mkdir -p "$dir/logs" "$dir/pids"
  # A start that fails part-way ends what it had started.
  trap stop_if_failed EXIT
  make_pki
  start_etcd
  start_apiserver
  create_cluster_crds
  start_controller_manager
  start_scheduler
  start_kwok
  say "kubeconfig $dir/kubeconfig"
}

node_ready() {
  [ "$(kubectl --kubeconfig "$dir/kubeconfig" get node "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# create_node NAME: the Node as a kubelet registers it, unless it exists.
create_node() {
  # Created as a kubelet registers a node: no client-side apply annotation (a server-side apply by
  # the label commands would take over that apply's fields and drop them; they refuse such nodes).
  kubectl --kubeconfig "$dir/kubeconfig" get node "$1" >/dev/null 2>&1 ||
    kubectl --kubeconfig "$dir/kubeconfig" create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: $1, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
EOF
}

# add_nodes NAME...: creates every node first, then waits for each to be Ready (kwok readies them
# together), all within one timeout.
add_nodes() {
  [ -f "$dir/kubeconfig" ] || die "no control plane in $dir (start it first)"
  for name in "$@"; do
    create_node "$name"
  done
  deadline=$(( $(date +%s) + timeout_s ))
  for name in "$@"; do
    until node_ready "$name"; do
      [ "$(date +%s)" -lt "$deadline" ] || die "node $name not Ready within ${timeout_s}s (see $dir/logs/kwok.log)"
      sleep 1
    done
  done
  say "$# node(s) Ready: $1${2:+ ... ${*: -1}}"
}

# Sends TERM to the named components at once; KILL to any still running 10 s later.
stop_group() {
  running=""
  for name in "$@"; do
    pidfile=$dir/pids/$name
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    ! kill -TERM "$pid" 2>/dev/null || running="$running $pid:$name"
    rm -f "$pidfile"
  done
  for entry in $running; do
    pid=${entry%%:*}
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -KILL "$pid" 2>/dev/null; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    say "stopped ${entry#*:} ($pid)"
  done
}

# The API server's clients first, then the API server, then etcd (it needs etcd to shut down).
stop() {
  [ -d "$dir/pids" ] || { say "nothing to stop in $dir"; return 0; }
  stop_group kwok kube-scheduler kube-controller-manager
  stop_group kube-apiserver
  stop_group etcd
  rmdir "$dir/pids"
}

main() {
  [ $# -ge 2 ] || die "usage: controlplane.sh start|stop <dir> | add-node <dir> <name>..."
  cmd=$1 dir=$2
  case "$cmd" in
    start)
      mkdir -p "$dir"
      dir=$(cd "$dir" && pwd)
      start ;;
    stop) stop ;;
    add-node)
      [ $# -ge 3 ] || die "usage: controlplane.sh add-node <dir> <name>..."
      shift 2
      add_nodes "$@" ;;
    *) die "unknown command $cmd (start, stop, add-node)" ;;
  esac
}

main "$@"
