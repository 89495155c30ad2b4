import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import type { RenderedPod } from "../drivers/prebuilt/cephCsiRig";
import { guestPodScript, q } from "../drivers/guestPod";

const pod: RenderedPod = {
    containers: [
        {
            name: "plugin",
            args: ["--endpoint=unix:///csi/csi.sock"],
            env: [],
            volumeMounts: [
                { name: "mountinfo", mountPath: "/csi/mountinfo" },
                { name: "socket-dir", mountPath: "/csi" },
                { name: "pods", mountPath: "/var/lib/kubelet/pods", mountPropagation: "Bidirectional" },
                { name: "modules", mountPath: "/lib/modules", readOnly: true },
                { name: "conf", mountPath: "/etc/ceph-csi-config" },
                { name: "selinux", mountPath: "/etc/selinux", readOnly: true },
                { name: "keys", mountPath: "/tmp/csi/keys" },
            ],
        },
    ],
    volumes: [
        { name: "socket-dir", hostPath: { path: "/var/lib/kubelet/plugins/x", type: "DirectoryOrCreate" } },
        { name: "mountinfo", hostPath: { path: "/var/lib/kubelet/plugins/x/mountinfo", type: "DirectoryOrCreate" } },
        { name: "pods", hostPath: { path: "/var/lib/kubelet/pods", type: "DirectoryOrCreate" } },
        { name: "modules", hostPath: { path: "/lib/modules", type: "Directory" } },
        { name: "selinux", hostPath: { path: "/etc/selinux", type: "" } },
        { name: "conf", configMap: { name: "csi-config" } },
        { name: "keys", emptyDir: { medium: "Memory" } },
    ],
};
const opts = {
    dir: "/run/zc-pod/p",
    imageTag: "img",
    imageFiles: { "/usr/local/bin/cephcsi": "/opt/img/cephcsi" },
    configMaps: { "csi-config": { "config.json": "[{\"clusterID\": \"it's\"}]\n" } },
    env: { NODE_ID: "n1", PATH: "/usr/bin:/bin" },
    argv: ["/usr/local/bin/cephcsi", "--nodeid=n1"],
};

describe("guest pod runtime: the script that starts a rendered container in a guest", () => {
    test("quoting survives single quotes", () => {
        assert.equal(q("it's"), `'it'\\''s'`);
        assert.equal(spawnSync("sh", ["-c", `printf %s ${q("a 'b' $c")}`], { encoding: "utf8" }).stdout, "a 'b' $c");
    });

    test("mounts in path order, by volume kind and type; the entrypoint chrooted with exactly the env", () => {
        const s = guestPodScript(pod, pod.containers[0], opts);
        const binds = s.split("\n").filter((l) => l.startsWith("mountpoint -q \"$r\"'/") && l.includes("--rbind")).map((l) => /"\$r"'([^']+)'/.exec(l)![1]);
        assert.deepEqual(binds, ["/csi", "/csi/mountinfo", "/etc/ceph-csi-config", "/etc/selinux", "/lib/modules", "/tmp/csi/keys", "/var/lib/kubelet/pods"]);
        assert.ok(s.includes(`[ -d '/lib/modules' ] || { echo "hostPath modules: /lib/modules is not a directory" >&2; exit 1; }`));
        assert.ok(s.includes("mkdir -p '/var/lib/kubelet/plugins/x/mountinfo'"));
        assert.ok(s.includes("mkdir -p '/etc/selinux'"), "type \"\": created as the runtime does");
        assert.ok(s.includes(`mount -o remount,bind,ro "$r"'/lib/modules'`));
        assert.ok(s.includes(`mount -o remount,bind,ro "$r"'/etc/ceph-csi-config'`), "a ConfigMap is read-only without readOnly");
        assert.ok(!s.includes(`remount,bind,ro "$r"'/csi'`));
        assert.ok(s.includes(`mount --make-rshared "$r"'/var/lib/kubelet/pods'`));
        assert.equal(s.split("\n").filter((l) => l.includes("--make-rshared")).length, 1);
        assert.ok(s.includes(`mount -t tmpfs zc-pod-empty '/run/zc-pod/p/empty/keys'`));
        assert.ok(s.includes(`printf %s '${Buffer.from(opts.configMaps["csi-config"]["config.json"]).toString("base64")}' | base64 -d >'/run/zc-pod/p/configmaps/csi-config'/'config.json'`));
        assert.ok(s.includes(`mount -t 9p -o trans=virtio,version=9p2000.L,ro 'img' "$d/image"`));
        assert.ok(s.includes(`cp '/opt/img/cephcsi' "$r"'/usr/local/bin/cephcsi'`));
        assert.ok(s.trimEnd().endsWith(`setsid env -i 'NODE_ID=n1' 'PATH=/usr/bin:/bin' chroot "$r" '/usr/local/bin/cephcsi' '--nodeid=n1' >"$d/log" 2>&1 </dev/null &\necho "$!" >"$d/pid"`));
        const check = spawnSync("shellcheck", ["-s", "sh", "-"], { input: s, encoding: "utf8" });
        assert.equal(check.status, 0, check.stdout);
    });

    test("a volume the runtime cannot give, or a ConfigMap not handed over, fails before any script", () => {
        const bad: RenderedPod = { ...pod, volumes: [...pod.volumes.filter((v) => v.name !== "keys"), { name: "keys" }] };
        assert.throws(() => guestPodScript(bad, pod.containers[0], opts), /^Error: plugin: volume keys is of no kind the guest runtime handles$/);
        assert.throws(() => guestPodScript(pod, pod.containers[0], { ...opts, configMaps: {} }), /^Error: plugin: ConfigMap csi-config not given$/);
        const socket: RenderedPod = { ...pod, volumes: pod.volumes.map((v) => (v.name === "socket-dir" ? { name: v.name, hostPath: { path: "/x", type: "Socket" } } : v)) };
        assert.throws(() => guestPodScript(socket, pod.containers[0], opts), /^Error: plugin: hostPath type Socket of socket-dir is not handled$/);
    });
});
