#!/usr/bin/env bash
# A Kubernetes cluster of real nodes on this machine: the engine tier's control plane, a local
# image registry and namespace nodes, each with its own containerd, kubelet and kube-proxy.
#
# Usage:
#   bash test/nodes/cluster.sh start <dir> <node>...   control plane, registry, bridge, the nodes;
#        returns once every node is Ready. Writes <dir>/kubeconfig; logs in <dir>/logs.
#   bash test/nodes/cluster.sh guests <dir> <node>...   guest nodes (QEMU guests the caller boots):
#        their taps, routes and bundles of files (test/nodes/guests.sh)
#   bash test/nodes/cluster.sh stop <dir>               ends every node and process start began
#        (also after a failed start), removes the bridge and the nodes' cgroups.
#   bash test/nodes/cluster.sh restart <dir> <node> kubelet|containerd|kube-proxy
#   bash test/nodes/cluster.sh reboot <dir> <node>      the node's PID 1 killed (every process of the
#        node with it, its /run gone), then the node started again on its persistent directories.
#   bash test/nodes/cluster.sh udev <dir>               every node's udev database written again (after
#        block devices were made): no udevd runs on this machine, and ceph-volume refuses a device
#        without /run/udev/data/b<major>:<minor>. Each device gets the properties of its kernel
#        uevent, as udevd would record them before its rules add more.
#
# A node is a PID, mount, UTS, IPC and network namespace whose PID 1 is test/nodes/pause. Its
# /var/lib and /var/log are directories of its own under <dir>/nodes/<node> (kubelet, containerd,
# and the hostPaths the program renders are per node at their rendered paths), /run is a tmpfs of
# its own; /tmp (where <dir> may be), /dev, /sys and the cgroup mounts are the machine's, and so is
# the rest of its root (/lib/modules is made if the machine lacks it, and removed by stop). Its
# eth0 is a veth on the bridge zcn0 (10.250.0.1/24 on this machine; node i is 10.250.0.(10+i));
# pods get 10.245.i.0/24. Kubelet pods go under the caller's own memory cgroup, in
# <it>/zcloud-nodes/<node> of every cgroup v1 hierarchy.
#
# Needs on PATH (source the env file test/engine/build-tools.sh prints): the control plane's
# binaries, kubelet, kube-proxy, containerd, containerd-shim-runc-v2, runc, crane; and nsenter,
# unshare, ip, nft, openssl, curl, go.
# Env: ZCLOUD_NODES_CACHE  pause and registry blobs (default $HOME/.cache/zcloud-storage/nodes)
#      ZCLOUD_NODES_TIMEOUT seconds a node gets to become Ready (default 120)
# shellcheck disable=SC2016 # the scripts run in a node expand their own arguments
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${ZCLOUD_NODES_CACHE:-$HOME/.cache/zcloud-storage/nodes}
timeout_s=${ZCLOUD_NODES_TIMEOUT:-120}
bridge=zcn0
host_ip=10.250.0.1
registry=$host_ip:5000
cluster_cidr=10.245.0.0/16

die() { echo "nodes: $*" >&2; exit 1; }
# shellcheck source=test/nodes/guests.sh
. "$here/guests.sh"
say() { echo "nodes: $*"; }

# Index i of the i-th node given to start (1-based), as recorded in <dir>/nodes/<node>/index.
node_index() { cat "$dir/nodes/$1/index"; }
node_ip() { echo "10.250.0.$(( 10 + $(node_index "$1") ))"; }
node_pod_cidr() { echo "10.245.$(node_index "$1").0/24"; }
node_pid() { cat "$dir/pids/$1.node"; }
# Runs a command in every namespace of a node, with the node's own /proc.
in_node() { node=$1; shift; nsenter -t "$(node_pid "$node")" -m -u -i -n -p -- "$@"; }

