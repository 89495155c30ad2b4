/**
 * The driver objects as rendered, against what the pinned upstream releases need (docs/drivers.md
 * has the full comparison): exact commands, flags the pinned binaries know, the socket paths two
 * containers share, the host paths they mount, RBAC verbs, CSIDriver specs, and the TopoLVM CRD
 * kept in the cluster when the last LVM storage goes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as yaml from "js-yaml";
import { diffPlans } from "../../tools/plan/diff";
import { renderChanges } from "../../tools/plan/render";
import { CLUSTER_ROLE, CSI_DRIVER, DAEMON_SET, DEPLOYMENT, PlanRun, PlannedResource, baseConfig, nodesThrough, planBefore, planValues, resourceNamed } from "../helpers/plan";

const CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch";

const config = {
    ...baseConfig,
    nodes: nodesThrough(4),
    lvm: [
        { name: "ssd", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"] } },
        { name: "hdd", hosts: { node2: ["/dev/disk/by-id/wwn-0x2"] }, thin: { overprovisionRatio: 2, snapshots: true } },
    ],
    cephfs: [{ name: "shared", hosts: { node3: ["/dev/disk/by-id/wwn-0x3"], node4: ["/dev/disk/by-id/wwn-0x4"] } }],
    nfs: [{ name: "share", server: "10.0.0.60", path: "/exports/k8s" }],
};

type Container = { name: string; command?: string[]; args?: string[]; env?: any[]; volumeMounts?: any[]; securityContext?: any; lifecycle?: any };

const podSpec = (r: PlannedResource) => (r.inputs.spec as any).template.spec;
const container = (r: PlannedResource, name: string): Container => {
    const found = podSpec(r).containers.find((c: Container) => c.name === name);
    assert.ok(found, `${r.name} has no container ${name}`);
    return found;
};
const mounts = (c: Container) => Object.fromEntries((c.volumeMounts ?? []).map((m: any) => [m.mountPath, m]));
const volume = (r: PlannedResource, name: string) => podSpec(r).volumes.find((v: any) => v.name === name);
/** The host path behind a container's mount path. */
const hostPathAt = (r: PlannedResource, c: Container, mountPath: string): string | undefined => volume(r, mounts(c)[mountPath]?.name)?.hostPath?.path;
const rulesOf = (run: PlanRun, name: string) => (resourceNamed(run, name, CLUSTER_ROLE).inputs.rules as any[]) ?? [];
const verbsFor = (rules: any[], resource: string) => rules.filter((r) => r.resources.includes(resource)).flatMap((r) => r.verbs);

const run = planBefore(config);

