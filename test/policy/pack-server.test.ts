// Runs policy/index.ts the way the Pulumi CLI does (a process in the pack's directory that prints
// its gRPC port) and talks the analyzer protocol to it: what `pulumi preview --policy-pack policy`
// would get, without the CLI. Checks the wiring of the pure policies into the PolicyPack.
import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import * as grpc from "@grpc/grpc-js";
import { AnalyzerClient } from "@pulumi/pulumi/proto/analyzer_grpc_pb";
import * as pb from "@pulumi/pulumi/proto/analyzer_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

import { nodeLabel, nodeCommand, storageClass, UNKNOWN_STRING, workload } from "./fixtures";

const packDir = path.join(__dirname, "../../policy");

function call<Req, Res>(fn: (req: Req, cb: (err: grpc.ServiceError | null, res: Res) => void) => unknown, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => fn(req, (err, res) => (err ? reject(err) : resolve(res))));
}

function options(): pb.AnalyzerResourceOptions {
    return new pb.AnalyzerResourceOptions().setCustomtimeouts(new pb.AnalyzerResourceOptions.CustomTimeouts());
}

function stackResource(r: { type: string; name: string; urn: string; props: Record<string, unknown> | undefined }): pb.AnalyzerResource {
    return new pb.AnalyzerResource()
        .setType(r.type)
        .setName(r.name)
        .setUrn(r.urn)
        .setProperties(Struct.fromJavaScript((r.props ?? {}) as never))
        .setOptions(options());
}

function diagnostics(res: pb.AnalyzeResponse): Array<{ policy: string; level: number; urn: string; message: string }> {
    return res.getDiagnosticsList().map((d) => ({
        policy: d.getPolicyname(),
        level: d.getEnforcementlevel(),
        urn: d.getUrn(),
        message: d.getMessage(),
    }));
}

