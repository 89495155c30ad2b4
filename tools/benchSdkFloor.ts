/**
 * The SDK's own floor for `npm run bench`: `node --import tsx tools/benchSdkFloor.ts <nodes>` runs,
 * under the SDK's own mock runtime (no plan recorder, no config, no scripts), a program that makes
 * per node the three resources an LVM node has (a CopyToRemote, a remote Command depending on it,
 * a NodePatch depending on that) with trivial inputs. Its peak RSS is what the SDK needs to have
 * every node's resources in flight at once (a component makes them all before the first one is
 * registered), whatever the program puts in their inputs: the plan of the same node count cannot
 * go much below it. Stack traces are off, as in the plan.
 */
import * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { cheapStackTraces } from "./plan/inProcess";

export async function sdkFloorProgram(nodes: number): Promise<void> {
    // As the plan runs its program: no stack traces.
    cheapStackTraces();
    await pulumi.runtime.setMocks({ newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }), call: (a) => a.inputs }, "zcloud-storage", "floor", true);
    await pulumi.runtime.runInPulumiStack(async () => {
        for (let i = 0; i < nodes; i++) {
            const connection = { host: "10.0.0.1", user: "root", privateKey: pulumi.secret("key") };
            const copy = new command.remote.CopyToRemote(`n${i}-scripts`, { connection, source: new pulumi.asset.StringAsset("x"), remotePath: "/tmp/x" });
            const disks = new command.remote.Command(`n${i}-disks`, { connection, create: "true", delete: "true" }, { dependsOn: [copy] });
            new k8s.core.v1.NodePatch(`n${i}-label`, { metadata: { name: `n${i}`, labels: { a: "b" } } }, { dependsOn: [disks] });
        }
    });
}

if (require.main === module) {
    const nodes = Number(process.argv[2]);
    if (!Number.isInteger(nodes) || nodes < 1) {
        console.error("usage: node --import tsx tools/benchSdkFloor.ts <nodes>");
        process.exit(2);
    }
    sdkFloorProgram(nodes).catch((e) => {
        console.error(e instanceof Error ? e.message : e);
        process.exit(1);
    });
}