describe("TopoLVM 0.41.0 as rendered", () => {
    test("lvmd starts with flags 0.41.0 knows (no --container, removed in 0.31.0) and reads the mounted config", () => {
        for (const storage of ["ssd", "hdd"]) {
            const ds = resourceNamed(run(), `lvmd-${storage}`, DAEMON_SET);
            const lvmd = container(ds, "lvmd");
            assert.deepEqual(lvmd.command, ["/lvmd", "--config=/etc/topolvm/lvmd.yaml"]);
            assert.equal(lvmd.args, undefined);
            assert.equal(mounts(lvmd)["/etc/topolvm"].name, "config");
            assert.equal(volume(ds, "config").configMap.name, (resourceNamed(run(), `${storage}-lvmd-config`).inputs.metadata as any).name);
            assert.equal(hostPathAt(ds, lvmd, "/dev"), "/dev");
            assert.equal(volume(ds, mounts(lvmd)["/dev"].name).hostPath.type, "Directory");
            assert.deepEqual(lvmd.securityContext, { privileged: true });
            assert.equal(podSpec(ds).hostPID, true, "lvmd runs lvm through nsenter into PID 1");
        }
    });

    test("lvmd.yaml: the socket topolvm-node dials, one device class, no spare space held back", () => {
        const node = resourceNamed(run(), "topolvm-node", DAEMON_SET);
        const topolvmNode = container(node, "topolvm-node");
        const lvmdSocketFlag = topolvmNode.command!.find((a) => a.startsWith("--lvmd-socket="))!;
        for (const storage of ["ssd", "hdd"]) {
            const lvmdYaml = yaml.load((resourceNamed(run(), `${storage}-lvmd-config`).inputs.data as any)["lvmd.yaml"]) as any;
            assert.deepEqual(Object.keys(lvmdYaml).sort(), ["device-classes", "socket-name"]);
            assert.equal(`--lvmd-socket=${lvmdYaml["socket-name"]}`, lvmdSocketFlag);
            assert.equal(lvmdYaml["device-classes"][0]["spare-gb"], 0);
            // Both containers reach the socket through the same host directory.
            const ds = resourceNamed(run(), `lvmd-${storage}`, DAEMON_SET);
            const socketDir = "/run/topolvm";
            assert.equal(hostPathAt(ds, container(ds, "lvmd"), socketDir), socketDir);
            assert.equal(hostPathAt(node, topolvmNode, socketDir), socketDir);
        }
    });

    test("topolvm-node: exact command, host /dev at /dev, kubelet dirs with Bidirectional propagation", () => {
        const node = resourceNamed(run(), "topolvm-node", DAEMON_SET);
        const c = container(node, "topolvm-node");
        const pluginDir = "/var/lib/kubelet/plugins/topolvm.io/node";
        assert.deepEqual(c.command, ["/topolvm-node", `--csi-socket=${pluginDir}/csi-topolvm.sock`, "--lvmd-socket=/run/topolvm/lvmd.sock"]);
        assert.deepEqual(c.env, [{ name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }]);
        assert.deepEqual(c.securityContext, { privileged: true });
        const m = mounts(c);
        assert.deepEqual(Object.keys(m).sort(), ["/dev", "/run/topolvm", "/var/lib/kubelet/pods", "/var/lib/kubelet/plugins/kubernetes.io/csi", pluginDir].sort());
        assert.equal(hostPathAt(node, c, "/dev"), "/dev");
        assert.equal(m["/var/lib/kubelet/pods"].mountPropagation, "Bidirectional");
        assert.equal(m["/var/lib/kubelet/plugins/kubernetes.io/csi"].mountPropagation, "Bidirectional");
        for (const path of Object.keys(m).filter((p) => p !== "/dev")) {
            assert.equal(hostPathAt(node, c, path), path, `${path} is the same path on the host`);
        }
    });

    test("node registrar: plugin socket as kubelet sees it, registration dir, registration dropped on stop", () => {
        const node = resourceNamed(run(), "topolvm-node", DAEMON_SET);
        const registrar = container(node, "csi-registrar");
        const socket = "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock";
        assert.deepEqual(registrar.command, ["/csi-node-driver-registrar", `--csi-address=${socket}`, `--kubelet-registration-path=${socket}`, "--http-endpoint=:9809"]);
        assert.equal(hostPathAt(node, registrar, "/registration"), "/var/lib/kubelet/plugins_registry");
        assert.deepEqual(registrar.lifecycle.preStop.exec.command, ["/bin/sh", "-c", "rm -rf /registration/topolvm.io /registration/topolvm.io-reg.sock"]);
        assert.deepEqual(container(node, "liveness-probe").command, ["/livenessprobe", `--csi-address=${socket}`, "--http-endpoint=:9808"]);
    });

    test("controller: exact commands, leader election in the storage namespace, nothing privileged", () => {
        const controller = resourceNamed(run(), "topolvm-controller", DEPLOYMENT);
        const socket = "--csi-address=/run/topolvm/csi-topolvm.sock";
        const leader = ["--leader-election", "--leader-election-namespace=zcloud-storage"];
        assert.deepEqual(container(controller, "topolvm-controller").command, [
            "/topolvm-controller",
            "--csi-socket=/run/topolvm/csi-topolvm.sock",
            "--leader-election-namespace=zcloud-storage",
            "--enable-webhooks=false",
        ]);
        assert.deepEqual(container(controller, "csi-provisioner").command, [
            "/csi-provisioner",
            socket,
            "--feature-gates=Topology=true",
            ...leader,
            "--enable-capacity",
            "--capacity-ownerref-level=2",
            "--http-endpoint=:9809",
        ]);
        assert.deepEqual(container(controller, "csi-resizer").command, ["/csi-resizer", socket, ...leader, "--http-endpoint=:9810"]);
        assert.deepEqual(container(controller, "csi-snapshotter").command, ["/csi-snapshotter", socket, ...leader, "--http-endpoint=:9811"]);
        assert.deepEqual(container(controller, "liveness-probe").command, ["/livenessprobe", socket, "--http-endpoint=:9808"]);
        for (const c of podSpec(controller).containers as Container[]) {
            assert.deepEqual(c.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } }, c.name);
        }
        assert.deepEqual(podSpec(controller).securityContext, { runAsUser: 10000, runAsGroup: 10000 });
    });

    test("controller RBAC: TopoLVM's own verbs (pods updated, never deleted); the snapshotter creates no contents", () => {
        const rules = rulesOf(run(), "topolvm-controller-clusterrole");
        assert.deepEqual(rules.filter((r) => r.resources.includes("pods") && r.apiGroups.includes("")).find((r) => r.verbs.includes("update"))?.verbs, ["get", "list", "watch", "update"]);
        assert.ok(!verbsFor(rules, "pods").includes("delete"), "no rule lets the controller delete pods");
        assert.deepEqual(verbsFor(rules, "logicalvolumes/status"), ["get", "patch", "update"]);
        assert.ok(!verbsFor(rules, "volumesnapshotcontents").includes("create"));
        assert.deepEqual(verbsFor(rulesOf(run(), "topolvm-node-clusterrole"), "logicalvolumes").sort(), ["create", "delete", "get", "list", "patch", "update", "watch"]);
    });

    test("CSIDriver as upstream: no attach, pod info on mount, capacity tracking", () => {
        const spec = resourceNamed(run(), "topolvm-csidriver", CSI_DRIVER).inputs.spec;
        assert.deepEqual(spec, { attachRequired: false, podInfoOnMount: true, storageCapacity: true, volumeLifecycleModes: ["Persistent"] });
    });

    test("the LogicalVolume CRD is retained when the last LVM storage goes, and the node plugin waits for it", async () => {
        const crd = resourceNamed(run(), "topolvm-logicalvolume-crd", CRD);
        assert.equal(crd.retainOnDelete, true);
        // A later LVM storage adopts the retained CRD: a server-side-apply patch that creates it or
        // takes its fields over (a plain resource would fail with "already exists").
        assert.equal((crd.inputs.metadata as { annotations: Record<string, string> }).annotations["pulumi.com/patchForce"], "true");
        assert.ok(resourceNamed(run(), "topolvm-node", DAEMON_SET).dependencies.includes(crd.urn));
        // Every other driver object is deleted normally.
        assert.deepEqual(run().resources.filter((r) => r.retainOnDelete).map((r) => r.name), ["topolvm-logicalvolume-crd"]);

        const withoutLvm = await planValues({ ...config, lvm: [] });
        assert.equal(withoutLvm.error, undefined, withoutLvm.error?.message);
        const text = renderChanges(diffPlans(run().resources, withoutLvm.resources));
        assert.match(text, /^- +delete \(kept in cluster\) +topolvm-logicalvolume-crd /m);
        assert.match(text, /^- +delete +topolvm-node /m);
    });
});

