import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkNoSecretLiterals, evaluatePolicies } from "../../policy/policies";
import { baseConfig, planValues } from "../helpers/plan";

const san = {
    name: "san",
    portals: ["10.0.0.50:3260"],
    iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
    lun: 1,
    chap: { username: "k8s", password: { secure: "v1:chap" } },
    initiators: ["node1"],
};

const command = (props: Record<string, unknown>) => ({
    type: "command:remote:Command",
    name: "san-node1-login",
    urn: "urn:pulumi:test::zcloud-storage::zcloud:storage:IscsiStorage$command:remote:Command::san-node1-login",
    props: { create: "sh -c 'true' iscsi-initiator apply", ...props },
});

describe("storage-no-secret-literals: CHAP never in clear", () => {
    it("the planned iSCSI logins pass: the password is a secret stdin, on no command line", async () => {
        const run = await planValues({ ...baseConfig, iscsi: [san] });
        assert.equal(run.error, undefined, run.error?.message);
        const planned = run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }));
        assert.deepEqual(evaluatePolicies(planned, {}).filter((v) => v.policy === "storage-no-secret-literals"), []);
        assert.equal(planned.filter((r) => r.props.stdin === "[secret]").length, 1);
    });

    it("a stdin in clear is reported", () => {
        const [message] = checkNoSecretLiterals(command({ stdin: "hunter2\n" }));
        assert.match(message, /has a stdin that is not a Pulumi secret: it is stored in clear in the state/);
        assert.deepEqual(checkNoSecretLiterals(command({ stdin: "[secret]" })), []);
    });

    it("a CHAP password on iscsiadm's or tgtadm's command line is reported", () => {
        const update = "iscsiadm -m node -T iqn.x -p 10.0.0.50 -o update -n node.session.auth.password -v hunter2";
        assert.match(checkNoSecretLiterals(command({ create: update }))[0], /create passes a CHAP password on a command line/);
        assert.match(checkNoSecretLiterals(command({ delete: "tgtadm --mode account --op new --user k8s --password hunter2" }))[0], /delete passes a CHAP password/);
        // The login script writes the password from stdin with printf: no match.
        assert.deepEqual(checkNoSecretLiterals(command({ create: "printf 'node.session.auth.password = %s\\n' \"$zi_chap_password\"" })), []);
    });
});