# The pid of the process <launcher> (unshare, nsenter) forks to run <program>, once it runs it.
forked_child() { # <launcher pid> <program path>
  for _ in $(seq 100); do
    children=()
    # no newline at the end of that file: read fills the array and returns 1
    read -r -a children 2>/dev/null <"/proc/$1/task/$1/children" || true
    for child in "${children[@]}"; do
      [ "$(readlink "/proc/$child/exe" 2>/dev/null)" != "$2" ] || { echo "$child"; return 0; }
    done
    sleep 0.1
  done
  return 1
}

# ---- the pause program (also the image's) and the registry -----------------------------------

pause_binary() {
  sum=$(cat "$here/pause/main.go" "$here/pause/go.mod" | sha256sum | cut -c1-12)
  out=$cache/pause-$sum/pause
  if [ ! -x "$out" ]; then
    mkdir -p "$(dirname "$out")"
    (cd "$here/pause" && CGO_ENABLED=0 GOFLAGS='' go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# The sandbox image: the pause program alone, pushed to the registry as zcloud/pause:<sum>.
pause_image() {
  bin=$(pause_binary)
  tag=$(basename "$(dirname "$bin")"); tag=${tag#pause-}
  ref=$registry/zcloud/pause:$tag
  layer=$dir/pause-layer.tar
  tar -C "$(dirname "$bin")" --owner 0 --group 0 -cf "$layer" pause
  crane append --oci-empty-base --new_layer "$layer" --new_tag "$ref" --insecure >/dev/null 2>>"$dir/logs/images.log"
  crane mutate --entrypoint /pause --user 65535:65535 --insecure "$ref" >/dev/null 2>>"$dir/logs/images.log"
  echo "$ref"
}

registry_up() { curl -fsS "http://$registry/v2/" >/dev/null; }

start_registry() {
  mkdir -p "$cache/registry"
  crane registry serve --address "$registry" --disk "$cache/registry" >"$dir/logs/registry.log" 2>&1 &
  echo $! >"$dir/pids/registry"
  await registry registry_up
}

# Polls <check...> once a second until it succeeds; fails naming what it waited for.
await() {
  what=$1; shift
  deadline=$(( $(date +%s) + timeout_s ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$what not ready within ${timeout_s}s (logs in $dir/logs)"
    sleep 1
  done
}

# ---- host network ------------------------------------------------------------------------------

start_bridge() {
  ! ip link show "$bridge" >/dev/null 2>&1 || die "bridge $bridge exists already (another cluster, or a stop that did not run: bash test/nodes/cluster.sh stop <its dir>)"
  ip route get "$host_ip" 2>/dev/null | grep -q "dev lo" && die "$host_ip is an address of this machine already"
  ip link add "$bridge" type bridge
  echo "$bridge" >"$dir/bridge"
  ip addr add "$host_ip/24" dev "$bridge"
  ip link set "$bridge" up
}

# A node's root is this machine's: what a node always has and this machine lacks is made here,
# recorded, and removed by stop. /lib/modules: kernel modules' directory (this machine's kernel
# has none); ceph-csi's node plugin mounts it as a hostPath of type Directory.
host_fixups() {
  if [ ! -e /lib/modules ]; then
    mkdir /lib/modules
    echo /lib/modules >>"$dir/made-dirs"
  fi
}

undo_host_fixups() {
  [ -f "$dir/made-dirs" ] || return 0
  while read -r made; do rmdir "$made" 2>/dev/null || say "left $made (not empty)"; done <"$dir/made-dirs"
  rm -f "$dir/made-dirs"
}

# ---- one node ----------------------------------------------------------------------------------

# The cgroup the node's pods go under, relative to every hierarchy's root.
node_cgroup() { echo "$(cat "$dir/cgroup-parent")/zcloud-nodes/$1"; }

make_cgroups() {
  for hierarchy in /sys/fs/cgroup/*/; do
    [ -f "$hierarchy/tasks" ] || continue
    path=$hierarchy$(node_cgroup "$1")
    mkdir -p "$path"
    # A new cpuset cgroup has no CPUs and no memory nodes: each level copies its parent's.
    if [ -f "$hierarchy/cpuset.cpus" ]; then
      sub=$hierarchy
      for part in $(node_cgroup "$1" | tr / ' '); do
        sub=$sub/$part
        [ -n "$(cat "$sub/cpuset.cpus")" ] || cat "$(dirname "$sub")/cpuset.cpus" >"$sub/cpuset.cpus"
        [ -n "$(cat "$sub/cpuset.mems")" ] || cat "$(dirname "$sub")/cpuset.mems" >"$sub/cpuset.mems"
      done
    fi
  done
}

# remove_cgroup_tree <path under each hierarchy>: every cgroup there, deepest first (their
# processes must be gone; a killed one may take a moment to leave).
remove_cgroup_tree() {
  for hierarchy in /sys/fs/cgroup/*/; do
    top=$hierarchy$1
    for _ in $(seq 20); do
      [ -d "$top" ] || break
      find "$top" -depth -type d -exec rmdir {} + 2>/dev/null || sleep 0.1
    done
    [ ! -d "$top" ] || say "left cgroup $top (processes still in it)"
  done
}

remove_cgroups() {
  [ -f "$dir/cgroup-parent" ] || return 0
  remove_cgroup_tree "$(cat "$dir/cgroup-parent")/zcloud-nodes"
}

# The files the kubelet's protectKernelDefaults checks, bound over the node's /proc/sys with the
# values it wants: the kubelet neither fails nor writes the machine's own settings.
kernel_defaults() {
  nd=$1
  mkdir -p "$nd/sysctl"
  printf '1\n' >"$nd/sysctl/vm.overcommit_memory"
  printf '0\n' >"$nd/sysctl/vm.panic_on_oom"
  printf '10\n' >"$nd/sysctl/kernel.panic"
  printf '1\n' >"$nd/sysctl/kernel.panic_on_oops"
  printf '1000000\n' >"$nd/sysctl/kernel.keys.root_maxkeys"
  printf '25000000\n' >"$nd/sysctl/kernel.keys.root_maxbytes"
}

# Starts the node's namespaces with pause as PID 1 and mounts its private directories.
start_namespaces() {
  node=$1 nd=$dir/nodes/$1
  mkdir -p "$nd/var-lib" "$nd/var-log"
  pause=$(pause_binary)
  setsid unshare --pid --fork --mount --uts --ipc --net --mount-proc --propagation private -- \
    "$pause" </dev/null >/dev/null 2>&1 &
  pid=$(forked_child $! "$pause") || die "node $node: its namespaces did not start"
  echo "$pid" >"$dir/pids/$node.node"
  in_node "$node" sh -c '
    set -e
    nd=$1
    hostname "$2"
    mount --make-rshared /
    mount --bind "$nd/var-lib" /var/lib
    mount --bind "$nd/var-log" /var/log
    mount -t tmpfs -o mode=0755 zcn-run /run
    for file in "$nd"/sysctl/*; do
      mount --bind "$file" "/proc/sys/$(basename "$file" | tr . /)"
    done
  ' sh "$nd" "$node"
}

start_network() {
  node=$1 i=$(node_index "$1")
  ip link add "zcn0-n$i" type veth peer name eth0 netns "$(node_pid "$node")"
  ip link set "zcn0-n$i" master "$bridge" up
  ip route replace "$(node_pod_cidr "$node")" via "$(node_ip "$node")" dev "$bridge"
  in_node "$node" sh -c '
    set -e
    ip link set lo up
    ip addr add "$1/24" dev eth0
    ip link set eth0 up
    ip route add default via "$2"
    echo 1 >/proc/sys/net/ipv4/ip_forward
  ' sh "$(node_ip "$node")" "$host_ip"
}

# Routes from each node to every other node's pods.
route_pods() {
  for node in "$@"; do
    for other in "$@"; do
      [ "$other" != "$node" ] || continue
      in_node "$node" ip route add "$(node_pod_cidr "$other")" via "$(node_ip "$other")"
    done
  done
}

# containerd's config and its registry hosts (certs.d) in <dir>, for a node whose containerd finds
# them at <config dir>, runs <runc> with systemd cgroups or not, and CNI plugins of <cni bin dir>
# with configs in <cni conf dir>.
containerd_files() { # <dir> <pause ref> <config dir> <runc> <systemd cgroup: true|false> <cni bin dir> <cni conf dir>
  out=$1 pause_ref=$2 config_dir=$3 runc=$4 systemd_cgroup=$5 cni_bin=$6 cni_conf=$7
  mkdir -p "$out/certs.d/$registry"
  cat >"$out/certs.d/$registry/hosts.toml" <<EOF
server = "http://$registry"
[host."http://$registry"]
  capabilities = ["pull", "resolve"]
EOF
  cat >"$out/containerd.toml" <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$pause_ref"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$config_dir/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  tolerate_missing_hugetlb_controller = true
  # no CAP_SYS_RESOURCE on this machine: the pause container's -998 would fail; capped at containerd's own
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      BinaryName = "$runc"
      SystemdCgroup = $systemd_cgroup
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$cni_bin"]
    conf_dir = "$cni_conf"
EOF
}

# The pod network of a node: a bridge with the node's pod /24, as <file>.
cni_conflist() { # <file> <node>
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "zcloud-pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(node_pod_cidr "$2")"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "/var/lib/cni/networks"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
}

write_containerd_config() {
  node=$1 nd=$dir/nodes/$1
  containerd_files "$nd" "$2" "$nd" "$(command -v runc)" false "$(dirname "$(command -v bridge)")" "$nd/cni"
  cni_conflist "$nd/cni/10-zcloud.conflist" "$node"
}

# A kubeconfig for <user> with a certificate of <subject>, signed by the cluster CA.
client_kubeconfig() { # <file> <name> <subject>
  file=$1 name=$2 subject=$3 pki=$dir/cp/pki
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  server=$(kubectl --kubeconfig "$dir/cp/kubeconfig" config view -o jsonpath='{.clusters[0].cluster.server}')
  server=https://$host_ip:${server##*:}
  kubectl config set-cluster nodes --kubeconfig "$file" --server "$server" \
    --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  kubectl config set-credentials "$name" --kubeconfig "$file" --client-certificate "$pki/$name.crt" \
    --client-key "$pki/$name.key" --embed-certs >/dev/null
  kubectl config set-context nodes --kubeconfig "$file" --cluster nodes --user "$name" >/dev/null
  kubectl config use-context nodes --kubeconfig "$file" >/dev/null
}

write_kubelet_config() {
  node=$1 nd=$dir/nodes/$1
  client_kubeconfig "$nd/kubelet.kubeconfig" "kubelet-$node" "/O=system:nodes/CN=system:node:$node"
  cat >"$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 machine: deprecated in 1.35, refused unless said
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$(node_cgroup "$node")
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
protectKernelDefaults: true
# every node shares one disk: no eviction or image GC on its fill level
evictionHard: {nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
resolvConf: ""
serializeImagePulls: false
shutdownGracePeriod: 0s
# volume stats (kubelet_volume_stats_*) every 10 s, not every minute: the monitoring test's alerts
# follow a volume's fill within seconds
volumeStatsAggPeriod: 10s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/cp/pki/ca.crt}
authorization: {mode: Webhook}
EOF
}

# kube-proxy's config for <node>, with its kubeconfig at <kubeconfig> (as the node sees it).
kube_proxy_yaml() { # <file> <node> <kubeconfig>
  cat >"$1" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: $cluster_cidr
detectLocalMode: ClusterCIDR
hostnameOverride: $2
clientConnection: {kubeconfig: $3}
# nf_conntrack_max is machine-wide on namespace nodes: left as it is
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
}

write_kube_proxy_config() {
  node=$1 nd=$dir/nodes/$1
  client_kubeconfig "$nd/kube-proxy.kubeconfig" "kube-proxy-$node" "/CN=system:kube-proxy"
  kube_proxy_yaml "$nd/kube-proxy.yaml" "$node" "$nd/kube-proxy.kubeconfig"
}

# Starts one of a node's daemons in the node, its output in logs/<node>-<daemon>.log; records the
# daemon's own pid (nsenter forks it into the node's PID namespace and only waits for it).
launch_daemon() { # <node> <daemon> <command...>
  node=$1 daemon=$2; shift 2
  nsenter -t "$(node_pid "$node")" -m -u -i -n -p -- "$@" >>"$dir/logs/$node-$daemon.log" 2>&1 </dev/null &
  pid=$(forked_child $! "$(command -v "$1")") || die "$daemon on $node did not start (see $dir/logs/$node-$daemon.log)"
  echo "$pid" >"$dir/pids/$node.$daemon"
}

kubelet_healthy() { in_node "$1" curl -fsS http://127.0.0.1:10248/healthz; }
containerd_up() { in_node "$1" ctr --address /run/containerd/containerd.sock version; }

start_containerd() {
  launch_daemon "$1" containerd containerd --config "$dir/nodes/$1/containerd.toml"
  await "containerd on $1" containerd_up "$1"
}

start_kubelet() {
  launch_daemon "$1" kubelet kubelet --config "$dir/nodes/$1/kubelet.yaml" \
    --kubeconfig "$dir/nodes/$1/kubelet.kubeconfig" --hostname-override "$1" --node-ip "$(node_ip "$1")"
  await "kubelet on $1" kubelet_healthy "$1"
}

start_kube_proxy() {
  launch_daemon "$1" kube-proxy kube-proxy --config "$dir/nodes/$1/kube-proxy.yaml"
}

start_daemons() {
  start_containerd "$1"
  start_kubelet "$1"
  start_kube_proxy "$1"
}

node_ready() {
  [ "$(kubectl --kubeconfig "$dir/kubeconfig" get node "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# Writes the node's /run/udev/data from the kernel's uevent of every block device.
write_udev_data() {
  in_node "$1" sh -c '
    mkdir -p /run/udev/data
    for dev in /sys/class/block/*; do
      uevent=$(cat "$dev/uevent" 2>/dev/null) || continue
      major=$(printf "%s\n" "$uevent" | sed -n "s/^MAJOR=//p")
      minor=$(printf "%s\n" "$uevent" | sed -n "s/^MINOR=//p")
      [ -n "$major" ] && [ -n "$minor" ] || continue
      printf "%s\n" "$uevent" | sed -n "s/^\(.*=.*\)$/E:\1/p" >"/run/udev/data/b$major:$minor"
    done'
}

start_node() {
  start_namespaces "$1"
  start_network "$1"
  make_cgroups "$1"
  write_udev_data "$1"
  start_daemons "$1"
}

# ---- start, stop, restart, reboot --------------------------------------------------------------

stop_if_failed() {
  status=$?
  [ "$status" -eq 0 ] || stop
  exit "$status"
}

start() {
  [ ! -e "$dir/pids" ] || die "$dir holds a cluster already (stop it first)"
  for bin in kubelet kube-proxy containerd containerd-shim-runc-v2 runc crane bridge host-local nsenter unshare ip nft openssl curl go; do
    command -v "$bin" >/dev/null || die "$bin is not on PATH (source the env file test/engine/build-tools.sh prints)"
  done
  mkdir -p "$dir/logs" "$dir/pids" "$dir/nodes"
  trap stop_if_failed EXIT
  began=$(date +%s)
  sed -n 's/^[0-9]*:memory:\///p' /proc/self/cgroup >"$dir/cgroup-parent"
  start_bridge
  host_fixups
  ZCLOUD_CONTROLPLANE_ADDRESS=$host_ip bash "$here/../engine/controlplane.sh" start "$dir/cp" >"$dir/logs/controlplane.log"
  ln -sf cp/kubeconfig "$dir/kubeconfig"
  start_registry
  pause_ref=$(pause_image)
  i=0
  for node in "$@"; do
    i=$(( i + 1 ))
    mkdir -p "$dir/nodes/$node"
    echo "$i" >"$dir/nodes/$node/index"
    kernel_defaults "$dir/nodes/$node"
    write_containerd_config "$node" "$pause_ref"
    write_kubelet_config "$node"
    write_kube_proxy_config "$node"
  done
  for node in "$@"; do start_node "$node"; done
  route_pods "$@"
  : >"$dir/node-names"
  for node in "$@"; do echo "$node" >>"$dir/node-names"; done
  for node in "$@"; do await "node $node Ready" node_ready "$node"; done
  say "$# node(s) Ready in $(( $(date +%s) - began ))s: $*"
  say "kubeconfig $dir/kubeconfig"
}

# Ends a pid recorded as <dir>/pids/<name>: TERM, then KILL after 10 s.
end_pid() {
  file=$dir/pids/$1
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

# The node's PID 1 killed: the kernel kills every other process of its PID namespace, and its
# mount and network namespaces (mounts, veth, pod network) go with them.
end_node() {
  node=$1
  file=$dir/pids/$node.node
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$dir/pids/$node".*
}

stop() {
  [ -d "$dir/pids" ] || { say "nothing to stop in $dir"; return 0; }
  for file in "$dir"/pids/*.node; do
    [ -e "$file" ] || continue
    name=$(basename "$file" .node)
    end_node "$name"
  done
  end_pid registry
  [ ! -d "$dir/cp" ] || bash "$here/../engine/controlplane.sh" stop "$dir/cp" >>"$dir/logs/controlplane.log" 2>&1 || true
  remove_cgroups
  remove_guest_taps
  undo_host_fixups
  if [ -f "$dir/bridge" ]; then
    ip link del "$(cat "$dir/bridge")" 2>/dev/null || true
    rm -f "$dir/bridge"
  fi
  rmdir "$dir/pids" 2>/dev/null || say "left $dir/pids: $(ls "$dir/pids")"
  say "stopped"
}

restart() {
  node=$1 daemon=$2
  case "$daemon" in
    containerd|kubelet|kube-proxy) ;;
    *) die "unknown daemon $daemon (kubelet, containerd, kube-proxy)" ;;
  esac
  end_pid "$node.$daemon"
  "start_$(echo "$daemon" | tr - _)" "$node"
  say "$daemon restarted on $node"
}

reboot() {
  node=$1
  end_node "$node"
  # a machine boots with no cgroups of its old pods (the kubelet's cAdvisor would try each)
  remove_cgroup_tree "$(node_cgroup "$node")"
  start_node "$node"
  mapfile -t nodes <"$dir/node-names"
  for other in "${nodes[@]}"; do
    [ "$other" = "$node" ] || in_node "$node" ip route add "$(node_pod_cidr "$other")" via "$(node_ip "$other")"
  done
  say "$node started again"
}

main() {
  [ $# -ge 2 ] || die "usage: cluster.sh start|guests|stop|restart|reboot|udev <dir> ..."
  cmd=$1
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  shift 2
  case "$cmd" in
    start) start "$@" ;;
    stop) stop ;;
    restart) [ $# -eq 2 ] || die "usage: cluster.sh restart <dir> <node> kubelet|containerd|kube-proxy"; restart "$@" ;;
    reboot) [ $# -eq 1 ] || die "usage: cluster.sh reboot <dir> <node>"; reboot "$1" ;;
    guests) guests "$@" ;;
    udev) mapfile -t nodes <"$dir/node-names"; for node in "${nodes[@]}"; do write_udev_data "$node"; done ;;
    *) die "unknown command $cmd (start, guests, stop, restart, reboot, udev)" ;;
  esac
}

main "$@"
