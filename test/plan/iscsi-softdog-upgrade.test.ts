/**
 * An existing iSCSI stack made before the login kept softdog for the next boot (the node plugin's
 * wdmd found no watchdog after a reboot, and lvmctrld exited with it): both programs planned with
 * one config, then the offline diff's steps. Only the node script sets and the commands that run
 * them change, in place: the login runs again on each initiator (idempotent: its sessions are
 * kept) and writes /etc/modules-load.d/zcloud-softdog.conf where it had loaded softdog.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, planValues } from "../helpers/plan";

/** The program before the login wrote softdog to modules-load.d. */
const beforeSoftdogCommit = "31eb1db71f8df32daedee413b12b8d9b59b4c7a7";

const config = {
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

let old: ReturnType<typeof oldProgram> | undefined;
let before_: PlanRun;
let after_: PlanRun;
before(async () => {
    old = oldProgram(beforeSoftdogCommit);
    [before_, after_] = await Promise.all([planValues(config, old.program), planValues(config)]);
    assert.equal(before_.error, undefined, before_.error?.message);
    assert.equal(after_.error, undefined, after_.error?.message);
});
after(() => old?.cleanup());

test("old program -> new: the iSCSI script sets and their commands (and the StorageClass's allowedTopologies) updated in place; nothing replaced, created or deleted", () => {
    const changes = diffPlans(before_.resources, after_.resources).map((c) => `${c.kind} ${c.resource.name}`);
    assert.deepEqual(changes.sort(), [
        "update san-node1-login",
        "update san-node1-login-scripts",
        "update san-node2-login",
        "update san-node2-login-scripts",
        // Since the class names the driver's topology key (iscsi-topology-upgrade.test.ts): in place too.
        "update san-storageclass",
        "update san-vg",
        "update san-vg-scripts",
    ]);
});
