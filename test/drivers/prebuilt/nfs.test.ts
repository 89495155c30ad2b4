/**
 * drivers-prebuilt tier: csi-driver-nfs as the plan renders it, against a real NFS server.
 *
 * This machine's kernel has neither `nfs` nor `nfsd`, so everything runs in one QEMU guest of the
 * VM tier (Debian's kernel): Debian's nfs-kernel-server exports a directory, and both plugin
 * containers (the controller's and the node DaemonSet's `nfs`) run from the rendered manifests
 * through the runner (runner.ts: command, args, env, mounts at the same paths in the guest), from
 * the binary handed in by ZCLOUD_NFSPLUGIN_BIN (built by hand at the pinned version;
 * test/drivers/README.md). The guest is the node: its address is the server's and the nodes'.
 *
 * - csi-sanity's full suite against the node socket and the controller socket;
 * - the node rebooted with a volume published: the mount gone, nothing of ours running; the
 *   plugins started again as rendered publish the same volume with its data;
 * - per onDelete (delete, retain, archive: one storage each), CreateVolume with the planned
 *   StorageClass's parameters and mount options plus the metadata external-provisioner adds
 *   (`--extra-create-metadata`), NodePublishVolume, a file written, DeleteVolume: the directory
 *   the subDir template names, the mount's source and options in /proc/mounts, and what is left
 *   on the export afterwards.
 *
 *   ZCLOUD_NFSPLUGIN_BIN=... flock /tmp/zcloud-slow.lock node --import tsx --test test/drivers/prebuilt/nfs.test.ts
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { images } from "../../../components/images";
import { nfsDriverName } from "../../../components/nfs";
import { PlanRun, PlannedResource, planYaml } from "../../helpers/plan";
import { GuestSet, bootGuests } from "../../vm/harness";
import { csiCallProgram, driverCacheRoot } from "../programs";
import { PreparedContainer, guestCommand, prepareContainer } from "../runner";
import { copyIntoGuest, flagOf, guestUntil } from "../guestFiles";
import { handedIn } from "./handedIn";

const NAMESPACE = "zcloud-storage";
const NODE = "nfs-a";
/** The guest's address in QEMU user networking: the NFS server's and the node's. */
const ADDRESS = "10.0.2.15";
const EXPORT = "/srv/nfs/k8s";
const csiSanityVersion = "5.6.0";
const GiB = 1024 ** 3;
/** The pinned version the binary must be built at (the image's tag). */
const pinned = images.nfsPlugin.split(":").pop()!;
/** The packages the VM image lacks for an NFS server (the same Debian suite as the image). */
const serverPackages = ["nfs-kernel-server", "netbase"];

/** One storage per onDelete policy; mount options as a user writes them. */
const storages = [
    { name: "nfs-delete", onDelete: "delete", mountOptions: ["nfsvers=4.2", "hard", "noatime"] },
    { name: "nfs-retain", onDelete: "retain", mountOptions: ["nfsvers=4.1"] },
    { name: "nfs-archive", onDelete: "archive", mountOptions: ["nfsvers=4.0", "noatime"] },
] as const;

/** What external-provisioner adds to CreateVolume's parameters with --extra-create-metadata. */
/** csi-sanity specs skipped, each for an answer of the driver itself (not of what we render). */
const sanitySkips = [
    {
        spec: "ValidateVolumeCapabilities should fail when the requested volume does not exist",
        fails: /Expected an error to have occurred\.\s+Got:\s+<nil>/,
        why: "ValidateVolumeCapabilities answers for any well-formed volume ID without looking at the export",
    },
    {
        spec: "should fail when volume with single node single writer access mode is already mounted at a different target path",
        fails: /Expected an error to have occurred\.\s+Got:\s+<nil>/,
        why: "NodePublishVolume does not refuse a second target for SINGLE_NODE_SINGLE_WRITER (an NFS mount is shared); the mount it leaves fails every later spec's setup",
    },
] as const;

