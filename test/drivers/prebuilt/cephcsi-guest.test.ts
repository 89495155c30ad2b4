/**
 * drivers-prebuilt tier: ceph-csi's CephFS node plugin as rendered, in a guest that reboots, with
 * the kernel CephFS client (the production default; this host has no `ceph` module, bookworm's
 * 6.1 kernel has).
 *
 * The binary is handed in: ZCLOUD_CEPHCSI_BIN (cephcsi built with cgo against the Ceph tier's
 * 20.2.4 libraries; test/drivers/README.md). The Ceph tier's cluster runs on this host (its namespace,
 * test/ceph/cluster.ts) and the provisioner pod's csi-cephfsplugin runs there as in
 * cephcsi.test.ts. The node plugin runs in a QEMU guest (test/vm/harness.ts):
 *
 * - Network: a tap device of this host, moved into the cluster's network namespace with
 *   10.241.7.1/24, is the guest's eth1 (10.241.7.2/24, a route to the mon's ClusterIP through
 *   10.241.7.1). The daemons other than the mon bind to 10.241.7.1 (`public_addr` of this test),
 *   the mon keeps its ClusterIP, so the maps carry addresses the guest reaches; the guest's
 *   user-mode network carries only SSH.
 * - The image: the Ceph tier's sid chroot shared read-only over 9p (the libraries cephcsi is
 *   linked against), under a tmpfs overlay, plus the cephcsi binary and the guest's kmod as
 *   `modprobe` (the cephcsi image has one, the chroot has none).
 * - The pod: test/drivers/guestPod.ts puts every volume mount of the rendered node DaemonSet's
 *   csi-cephfsplugin container in place (host paths of the guest, the rendered ConfigMaps) and
 *   runs cephcsi chrooted with the rendered args and env. That script and the CSI calls stand in
 *   for the container runtime and the kubelet; node-driver-registrar does not run (the calls
 *   reach the plugin's socket over an SSH forward, not through the kubelet's registration).
 *
 * The CSI user's key reaches the guest only in CSI calls' secrets (from a file here, over the
 * forwarded socket) and, for the mount by hand, through the SSH session's stdin into a file.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChildProcess, execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CephTestCluster } from "../../ceph/cluster";
import { tierRoot } from "../../ceph/release";
import { CephPlan } from "../../ceph/planned";
import { csiCephUser } from "../../../components/cephfs/cluster";
import { csiSecretData } from "../../../components/cephfs/csi";
import { Guest, GuestSet, bootGuests } from "../../vm/harness";
import { cephFsPluginContainer, downwardEnv, expandedArgs } from "../cephFs";
import { CephCsiRig, DRIVER, FS, GiB, NODES, bootCephCsi, configMapData } from "./cephCsiRig";
import { guestPodScript } from "../guestPod";
import { copyIntoGuest, guestUntil, socketFromGuest } from "../guestFiles";
import { csiCallProgram } from "../programs";
import { handedIn } from "./handedIn";

const NODE = "cephnode";
const NET = { host: "10.241.7.1", guest: "10.241.7.2", prefix: 24 };
/** The container's PATH (the image's). */
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const podDir = "/run/zc-pod/nodeplugin";
const root = `${podDir}/root`;
const pluginSocket = "/var/lib/kubelet/plugins/cephfs.csi.ceph.com/csi.sock";
/** Where the kubelet stages and publishes a CSI volume (its own paths, on the node's disk). */
const staging = "/var/lib/kubelet/plugins/kubernetes.io/csi/cephfs.csi.ceph.com/0f3c9b7e5d2a/globalmount";
const target = "/var/lib/kubelet/pods/5b1f0c7e-guest-reboot/volumes/kubernetes.io~csi/pvc-guest-0001/mount";

