#!/bin/sh
# Run in a guest of the nodes tier (over SSH, as `sh -s`): installs the bundle cluster.sh guests
# wrote for it (the 9p share `zcnconf`) under /etc and starts its units: the programs' 9p mount,
# the bridge address and pod routes, containerd, kubelet, kube-proxy. The units are enabled, so a
# reboot starts them again.
set -eu

install_bundle() {
  mkdir -p /opt/zcnode/bin /run/zcnconf
  mount -t 9p -o trans=virtio,version=9p2000.L,ro zcnconf /run/zcnconf
  cp -R /run/zcnconf/etc/. /etc/
  umount /run/zcnconf
  chmod 600 /etc/kubernetes/*.kubeconfig
}

start_units() {
  systemctl daemon-reload
  systemctl enable --now opt-zcnode-bin.mount zcloud-node-net.service containerd.service kubelet.service kube-proxy.service
}

install_bundle
start_units
echo "guest-node: $(hostname): units started"