function summaryOf(out: string): { ran: number; total: number; passed: number; failed: number; pending: number; skipped: number } {
    const m = out.match(/Ran (\d+) of (\d+) Specs.*\n.*?(\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/);
    assert.ok(m, `no csi-sanity summary in:\n${out.slice(-5000)}`);
    const [ran, total, passed, failed, pending, skipped] = m.slice(1).map(Number);
    return { ran, total, passed, failed, pending, skipped };
}

const metadataKeys = { namespace: "csi.storage.k8s.io/pvc/namespace", claim: "csi.storage.k8s.io/pvc/name", pv: "csi.storage.k8s.io/pv/name" };


const suffix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-3)}`;
const dir = `/tmp/zn-${suffix}`;
const guestBin = "/opt/zcloud";

function stackYaml(): string {
    return yaml.dump({
        config: {
            "zcloud-storage:nfs": storages.map((s) => ({ name: s.name, server: ADDRESS, path: EXPORT, onDelete: s.onDelete, mountOptions: [...s.mountOptions] })),
        },
    });
}

/** One mount of the guest's /proc/mounts. */
interface MountLine {
    source: string;
    target: string;
    type: string;
    options: string[];
}

function mountsAt(procMounts: string, target: string): MountLine[] {
    return procMounts
        .split("\n")
        .map((l) => l.split(" "))
        .filter((f) => f.length >= 4 && f[1] === target)
        .map(([source, t, type, options]) => ({ source, target: t, type, options: options.split(",") }));
}

/** The options /proc/mounts shows for a rendered mount option (the kernel spells nfsvers as vers). */
function shownAs(option: string): string {
    const [name, value] = option.split("=");
    if (name === "nfsvers" || name === "vers") {
        return `vers=${value}`;
    }
    return option;
}


describe(`csi-driver-nfs ${pinned} as rendered, against Debian's nfs-kernel-server in a guest`, { timeout: 1_800_000 }, () => {
    let vms: GuestSet | undefined;
    let run: PlanRun;
    const timings: string[] = [];
    const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
        const start = Date.now();
        try {
            return await f();
        } finally {
            timings.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`);
        }
    };
    const guest = () => vms!.get(NODE);
    const sockets: { controller?: string; node?: string } = {};
    /** The node plugin's container: where the kubelet's pod directories are for it. */
    let nodePlugin: PreparedContainer | undefined;
    const logs: string[] = [];
    const socketOf = (which: "controller" | "node") => {
        const s = sockets[which];
        assert.ok(s, `the ${which} plugin runs (test above)`);
        return s;
    };
    const storageClass = (name: string): Record<string, any> => {
        const found = run.resources.filter((r) => r.type === "kubernetes:storage.k8s.io/v1:StorageClass" && (r.inputs.metadata as any)?.name === name);
        assert.equal(found.length, 1, `one StorageClass ${name}`);
        assert.equal(found[0].inputs.provisioner, nfsDriverName);
        return found[0].inputs;
    };
    const csiCall = async (which: "controller" | "node", call: string, flags: string[]): Promise<any> => {
        const quoted = flags.map((f) => `'${f.replace(/'/g, `'\\''`)}'`);
        const out = await guest().check([`${guestBin}/csi-call`, `-endpoint=unix://${socketOf(which)}`, ...quoted, call].join(" "), { timeoutMs: 300_000 });
        return JSON.parse(out || "{}");
    };
    const workload = (type: string, container: string): PlannedResource => {
        const found = run.resources.filter((r) => r.type === type && r.name.startsWith("csi-driver-nfs-") && ((r.inputs.spec as any)?.template?.spec?.containers ?? []).some((c: any) => c.name === container));
        assert.equal(found.length, 1, `one ${type} of csi-driver-nfs runs ${container}`);
        return found[0];
    };

    before(async () => {
        const plugin = handedIn("ZCLOUD_NFSPLUGIN_BIN", `the csi-driver-nfs ${pinned} nfsplugin`);
        assert.equal(process.getuid?.(), 0, "needs root (QEMU guests)");
        fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
        fs.mkdirSync(path.join(dir, "debs"));
        try {
            execFileSync("apt-get", ["download", ...serverPackages], { cwd: path.join(dir, "debs"), stdio: "pipe" });
        } catch (e: any) {
            throw new Error(`apt-get download ${serverPackages.join(" ")} failed (the guest image lacks them; this machine's apt must reach Debian bookworm): ${e.stderr ?? e}`);
        }
        fs.copyFileSync(plugin, path.join(dir, "bin", "nfsplugin"));
        const booting = timed("guest boot", () => bootGuests([{ name: NODE, rebootable: true }]));
        run = await planYaml(stackYaml());
        assert.equal(run.error, undefined, run.error?.message);
        vms = await booting;
        const g = guest();
        await copyIntoGuest(g, dir, fs.readdirSync(path.join(dir, "debs")).map((f) => path.join("debs", f)), dir);
        await copyIntoGuest(g, path.join(dir, "bin"), ["nfsplugin"], guestBin);
        await copyIntoGuest(g, path.join(driverCacheRoot, `csi-sanity-v${csiSanityVersion}`), ["csi-sanity"], guestBin);
        await copyIntoGuest(g, path.dirname(csiCallProgram()), ["csi-call"], guestBin);
        await timed("nfs-kernel-server", async () => {
            await g.check(`DEBIAN_FRONTEND=noninteractive dpkg -i ${dir}/debs/*.deb`, { timeoutMs: 600_000 });
            await g.check(
                `mkdir -p ${EXPORT} && echo '${EXPORT} *(rw,sync,no_subtree_check,no_root_squash)' >/etc/exports && systemctl restart nfs-server && exportfs -v`,
                { timeoutMs: 300_000 },
            );
        });
        assert.match(await g.check("exportfs -v"), new RegExp(`^${EXPORT}\\s`, "m"));
    });

    after(async () => {
        process.stderr.write(`[nfs] timings: ${timings.join(", ")}\n`);
        if (vms && logs.length) {
            const tail = await guest().run(`tail -n 30 ${logs.join(" ")}`);
            process.stderr.write(`[nfs] plugin logs:\n${tail.stdout}\n`);
        }
        await vms?.close();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    /** The controller's and the node's `nfs` containers, laid out below ctl<round> and node<round>. */
    const preparePlugins = (round: string): { controller: PreparedContainer; node: PreparedContainer } => {
        const pod = (podName: string) => ({ nodeName: NODE, podName, namespace: NAMESPACE, podIP: ADDRESS, hostIP: ADDRESS });
        const controller = prepareContainer(run, workload("kubernetes:apps/v1:Deployment", "csi-provisioner"), "nfs", {
            root: path.join(dir, `ctl${round}`),
            hostRoot: path.join(dir, "host"),
            pod: pod("csi-driver-nfs-controller-0"),
        });
        const node = prepareContainer(run, workload("kubernetes:apps/v1:DaemonSet", "node-driver-registrar"), "nfs", {
            root: path.join(dir, `node${round}`),
            hostRoot: path.join(dir, "host"),
            pod: pod(`csi-driver-nfs-node-${NODE}`),
        });
        return { controller, node };
    };

    const start = async (which: "controller" | "node", p: PreparedContainer): Promise<string> => {
        const g = guest();
        const script = guestCommand(p, { program: `${guestBin}/nfsplugin`, network: "node" });
        const pid = (await g.check(`cat >${p.root}.sh && { setsid sh ${p.root}.sh >${p.root}.log 2>&1 </dev/null & echo $!; }`, { stdin: `${script}\n` })).trim();
        const socket = flagOf(p.argv, "--endpoint").replace(/^unix:\/\//, "");
        // Until it serves or ends (an ended plugin fails at once with its log).
        await guestUntil(g, `test -S ${socket} || ! kill -0 ${pid}`, 120_000, `cat ${p.root}.log`);
        assert.equal((await g.run(`test -S ${socket}`)).code, 0, `${p.container} ended without serving:\n${(await g.run(`cat ${p.root}.log`)).stdout}`);
        logs.push(`${p.root}.log`);
        const out = (await g.check(`cat ${p.root}.log`)).toString();
        assert.doesNotMatch(out, /flag provided but not defined|unknown flag/);
        sockets[which] = socket;
        return out;
    };

    test("the controller's and the node's plugin serve CSI with their rendered args, env and mounts", async () => {
        const { controller, node } = preparePlugins("");
        // Both run the image's entrypoint (no command), with the node name as their node ID.
        for (const p of [controller, node]) {
            assert.equal(p.argv[0], "(image entrypoint)");
            assert.equal(flagOf(p.argv, "--nodeid"), NODE);
            assert.equal(flagOf(p.argv, "--drivername"), nfsDriverName);
            assert.ok(p.hostNetwork, `${p.container}: host network, as the server's export list expects`);
        }
        // Paths under the mounts, each rewritten once (the container roots are below the mounted /tmp).
        assert.equal(flagOf(controller.argv, "--working-mount-dir"), path.join(dir, "ctl", "tmp"));
        assert.equal(flagOf(controller.argv, "--endpoint"), `unix://${path.join(dir, "ctl", "csi", "csi.sock")}`);
        assert.equal(flagOf(node.argv, "--endpoint"), `unix://${path.join(dir, "node", "csi", "csi.sock")}`);
        await copyIntoGuest(guest(), dir, ["ctl", "node", "host"], dir);
        nodePlugin = node;
        const ctlLog = await start("controller", controller);
        const nodeLog = await start("node", node);
        for (const out of [ctlLog, nodeLog]) {
            assert.match(out, new RegExp(`DRIVER INFORMATION:\\n-+\\nBuild Date: .*\\nCompiler: gc\\nDriver Name: ${nfsDriverName.replace(/\./g, "\\.")}\\nDriver Version: `));
        }
        process.stderr.write(`[nfs] plugin: ${ctlLog.match(/Driver Version: .*/)?.[0]}, ${ctlLog.match(/Git Commit: .*/)?.[0]}\n`);
        const caps = await csiCall("controller", "controller-caps", []);
        const claimed = (caps.capabilities ?? []).map((c: any) => c.rpc?.type).sort();
        assert.deepEqual(claimed, ["CLONE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CREATE_DELETE_VOLUME", "EXPAND_VOLUME", "SINGLE_NODE_MULTI_WRITER"]);
    });

    test("csi-sanity's full suite passes against the node socket and the controller socket, but for two driver answers", async () => {
        const g = guest();
        const work = path.join(dir, "sanity");
        const params = path.join(dir, "sanity-params.yaml");
        // The rendered parameters without subDir: csi-sanity sends none of the claim metadata the
        // template is filled from, so every volume would be the one literal-template directory.
        const { subDir: _template, ...parameters } = storageClass("nfs-delete").parameters as Record<string, string>;
        assert.deepEqual(parameters, { server: ADDRESS, share: EXPORT, onDelete: "delete" });
        await g.check(`cat >${params}`, { stdin: yaml.dump(parameters) });
        const sanity = (mount: string, extra: string[]) =>
            [
                `mkdir -p ${work} &&`,
                `${guestBin}/csi-sanity`,
                `--csi.endpoint=unix://${socketOf("node")}`,
                `--csi.controllerendpoint=unix://${socketOf("controller")}`,
                `--csi.mountdir=${work}/${mount}`,
                `--csi.stagingdir=${work}/${mount}-staging`,
                `--csi.testvolumesize=${GiB}`,
                `--csi.testvolumeexpandsize=${2 * GiB}`,
                `--csi.testvolumeparameters=${params}`,
                "--ginkgo.no-color",
                ...extra,
            ].join(" ");
        const skip = `--ginkgo.skip='${sanitySkips.map((x) => x.spec).join("|")}'`;
        // Each skip names exactly one spec.
        for (const x of sanitySkips) {
            assert.equal(summaryOf((await g.run(sanity("dry", ["--ginkgo.dry-run", `--ginkgo.focus='${x.spec}'`]))).stdout).ran, 1, x.spec);
        }
        const r = await timed("csi-sanity", () => g.run(sanity("mount", [skip]), { timeoutMs: 1_200_000 }));
        const out = `${r.stdout}${r.stderr}`;
        const c = summaryOf(out);
        process.stderr.write(`[nfs] csi-sanity: ${c.total} specs: ${c.passed} passed, ${c.failed} failed, ${c.pending} pending, ${c.skipped} skipped (${sanitySkips.length} here)\n`);
        assert.equal(r.code, 0, `csi-sanity failed:\n${out.slice(-20000)}`);
        assert.deepEqual(c, { ran: 45, total: 103, passed: 45, failed: 0, pending: 1, skipped: 57 });
        // Each skipped spec still fails on the driver's own answer (a fixed driver shortens the list).
        for (const [i, x] of sanitySkips.entries()) {
            const alone = await g.run(sanity(`alone${i}`, [`--ginkgo.focus='${x.spec}'`]), { timeoutMs: 300_000 });
            assert.notEqual(alone.code, 0, `${x.spec} passes now: drop its skip`);
            assert.match(`${alone.stdout}${alone.stderr}`, x.fails, x.spec);
        }
        await g.check(`for m in $(awk '$2 ~ "^${work}/" {print $2}' /proc/mounts); do umount "$m"; done`);
        // What csi-sanity made on the export is gone, but for the directories of the two CreateVolume
        // calls from a missing source: the driver makes the directory before it looks for the source
        // and leaves it when the copy fails.
        const left = (await g.check(`cd ${EXPORT} && ls -A`)).trim().split("\n").filter(Boolean);
        assert.deepEqual(
            left.map((d) => d.replace(/-[0-9A-F]{8}-[0-9A-F]{8}$/, "")),
            ["sanity-controller-vol-from-snap-not-found", "sanity-controller-vol-from-vol-not-found"],
        );
        await g.check(`cd ${EXPORT} && rm -rf ${left.join(" ")}`);
    });

    for (const s of storages) {
        test(`${s.name}: the subDir template names the directory, the mount carries ${s.mountOptions.join(",")}, onDelete ${s.onDelete} is what the export shows`, async () => {
            const g = guest();
            const sc = storageClass(s.name);
            assert.deepEqual(sc.mountOptions, [...s.mountOptions]);
            const claim = `data-${s.onDelete}`;
            const pv = `pvc-${s.onDelete}-0a1b2c3d`;
            const ns = `web-${s.onDelete}`;
            const parameters = { ...(sc.parameters as Record<string, string>), [metadataKeys.namespace]: ns, [metadataKeys.claim]: claim, [metadataKeys.pv]: pv };
            const capability = ["-fs=", "-access-mode=MULTI_NODE_MULTI_WRITER", ...s.mountOptions.map((o) => `-mount-flag=${o}`)];
            const created = await csiCall("controller", "create", [`-name=${pv}`, `-size=${GiB}`, ...capability, ...Object.entries(parameters).map(([k, v]) => `-param=${k}=${v}`)]);
            const volume = created.volume;
            assert.ok(volume?.volumeId, JSON.stringify(created));
            const dirOnExport = `${EXPORT}/${ns}/${claim}/${pv}`;
            assert.equal((await g.run(`test -d ${dirOnExport}`)).code, 0, (await g.run(`find ${EXPORT}`)).stdout);
            // The volume ID records server, share, subDir, the volume's name and (retain, archive) onDelete.
            // (delete, the driver's default here, is an empty last element).
            assert.equal(volume.volumeId, [ADDRESS, EXPORT.slice(1), `${ns}/${claim}/${pv}`, pv, s.onDelete === "delete" ? "" : s.onDelete].join("#"));

            // NodePublishVolume as the kubelet makes it: the PV's mount options, the volume context.
            assert.ok(nodePlugin, "the node plugin runs (test above)");
            const target = nodePlugin.pathOf(`/var/lib/kubelet/pods/0000-${s.onDelete}/volumes/kubernetes.io~csi/${pv}/mount`);
            const context = Object.entries(volume.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
            await csiCall("node", "publish", [`-volume=${volume.volumeId}`, `-target=${target}`, ...capability, ...context]);
            // The pods directory is a link to the node's host path: /proc/mounts shows where it leads.
            const resolved = (await g.check(`realpath ${target}`)).trim();
            assert.equal(resolved, path.join(dir, "host", "var/lib/kubelet/pods", `0000-${s.onDelete}/volumes/kubernetes.io~csi/${pv}/mount`));
            const mounts = mountsAt(await g.check("cat /proc/mounts"), resolved);
            assert.equal(mounts.length, 1, JSON.stringify(mounts));
            assert.equal(mounts[0].source, `${ADDRESS}:${dirOnExport}`);
            assert.equal(mounts[0].type, "nfs4");
            for (const option of s.mountOptions.map(shownAs)) {
                assert.ok(mounts[0].options.includes(option), `${option} not in ${mounts[0].options.join(",")}`);
            }
            await g.check(`echo ${s.name} >${target}/file && sync`);
            assert.equal((await g.check(`cat ${dirOnExport}/file`)).trim(), s.name);
            await csiCall("node", "unpublish", [`-volume=${volume.volumeId}`, `-target=${target}`]);
            assert.equal(mountsAt(await g.check("cat /proc/mounts"), resolved).length, 0);

            await csiCall("controller", "delete", [`-volume=${volume.volumeId}`]);
            const left = (await g.check(`cd ${EXPORT} && find . -mindepth 1 \\( -path './${ns}*' -o -path './archived-${ns}*' \\) | sort`)).trim().split("\n").filter(Boolean);
            const expected: Record<string, string[]> = {
                // The directory and its emptied parents go.
                delete: [],
                retain: [`./${ns}`, `./${ns}/${claim}`, `./${ns}/${claim}/${pv}`, `./${ns}/${claim}/${pv}/file`],
                // Renamed below archived-<namespace>; the emptied parents of the old place stay.
                archive: [`./archived-${ns}`, `./archived-${ns}/${claim}`, `./archived-${ns}/${claim}/${pv}`, `./archived-${ns}/${claim}/${pv}/file`, `./${ns}`, `./${ns}/${claim}`],
            };
            assert.deepEqual(left, expected[s.onDelete]);
            if (s.onDelete !== "delete") {
                const kept = s.onDelete === "retain" ? dirOnExport : `${EXPORT}/archived-${ns}/${claim}/${pv}`;
                assert.equal((await g.check(`cat ${kept}/file`)).trim(), s.name);
            }
            await g.check(`rm -rf ${EXPORT}/${ns} ${EXPORT}/archived-${ns}`);
        });
    }
    test("the node reboots with a volume published: the mount is gone and nothing of ours runs; the plugins started again as rendered publish the same volume with its data", async () => {
        const g = guest();
        const s = storages[0];
        const sc = storageClass(s.name);
        const pv = "pvc-reboot-0a1b2c3d";
        const ns = "web-reboot";
        const claim = "data-reboot";
        const parameters = { ...(sc.parameters as Record<string, string>), [metadataKeys.namespace]: ns, [metadataKeys.claim]: claim, [metadataKeys.pv]: pv };
        const capability = ["-fs=", "-access-mode=MULTI_NODE_MULTI_WRITER", ...s.mountOptions.map((o) => `-mount-flag=${o}`)];
        const volume = (await csiCall("controller", "create", [`-name=${pv}`, `-size=${GiB}`, ...capability, ...Object.entries(parameters).map(([k, v]) => `-param=${k}=${v}`)])).volume;
        assert.ok(volume?.volumeId);
        const context = Object.entries(volume.volumeContext ?? {}).map(([k, v]) => `-context=${k}=${v}`);
        const podVolume = `/var/lib/kubelet/pods/0000-reboot/volumes/kubernetes.io~csi/${pv}/mount`;
        assert.ok(nodePlugin, "the node plugin runs (test above)");
        const target = nodePlugin.pathOf(podVolume);
        await csiCall("node", "publish", [`-volume=${volume.volumeId}`, `-target=${target}`, ...capability, ...context]);
        const resolved = (await g.check(`realpath ${target}`)).trim();
        assert.equal(mountsAt(await g.check("cat /proc/mounts"), resolved).length, 1);
        const sum = (await g.check(`head -c 16M /dev/urandom >${target}/data && sync && sha256sum <${target}/data`)).trim();
        const oldSockets = [socketOf("controller"), socketOf("node")];

        const ms = await timed("reboot", () => g.reboot(600_000));
        process.stderr.write(`[nfs] ${NODE} back over SSH ${(ms / 1000).toFixed(1)} s after the reboot\n`);
        const seen: Record<string, { code: number | null; stdout: string; stderr: string }> = {
            programs: await g.run(`pgrep -a -f '${guestBin}/[n]fsplugin'`),
            mounted: await g.run(`findmnt ${resolved}`),
            target: await g.run(`ls -ld ${resolved}`),
            server: await g.run("systemctl is-active nfs-server"),
            exports: await g.run("exportfs -v"),
        };
        for (const [what, r] of Object.entries(seen)) {
            process.stderr.write(`[nfs] after reboot, ${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
        }
        assert.notEqual(seen.programs.code, 0, `nothing of ours runs after the reboot: ${seen.programs.stdout}`);
        assert.notEqual(seen.mounted.code, 0, "the published mount is gone");
        assert.equal(seen.server.stdout.trim(), "active", "the NFS server is back (enabled by its package)");
        assert.match(seen.exports.stdout, new RegExp(`^${EXPORT}\\s`, "m"));

        // The kubelet starts the pods again: the same containers, as rendered, in new roots (a socket
        // left from the boot before would pass for a served one: gone first).
        await g.run(`rm -f ${oldSockets.join(" ")}`);
        const again = preparePlugins("-r");
        await copyIntoGuest(g, dir, ["ctl-r", "node-r", "host"], dir);
        nodePlugin = again.node;
        await timed("plugins after reboot", async () => {
            await start("controller", again.controller);
            await start("node", again.node);
        });
        // The kubelet publishes the pod's volume again at the same path.
        const targetAgain = again.node.pathOf(podVolume);
        assert.equal((await g.check(`realpath -m ${targetAgain}`)).trim(), resolved);
        await timed("NodePublishVolume after reboot", () => csiCall("node", "publish", [`-volume=${volume.volumeId}`, `-target=${targetAgain}`, ...capability, ...context]));
        const mounts = mountsAt(await g.check("cat /proc/mounts"), resolved);
        assert.equal(mounts.length, 1, JSON.stringify(mounts));
        assert.equal(mounts[0].source, `${ADDRESS}:${EXPORT}/${ns}/${claim}/${pv}`);
        for (const option of s.mountOptions.map(shownAs)) {
            assert.ok(mounts[0].options.includes(option), `${option} not in ${mounts[0].options.join(",")}`);
        }
        assert.equal((await g.check(`sha256sum <${targetAgain}/data`)).trim(), sum, "the data survived the reboot");
        await csiCall("node", "unpublish", [`-volume=${volume.volumeId}`, `-target=${targetAgain}`]);
        assert.equal(mountsAt(await g.check("cat /proc/mounts"), resolved).length, 0);
        await csiCall("controller", "delete", [`-volume=${volume.volumeId}`]);
        assert.equal((await g.run(`test -e ${EXPORT}/${ns}`)).code, 1, "onDelete delete removed the directory and its emptied parents");
    });
});
