import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after } from "node:test";
import * as yaml from "js-yaml";
import { baseConfig } from "./plan";

/** A stack file's text from its config map. */
export const stackYaml = (config: Record<string, unknown>) => yaml.dump({ config });

/** One LVM storage on node1: the smallest valid storage list. */
export const oneLvm = [{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }];

/**
 * A scratch directory of stack files for one test file, removed after it, with a valid stack
 * (`good`: ssh, nodes and oneLvm) to diff against.
 */
export function scratchStacks(prefix: string): { dir: string; writeStack(name: string, text: string): string; good: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const writeStack = (name: string, text: string) => {
        const file = path.join(dir, `Pulumi.${name}.yaml`);
        fs.writeFileSync(file, text);
        return file;
    };
    const good = writeStack("good", stackYaml({ "zcloud-storage:ssh": baseConfig.ssh, "zcloud-storage:nodes": baseConfig.nodes, "zcloud-storage:lvm": oneLvm }));
    return { dir, writeStack, good };
}