describe("policy/index.ts served as a CrossGuard analyzer", () => {
    let child: ChildProcess;
    let client: AnalyzerClient;

    before(async () => {
        child = spawn(process.execPath, ["--import", "tsx", "index.ts"], { cwd: packDir, stdio: ["ignore", "pipe", "pipe"] });
        let stderr = "";
        child.stderr!.on("data", (d) => (stderr += d));
        const port = await new Promise<string>((resolve, reject) => {
            let out = "";
            const timer = setTimeout(() => reject(new Error(`no port within 60 s; stderr: ${stderr}`)), 60_000);
            child.stdout!.on("data", (d) => {
                out += d;
                const m = /^(\d+)\s*$/m.exec(out);
                if (m) {
                    clearTimeout(timer);
                    resolve(m[1]);
                }
            });
            child.on("exit", (code) => reject(new Error(`pack exited with ${code}; stderr: ${stderr}`)));
        });
        client = new AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    });

    after(() => {
        client?.close();
        child?.kill();
    });

    it("announces the pack's name, version, policies, levels and config schema", async () => {
        const info = await call<Empty, pb.AnalyzerInfo>(client.getAnalyzerInfo.bind(client), new Empty());
        assert.equal(info.getName(), "zcloud-storage-policy");
        assert.equal(info.getVersion(), "0.1.0");
        const policies = info.getPoliciesList().map((p) => [p.getName(), p.getEnforcementlevel()]);
        assert.deepEqual(policies, [
            ["storage-node-exclusive", pb.EnforcementLevel.MANDATORY],
            ["storage-device-single-claim", pb.EnforcementLevel.MANDATORY],
            ["storage-image-pinned", pb.EnforcementLevel.MANDATORY],
            ["storage-no-secret-literals", pb.EnforcementLevel.MANDATORY],
            ["storage-privileged-namespace", pb.EnforcementLevel.MANDATORY],
            ["storage-single-default-class", pb.EnforcementLevel.MANDATORY],
            ["storage-ssh-host-key-pinned", pb.EnforcementLevel.ADVISORY],
            ["storage-monitoring-on", pb.EnforcementLevel.ADVISORY],
        ]);
        const schema = info.getPoliciesList().find((p) => p.getName() === "storage-privileged-namespace")!.getConfigschema()!;
        assert.equal((schema.getProperties()!.toJavaScript() as Record<string, { default?: string }>).namespace.default, "zcloud-storage");
    });

    it("reports the exclusivity violation from validateStack with the message and URN of the pure policy", async () => {
        const lvm = nodeLabel("lvm", "local-fast", "node3", ["/dev/sdb"]);
        const ceph = nodeLabel("cephfs", "shared-fs", "node3", ["/dev/sdc"]);
        const req = new pb.AnalyzeStackRequest().setResourcesList([stackResource(lvm), stackResource(ceph)]);
        const res = await call<pb.AnalyzeStackRequest, pb.AnalyzeResponse>(client.analyzeStack.bind(client), req);
        assert.deepEqual(diagnostics(res), [
            {
                policy: "storage-node-exclusive",
                level: pb.EnforcementLevel.MANDATORY,
                urn: ceph.urn,
                message:
                    "A node serves at most one of lvm and cephfs, and at most one storage of each type.\n" +
                    "node3 serves lvm 'local-fast' and cephfs 'shared-fs': a node's disks must belong to one of them " +
                    "(a Ceph OSD and an LVM VG would compete for the node). Remove node3 from one of them in the stack config.",
            },
        ]);
    });

    it("checks a resource with values unknown during preview instead of skipping the policy", async () => {
        const ds = workload("DaemonSet", "topolvm-lvmd", {
            namespace: "default",
            hostPID: true,
            containers: [{ name: "lvmd", image: UNKNOWN_STRING, privileged: true }, { name: "sidecar", image: "busybox" }],
        });
        const req = new pb.AnalyzeRequest()
            .setType(ds.type)
            .setName(ds.name)
            .setUrn(ds.urn)
            .setProperties(Struct.fromJavaScript(ds.props as never))
            .setOptions(options());
        const res = await call<pb.AnalyzeRequest, pb.AnalyzeResponse>(client.analyze.bind(client), req);
        assert.deepEqual(
            diagnostics(res).map((d) => `${d.policy}: ${d.message.split("\n")[1].split(": ")[0]}`),
            [
                "storage-image-pinned: DaemonSet 'topolvm-lvmd' container 'sidecar' image 'busybox' has no tag, so Kubernetes pulls ':latest'",
                "storage-privileged-namespace: DaemonSet 'topolvm-lvmd' is in namespace 'default' and uses privileged container 'lvmd' and hostPID",
            ],
        );
    });

    it("reports a production stack without alert rules from validateStack, for the stack (no URN)", async () => {
        const prod = [storageClass("local-fast", true), storageClass("nfs", false)].map((r) => ({ ...r, urn: r.urn.replace("urn:pulumi:dev::", "urn:pulumi:prod::") }));
        const res = await call<pb.AnalyzeStackRequest, pb.AnalyzeResponse>(
            client.analyzeStack.bind(client),
            new pb.AnalyzeStackRequest().setResourcesList(prod.map(stackResource)),
        );
        assert.deepEqual(
            diagnostics(res).map((d) => [d.policy, d.level, d.urn, d.message.split("\n")[1].split(":")[0]]),
            [["storage-monitoring-on", pb.EnforcementLevel.ADVISORY, "", "Stack 'prod' deploys StorageClasses 'local-fast' and 'nfs' with monitoring off"]],
        );
    });

    it("applies --policy-pack-config: levels and the namespace parameter", async () => {
        const config = new pb.ConfigureAnalyzerRequest();
        config.getPolicyconfigMap().set(
            "storage-privileged-namespace",
            new pb.PolicyConfig().setEnforcementlevel(pb.EnforcementLevel.MANDATORY).setProperties(Struct.fromJavaScript({ namespace: "storage-system" })),
        );
        config.getPolicyconfigMap().set(
            "storage-ssh-host-key-pinned",
            new pb.PolicyConfig().setEnforcementlevel(pb.EnforcementLevel.DISABLED).setProperties(new Struct()),
        );
        await call<pb.ConfigureAnalyzerRequest, Empty>(client.configure.bind(client), config);

        const ds = workload("DaemonSet", "topolvm-lvmd", { namespace: "storage-system", hostPID: true, containers: [{ name: "lvmd", image: "x:1" }] });
        const cmd = nodeCommand("local-fast", "node3", { host: "10.0.0.13" });
        for (const r of [ds, cmd]) {
            const req = new pb.AnalyzeRequest()
                .setType(r.type)
                .setName(r.name)
                .setUrn(r.urn)
                .setProperties(Struct.fromJavaScript(r.props as never))
                .setOptions(options());
            const res = await call<pb.AnalyzeRequest, pb.AnalyzeResponse>(client.analyze.bind(client), req);
            assert.deepEqual(diagnostics(res), [], r.name);
        }
    });

    it("refuses a system namespace as the namespace parameter", async () => {
        const config = new pb.ConfigureAnalyzerRequest();
        config.getPolicyconfigMap().set(
            "storage-privileged-namespace",
            new pb.PolicyConfig().setEnforcementlevel(pb.EnforcementLevel.MANDATORY).setProperties(Struct.fromJavaScript({ namespace: "kube-system" })),
        );
        await call<pb.ConfigureAnalyzerRequest, Empty>(client.configure.bind(client), config);
        const ds = workload("DaemonSet", "topolvm-lvmd", { namespace: "kube-system", hostPID: true, containers: [{ name: "lvmd", image: "x:1" }] });
        const req = new pb.AnalyzeRequest().setType(ds.type).setName(ds.name).setUrn(ds.urn).setProperties(Struct.fromJavaScript(ds.props as never)).setOptions(options());
        await assert.rejects(call<pb.AnalyzeRequest, pb.AnalyzeResponse>(client.analyze.bind(client), req), (e: grpc.ServiceError) => {
            assert.match(e.details, /storage-privileged-namespace\.namespace: "kube-system" is a system namespace \(default, kube-node-lease, kube-public, kube-system\); privileged storage pods need a namespace of their own, e\.g\. zcloud-storage/);
            return true;
        });
    });

    it("takes storage-monitoring-on's productionStacks from --policy-pack-config and refuses a bad one", async () => {
        const configure = (productionStacks: unknown) => {
            const config = new pb.ConfigureAnalyzerRequest();
            config.getPolicyconfigMap().set(
                "storage-monitoring-on",
                new pb.PolicyConfig().setEnforcementlevel(pb.EnforcementLevel.MANDATORY).setProperties(Struct.fromJavaScript({ productionStacks } as never)),
            );
            return call<pb.ConfigureAnalyzerRequest, Empty>(client.configure.bind(client), config);
        };
        const analyze = (stack: string) =>
            call<pb.AnalyzeStackRequest, pb.AnalyzeResponse>(
                client.analyzeStack.bind(client),
                new pb.AnalyzeStackRequest().setResourcesList([stackResource({ ...storageClass("nfs", false), urn: storageClass("nfs", false).urn.replace("urn:pulumi:dev::", `urn:pulumi:${stack}::`) })]),
            );
        await configure(["live-*"]);
        assert.deepEqual(diagnostics(await analyze("prod")), []);
        assert.deepEqual(diagnostics(await analyze("live-eu")).map((d) => [d.policy, d.level]), [["storage-monitoring-on", pb.EnforcementLevel.MANDATORY]]);
        await configure(["live/eu"]);
        await assert.rejects(analyze("live-eu"), (e: grpc.ServiceError) => {
            assert.match(e.details, /storage-monitoring-on\.productionStacks: "live\/eu": not a stack name or pattern/);
            return true;
        });
    });
});