describe("csi-driver-nfs v4.13 as rendered", () => {
    test("node plugin: exact args, pods dir Bidirectional, registrar on the host socket path, RuntimeDefault seccomp", () => {
        const node = resourceNamed(run(), "csi-driver-nfs-node", DAEMON_SET);
        const nfs = container(node, "nfs");
        assert.deepEqual(nfs.args, ["--v=5", "--nodeid=$(NODE_ID)", "--endpoint=unix:///csi/csi.sock", "--drivername=nfs.csi.k8s.io", "--mount-permissions=0"]);
        assert.deepEqual(nfs.env, [{ name: "NODE_ID", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }]);
        assert.equal(mounts(nfs)["/var/lib/kubelet/pods"].mountPropagation, "Bidirectional");
        assert.equal(hostPathAt(node, nfs, "/var/lib/kubelet/pods"), "/var/lib/kubelet/pods");
        const registrar = container(node, "node-driver-registrar");
        const socketHostDir = hostPathAt(node, nfs, "/csi");
        assert.ok(registrar.args!.includes(`--kubelet-registration-path=${socketHostDir}/csi.sock`));
        assert.deepEqual(registrar.env, [{ name: "KUBE_NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }]);
        assert.deepEqual(podSpec(node).securityContext, { seccompProfile: { type: "RuntimeDefault" } });
    });

    test("controller plugin: working mount dir on its own emptyDir, delete as the default onDelete", () => {
        const controller = resourceNamed(run(), "csi-driver-nfs-controller", DEPLOYMENT);
        const nfs = container(controller, "nfs");
        assert.deepEqual(nfs.args!.slice(-2), ["--working-mount-dir=/tmp", "--default-ondelete-policy=delete"]);
        assert.deepEqual(volume(controller, mounts(nfs)["/tmp"].name), { name: "work-dir", emptyDir: {} });
        assert.deepEqual(podSpec(controller).securityContext, { seccompProfile: { type: "RuntimeDefault" } });
    });

    test("CSIDriver as upstream", () => {
        assert.deepEqual(resourceNamed(run(), "csi-driver-nfs-csidriver", CSI_DRIVER).inputs.spec, {
            attachRequired: false,
            volumeLifecycleModes: ["Persistent"],
            fsGroupPolicy: "File",
        });
    });
});

describe("ceph-csi CephFS as rendered", () => {
    test("CSIDriver mounts with the pod's SELinux context, as upstream's", () => {
        assert.deepEqual(resourceNamed(run(), "ceph-csi-cephfs-csidriver", CSI_DRIVER).inputs.spec, {
            attachRequired: false,
            podInfoOnMount: false,
            fsGroupPolicy: "File",
            seLinuxMount: true,
            volumeLifecycleModes: ["Persistent"],
        });
    });

    test("provisioner plugin: --setmetadata=true, as upstream's: the claim's names csi-provisioner sends are kept on the subvolume", () => {
        const provisioner = resourceNamed(run(), "ceph-csi-cephfs-provisioner", DEPLOYMENT);
        assert.deepEqual(container(provisioner, "csi-cephfsplugin").args, [
            "--nodeid=$(NODE_ID)",
            "--type=cephfs",
            "--controllerserver=true",
            "--endpoint=unix:///csi/csi.sock",
            "--v=2",
            "--drivername=cephfs.csi.ceph.com",
            "--pidlimit=-1",
            "--enableprofiling=false",
            "--setmetadata=true",
        ]);
        assert.ok(container(provisioner, "csi-provisioner").args!.includes("--extra-create-metadata=true"));
        // The node plugin creates nothing: no metadata to set.
        assert.ok(!container(resourceNamed(run(), "ceph-csi-cephfs-nodeplugin", DAEMON_SET), "csi-cephfsplugin").args!.includes("--setmetadata=true"));
    });

    test("node plugin: host /dev, /sys, /lib/modules and /etc/selinux (read-only, unchecked), kubelet dirs Bidirectional", () => {
        const node = resourceNamed(run(), "ceph-csi-cephfs-nodeplugin", DAEMON_SET);
        const plugin = container(node, "csi-cephfsplugin");
        const m = mounts(plugin);
        assert.equal(hostPathAt(node, plugin, "/dev"), "/dev");
        assert.equal(hostPathAt(node, plugin, "/sys"), "/sys");
        assert.deepEqual(m["/etc/selinux"], { name: "etc-selinux", mountPath: "/etc/selinux", readOnly: true });
        assert.deepEqual(volume(node, "etc-selinux").hostPath, { path: "/etc/selinux", type: "" });
        assert.equal(m["/var/lib/kubelet/pods"].mountPropagation, "Bidirectional");
        assert.equal(m["/var/lib/kubelet/plugins"].mountPropagation, "Bidirectional");
        const registrar = container(node, "driver-registrar");
        assert.ok(registrar.args!.includes("--kubelet-registration-path=/var/lib/kubelet/plugins/cephfs.csi.ceph.com/csi.sock"));
        assert.equal(hostPathAt(node, plugin, "/csi"), "/var/lib/kubelet/plugins/cephfs.csi.ceph.com");
    });
});
