/**
 * An existing iSCSI stack made before the login kept softdog for the next boot (the node plugin's
 * wdmd found no watchdog after a reboot, and lvmctrld exited with it): both programs planned with
 * one config, then the offline diff's steps. Only the node script sets and the commands that run
 * them change, in place: the login runs again on each initiator (idempotent: its sessions are
 * kept) and writes /etc/modules-load.d/zcloud-softdog.conf where it had loaded softdog.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { withoutLabelMove } from "../helpers/labelMove";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { sanIscsiConfig } from "../helpers/plan";

/** The program before the login wrote softdog to modules-load.d. */
const beforeSoftdogCommit = "31eb1db71f8df32daedee413b12b8d9b59b4c7a7";

const plans = plansBeforeAndNow(beforeSoftdogCommit, sanIscsiConfig);

test("old program -> new: the iSCSI script sets and their commands (and the StorageClass's allowedTopologies) updated in place; nothing replaced, created or deleted", () => {
    // the full diff: the iSCSI script sets' updates are what this test is about
    const changes = withoutLabelMove(diffPlans(plans.before().resources, plans.now().resources)).map((c) => `${c.kind} ${c.resource.name}`);
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
