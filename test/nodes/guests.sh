# shellcheck shell=bash
# Guest nodes of the nodes tier's cluster (sourced by cluster.sh): QEMU guests of the VM tier that
# join the cluster as nodes, for what needs a kernel of its own (device-mapper for LVM). Each guest
# gets a tap on the bridge (its eth1, 10.250.0.(10+i)), a pod /24 and a bundle of files the guest
# installs under / (test/nodes/guest-node.sh): containerd, kubelet and kube-proxy as systemd units
# with their configs and credentials, the binaries from a read-only 9p share of <dir>/guest-bin.
# Unlike a namespace node a guest is a machine of its own: cgroup v2 with systemd's driver, its own
# kernel settings and disk, so the kubelet's defaults hold except where noted.
# shellcheck disable=SC2154 # dir, bridge, host_ip, registry, cluster_cidr are cluster.sh's

# The programs a guest node runs, from PATH (the built tools) into <dir>/guest-bin.
guest_programs="kubelet kube-proxy containerd containerd-shim-runc-v2 ctr runc bridge host-local loopback portmap"

guest_bin() {
  mkdir -p "$dir/guest-bin"
  for program in $guest_programs; do
    src=$(command -v "$program") || die "$program is not on PATH"
    ln -f "$src" "$dir/guest-bin/$program" 2>/dev/null || cp "$src" "$dir/guest-bin/$program"
  done
}

guest_tap() { echo "zcn0-t$(node_index "$1")"; }

# The tap the guest's QEMU attaches, on the bridge; removed by stop.
make_guest_tap() {
  tap=$(guest_tap "$1")
  ip tuntap add "$tap" mode tap
  echo "$tap" >>"$dir/taps"
  ip link set "$tap" master "$bridge" up
}

guest_kubernetes_config() { # <etc dir> <node>
  k8s=$1/kubernetes node=$2
  mkdir -p "$k8s"
  cp "$dir/cp/pki/ca.crt" "$k8s/ca.crt"
  client_kubeconfig "$k8s/kubelet.kubeconfig" "kubelet-$node" "/O=system:nodes/CN=system:node:$node"
  client_kubeconfig "$k8s/kube-proxy.kubeconfig" "kube-proxy-$node" "/CN=system:kube-proxy"
  cat >"$k8s/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
# a small test disk: no eviction or image GC on its fill level
evictionHard: {nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
resolvConf: ""
serializeImagePulls: false
volumeStatsAggPeriod: 10s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /etc/kubernetes/ca.crt}
authorization: {mode: Webhook}
EOF
  kube_proxy_yaml "$k8s/kube-proxy.yaml" "$node" /etc/kubernetes/kube-proxy.kubeconfig
}

# The guest's units: its bridge address and routes to the other nodes' pods, then the daemons.
guest_units() { # <etc dir> <node> <every node...>
  units=$1/systemd/system node=$2
  shift 2
  mkdir -p "$units"
  routes=""
  for other in "$@"; do
    [ "$other" = "$node" ] || routes="$routes ip route replace $(node_pod_cidr "$other") via $(node_ip "$other");"
  done
  cat >"$units/zcloud-node-net.service" <<EOF
[Unit]
Description=zcloud nodes tier: the cluster bridge address and routes to the other nodes' pods
After=network-pre.target
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'ip addr replace $(node_ip "$node")/24 dev eth1 && ip link set eth1 up &&$routes sysctl -qw net.ipv4.ip_forward=1'

[Install]
WantedBy=multi-user.target
EOF
  cat >"$units/containerd.service" <<EOF
[Unit]
Description=containerd
After=zcloud-node-net.service opt-zcnode-bin.mount
Requires=opt-zcnode-bin.mount

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/opt/zcnode/bin/containerd --config /etc/containerd/config.toml
Environment=PATH=/opt/zcnode/bin:/usr/sbin:/usr/bin:/sbin:/bin
Delegate=yes
KillMode=process
Restart=always
RestartSec=2
OOMScoreAdjust=-999
LimitNOFILE=infinity

[Install]
WantedBy=multi-user.target
EOF
  cat >"$units/kubelet.service" <<EOF
[Unit]
Description=kubelet
After=containerd.service zcloud-node-net.service opt-zcnode-bin.mount
Wants=containerd.service
Requires=opt-zcnode-bin.mount

[Service]
ExecStart=/opt/zcnode/bin/kubelet --config /etc/kubernetes/kubelet.yaml --kubeconfig /etc/kubernetes/kubelet.kubeconfig --hostname-override $node --node-ip $(node_ip "$node")
Environment=PATH=/opt/zcnode/bin:/usr/sbin:/usr/bin:/sbin:/bin
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
EOF
  cat >"$units/kube-proxy.service" <<EOF
[Unit]
Description=kube-proxy
After=zcloud-node-net.service opt-zcnode-bin.mount
Requires=opt-zcnode-bin.mount

[Service]
ExecStart=/opt/zcnode/bin/kube-proxy --config /etc/kubernetes/kube-proxy.yaml
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
EOF
  cat >"$units/opt-zcnode-bin.mount" <<EOF
[Unit]
Description=the nodes tier's programs (9p, read-only)

[Mount]
What=zcnbin
Where=/opt/zcnode/bin
Type=9p
Options=trans=virtio,version=9p2000.L,ro

[Install]
WantedBy=multi-user.target
EOF
}

# guests <node>...: every guest's tap, pod route and bundle (<dir>/nodes/<node>/guest/etc, which
# the guest copies to its /etc); the programs in <dir>/guest-bin. The guests boot afterwards (the
# test's QEMU, with the taps) and install the bundles (guest-node.sh).
guests() {
  [ $# -ge 1 ] || die "usage: cluster.sh guests <dir> <node>..."
  [ -d "$dir/pids" ] || die "no cluster in $dir (cluster.sh start first)"
  pause_ref=$(pause_image)
  guest_bin
  mapfile -t namespace_nodes <"$dir/node-names"
  i=$(find "$dir/nodes" -mindepth 1 -maxdepth 1 -type d | wc -l)
  for node in "$@"; do
    [ ! -e "$dir/nodes/$node" ] || die "node $node exists already"
    i=$(( i + 1 ))
    mkdir -p "$dir/nodes/$node"
    echo "$i" >"$dir/nodes/$node/index"
    echo "$node" >>"$dir/guest-names"
    make_guest_tap "$node"
    ip route replace "$(node_pod_cidr "$node")" via "$(node_ip "$node")" dev "$bridge"
    for other in "${namespace_nodes[@]}"; do
      in_node "$other" ip route replace "$(node_pod_cidr "$node")" via "$(node_ip "$node")"
    done
  done
  for node in "$@"; do
    etc=$dir/nodes/$node/guest/etc
    mkdir -p "$etc"
    containerd_files "$etc/containerd" "$pause_ref" /etc/containerd /opt/zcnode/bin/runc true /opt/zcnode/bin /etc/cni/net.d
    mv "$etc/containerd/containerd.toml" "$etc/containerd/config.toml"
    cni_conflist "$etc/cni/net.d/10-zcloud.conflist" "$node"
    guest_kubernetes_config "$etc" "$node"
    guest_units "$etc" "$node" "${namespace_nodes[@]}" "$@"
    say "guest $node: tap $(guest_tap "$node"), $(node_ip "$node"), pods $(node_pod_cidr "$node"), bundle $dir/nodes/$node/guest"
  done
}

remove_guest_taps() {
  [ -f "$dir/taps" ] || return 0
  while read -r tap; do ip link del "$tap" 2>/dev/null || true; done <"$dir/taps"
  rm -f "$dir/taps"
}
