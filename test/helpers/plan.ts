/**
 * Plans a stack config with the real program under Pulumi's mock runtime (tools/plan), for tests
 * that assert the resource graph. Each call runs in a fresh process, like `npm run plan`.
 */
import * as yaml from "js-yaml";
import { PlanRun, PlannedResource } from "../../tools/plan/model";
import { planConfig } from "../../tools/plan/runner";
import { parseStackYaml } from "../../tools/plan/stackFile";

export { PlanRun, PlannedResource };

/** Plans stack-file text (`config:` with `zcloud-storage:` keys, `secure:` leaves allowed). */
export function planYaml(text: string, program?: string): Promise<PlanRun> {
    return planConfig(parseStackYaml(text, "test"), program);
}

/** Plans `zcloud-storage:` keys given without prefix, as a stack file would hold them. */
export function planValues(values: Record<string, unknown>, program?: string): Promise<PlanRun> {
    const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v]));
    return planYaml(yaml.dump({ config }), program);
}

export function resourcesOfType(run: PlanRun, type: string): PlannedResource[] {
    return run.resources.filter((r) => r.type === type);
}

export function resourceNamed(run: PlanRun, name: string, type?: string): PlannedResource {
    const found = run.resources.filter((r) => r.name === name && (!type || r.type === type));
    if (found.length !== 1) {
        throw new Error(`expected one resource named ${name}${type ? ` of type ${type}` : ""}, found ${found.length}: ${run.resources.map((r) => r.name).join(", ")}`);
    }
    return found[0];
}

/** A base config most graph tests start from: SSH key as a secret, three nodes. */
export const baseConfig = {
    ssh: { user: "root", privateKey: { secure: "v1:test-ciphertext" }, hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtest1" } },
    nodes: { node1: { address: "10.0.0.11" }, node2: { address: "10.0.0.12" }, node3: { address: "10.0.0.13", port: 2222, user: "ops" } },
};

/** baseConfig with one iSCSI storage `san` (CHAP, initiators node1 and node2): the iSCSI upgrade tests' stack. */
export const sanIscsiConfig = {
    ...baseConfig,
    iscsi: [
        {
            name: "san",
            portals: ["10.0.0.50:3260"],
            iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
            lun: 1,
            chap: { username: "k8s", password: { secure: "v1:chap-ciphertext" } },
            initiators: ["node1", "node2"],
        },
    ],
};
