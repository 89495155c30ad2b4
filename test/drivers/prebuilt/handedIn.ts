/**
 * The hand-built binaries these tests run come from the environment (never from this repository):
 * a test that cannot run fails, naming the variable and what to set it to.
 */
import * as fs from "node:fs";

/** The file `variable` names; `what` says which binary, e.g. "the csi-driver-nfs v4.13.5 nfsplugin". */
export function handedIn(variable: string, what: string): string {
    const file = process.env[variable];
    if (!file) {
        throw new Error(`${variable} is unset: set it to ${what} binary built from its public source (test/drivers/README.md says how)`);
    }
    if (!fs.existsSync(file)) {
        throw new Error(`${variable}=${file}: no such file`);
    }
    return file;
}