function sh(cmd: string, args: string[]): string {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("drivers-prebuilt: ceph-csi's CephFS node plugin in a guest that reboots, kernel client", { timeout: 1_800_000 }, () => {
    let rig: CephCsiRig | undefined;
    let c: CephTestCluster | undefined;
    let vms: GuestSet | undefined;
    let g: Guest;
    let plan: CephPlan;
    let tap = "";
    let work = "";
    let secretsFile = "";
    let controller = "";
    let volumeId = "";
    let context: string[] = [];
    let sum = "";
    const forwards: ChildProcess[] = [];

    function csiCall(socket: string, call: string, flags: string[]): Promise<any> {
        return new Promise((resolve, reject) => {
            execFile(csiCallProgram(), [`-endpoint=unix://${socket}`, `-secrets=${secretsFile}`, "-fs=", ...flags, call], { timeout: 300_000 }, (err, stdout, stderr) => {
                if (err) reject(new Error(`csi-call ${call}: ${err.message}\n${stderr}`));
                else resolve(JSON.parse(stdout || "{}"));
            });
        });
    }

    /** The kubelet and the runtime start the DaemonSet's pod: the rendered csi-cephfsplugin in the guest; its socket here. */
    async function startNodePlugin(tag: string): Promise<string> {
        const pod = rig!.nodePluginPod();
        const ctr = cephFsPluginContainer(pod, "nodeplugin");
        const env = downwardEnv(ctr, "nodeplugin", NODE);
        const configMaps = Object.fromEntries([`${DRIVER}-config`, `${DRIVER}-ceph-conf`].map((r) => Object.values(configMapData(plan, r))));
        const script = guestPodScript(pod, ctr, {
            dir: podDir,
            imageTag: "cephimage",
            imageFiles: { "/usr/local/bin/cephcsi": "/opt/zc-image/cephcsi", "/usr/sbin/modprobe": "/usr/bin/kmod" },
            configMaps,
            env: { PATH: imagePath, ...env },
            argv: ["/usr/local/bin/cephcsi", ...expandedArgs(ctr, env, "nodeplugin")],
        });
        await g.check("sh -s", { stdin: script });
        // Listening, not the socket file: a reboot leaves the old one on the kubelet's disk.
        await guestUntil(g, `grep -q 'Listening for connections on address' ${podDir}/log`, 90_000, `tail -n 30 ${podDir}/log`);
        return socketFromGuest(g, path.join(work, `node-${tag}.sock`), pluginSocket, forwards);
    }

    before(async () => {
        const bin = handedIn("ZCLOUD_CEPHCSI_BIN", "a cephcsi");
        work = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-cephguest-"));
        tap = `zcg${process.pid % 100000}`;
        sh("ip", ["tuntap", "add", "dev", tap, "mode", "tap"]);
        const booting = bootGuests([{ name: NODE, rebootable: true, taps: [tap], shares: [{ tag: "cephimage", path: tierRoot() }] }]);
        booting.catch(() => undefined); // awaited below; a failure there is the one reported
        rig = await bootCephCsi(bin, [], {
            confOverrides: { public_addr: NET.host },
            // The tap into the cluster's namespace (once QEMU holds it), with the address its daemons bind to.
            afterBoot: async (cluster) => {
                vms = await booting;
                sh("ip", ["link", "set", tap, "netns", String(cluster.nsTarget)]);
                sh("nsenter", ["-t", String(cluster.nsTarget), "-n", "sh", "-c", 'ip addr add "$1" dev "$2" && ip link set "$2" up', "net", `${NET.host}/${NET.prefix}`, tap]);
            },
        });
        c = rig.c;
        plan = rig.plan;
        if (!vms) vms = await booting;
        g = vms.get(NODE);
        controller = await rig.startPlugin(rig.provisionerPod(), "provisioner", NODES[0]);
        secretsFile = path.join(work, "csi-secret");
        fs.writeFileSync(secretsFile, Object.entries(csiSecretData(csiCephUser, c.key("csi"))).map(([k, v]) => `${k}=${v}`).join("\n") + "\n", { mode: 0o600 });

        // The node's own configuration, as a real node has it at every boot: its network to the
        // cluster, the kubelet's directories, the image's binary in the runtime's store.
        const unit = [
            "[Unit]",
            "Description=network to the Ceph cluster (the node's own configuration)",
            "BindsTo=sys-subsystem-net-devices-eth1.device",
            "After=sys-subsystem-net-devices-eth1.device",
            "[Service]",
            "Type=oneshot",
            "RemainAfterExit=yes",
            "ExecStart=/sbin/ip link set eth1 up",
            `ExecStart=/sbin/ip addr replace ${NET.guest}/${NET.prefix} dev eth1`,
            `ExecStart=/sbin/ip route replace ${c.monIp}/32 via ${NET.host} dev eth1`,
            "[Install]",
            "WantedBy=multi-user.target",
            "",
        ].join("\n");
        await g.check("cat >/etc/systemd/system/zc-cephnet.service && systemctl daemon-reload && systemctl enable --now zc-cephnet.service", { stdin: unit });
        await g.check("mkdir -p /var/lib/kubelet/pods /var/lib/kubelet/plugins /var/lib/kubelet/plugins_registry /opt/zc-image");
        await copyIntoGuest(g, path.dirname(bin), [path.basename(bin)], "/opt/zc-image");
        if (path.basename(bin) !== "cephcsi") await g.check(`mv /opt/zc-image/${path.basename(bin)} /opt/zc-image/cephcsi`);
    });

    after(async () => {
        for (const f of forwards) f.kill();
        if (vms) {
            if (g) process.stderr.write(`--- node plugin (guest, last lines)\n${(await g.run(`tail -n 20 ${podDir}/log`).catch(() => ({ stdout: "" }))).stdout}\n`);
            await vms.close();
        }
        if (rig) {
            process.stderr.write(`--- provisioner (last lines)\n${rig.c.daemonLog("cephcsi-provisioner").split("\n").slice(-10).join("\n")}\n`);
            await rig.c.stop();
        }
        if (tap) execFile("ip", ["link", "del", tap], () => undefined); // gone with the namespace when it was moved
        if (work) fs.rmSync(work, { recursive: true, force: true });
    });

    it("the guest reaches the mon, MDS and OSDs on the tap network: the kernel client mounts /volumes/csi as the CSI user, key from a file", async () => {
        await startNodePlugin("first");
        const mons = `${c!.monIp}:6789`;
        // The key into the container's /tmp through stdin, used by mount.ceph from the file, removed.
        await g.check(`umask 077 && cat >${root}/tmp/zc-csi.key`, { stdin: c!.key("csi") + "\n" });
        const mount = `mkdir -p ${root}/mnt/zc-hand && chroot ${root} mount -t ceph ${mons}:/volumes/csi /mnt/zc-hand -o name=${csiCephUser},secretfile=/tmp/zc-csi.key,mds_namespace=${FS}`;
        const started = Date.now();
        const r = await g.run(mount, { timeoutMs: 180_000 });
        await g.check(`rm -f ${root}/tmp/zc-csi.key`);
        assert.equal(r.code, 0, `mount: ${r.stdout}${r.stderr}\n${(await g.run("dmesg | tail -n 20")).stdout}`);
        process.stderr.write(`[cephguest] kernel mount by hand in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
        assert.equal((await g.check(`findmnt -n -o FSTYPE ${root}/mnt/zc-hand`)).trim(), "ceph");
        await g.check(`printf 'by hand\\n' >${root}/mnt/zc-hand/zc-hand.txt && sync && cat ${root}/mnt/zc-hand/zc-hand.txt && rm ${root}/mnt/zc-hand/zc-hand.txt && umount ${root}/mnt/zc-hand`);
        const info = await g.check("cat /proc/self/mountinfo");
        assert.ok(!info.includes(c!.key("csi")), "the key is in no mount's options");
    });

    it("NodeStageVolume mounts a volume with the kernel client, NodePublishVolume binds it at the pod's path; data written", async () => {
        const params = { clusterID: c!.fsid, fsName: FS, pool: `${FS}-data` };
        const created = (await csiCall(controller, "create", ["-name=pvc-guest-0001", `-size=${GiB}`, ...Object.entries(params).map(([k, v]) => `-param=${k}=${v}`)])).volume;
        volumeId = created.volumeId;
        context = Object.entries(created.volumeContext as Record<string, string>).map(([k, v]) => `-context=${k}=${v}`);
        const node = path.join(work, "node-first.sock");
        await g.check(`mkdir -p ${staging} ${path.dirname(target)}`);
        await csiCall(node, "stage", [`-volume=${volumeId}`, `-staging=${staging}`, ...context]);
        await csiCall(node, "publish", [`-volume=${volumeId}`, `-staging=${staging}`, `-target=${target}`, ...context]);
        const [fstype, source] = (await g.check(`findmnt -n -o FSTYPE,SOURCE ${staging}`)).trim().split(/\s+/);
        process.stderr.write(`[cephguest] staged: ${fstype} ${source}\n`);
        assert.equal(fstype, "ceph", "the kernel client, not ceph-fuse");
        assert.match(source, new RegExp(`^${c!.monIp.replace(/\./g, "\\.")}:6789:/volumes/csi/csi-vol-[0-9a-f-]{36}/[0-9a-f-]{36}$`));
        assert.equal((await g.check(`findmnt -n -o FSTYPE ${target}`)).trim(), "ceph");
        sum = (await g.check(`head -c 4M /dev/urandom >${target}/data && sync && sha256sum ${target}/data`)).split(" ")[0];
        assert.match(sum, /^[0-9a-f]{64}$/);
        assert.ok(!(await g.check("cat /proc/self/mountinfo")).includes(c!.key("csi")), "the key is in no mount's options");
    });

    it("the guest reboots: nothing of ours runs, nothing is mounted, no ceph module; the DaemonSet's pod started again stages and publishes the volume with its data", async () => {
        assert.ok(volumeId, "the volume of the previous test");
        for (const f of forwards.splice(0)) f.kill();
        const ms = await g.reboot();
        process.stderr.write(`[cephguest] back over SSH ${(ms / 1000).toFixed(1)} s after systemctl reboot\n`);
        assert.equal((await g.run("pgrep -x cephcsi")).code, 1, "no cephcsi after the reboot");
        assert.equal((await g.run(`findmnt ${staging}`)).code, 1, "the staging path is no mount");
        assert.equal((await g.run(`findmnt ${target}`)).code, 1, "the pod's path is no mount");
        assert.equal((await g.run("grep -qw ceph /proc/filesystems")).code, 1, "the ceph module is not loaded");
        assert.equal((await g.run(`test -e ${podDir}`)).code, 1, "the container is gone");
        assert.equal((await g.run(`test -S ${pluginSocket}`)).code, 0, "the plugin's old socket file is still on the kubelet's disk");
        assert.match(await g.check("ip -4 -o addr show eth1"), new RegExp(`inet ${NET.guest.replace(/\./g, "\\.")}/${NET.prefix}`));

        const started = Date.now();
        const node = await startNodePlugin("rebooted");
        await csiCall(node, "stage", [`-volume=${volumeId}`, `-staging=${staging}`, ...context]);
        await csiCall(node, "publish", [`-volume=${volumeId}`, `-staging=${staging}`, `-target=${target}`, ...context]);
        process.stderr.write(`[cephguest] node plugin started again, staged and published in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
        assert.equal((await g.check(`findmnt -n -o FSTYPE ${staging}`)).trim(), "ceph");
        assert.equal((await g.run("grep -qw ceph /proc/filesystems")).code, 0, "the plugin loaded the ceph module (modprobe, /lib/modules as rendered)");
        assert.equal((await g.check(`sha256sum ${target}/data`)).split(" ")[0], sum, "the data is the volume's");

        await csiCall(node, "unpublish", [`-volume=${volumeId}`, `-target=${target}`]);
        await csiCall(node, "unstage", [`-volume=${volumeId}`, `-staging=${staging}`]);
        assert.equal((await g.run(`findmnt ${staging}`)).code, 1, "nothing stays mounted");
        await csiCall(controller, "delete", [`-volume=${volumeId}`]);
        const left = await c!.cephJson<{ name: string }[]>(["fs", "subvolume", "ls", FS, "csi"]);
        assert.deepEqual(left, [], "the subvolume is deleted");
    });
});
