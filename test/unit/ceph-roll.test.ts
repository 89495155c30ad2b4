// The gated roll's pure rules (components/cephfs/gates.ts): the order of restarts and gates, the
// gates' rendered arguments, and the hash a gate carries of what it guards.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { cephRollOrder, cephRollSteps, configHash, daemonSelector, guardHash, renderGateArgs, rollHostOrder } from "../../components/cephfs/gates";

const fsid = "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90";
const hosts = { n3: ["/dev/sdb"], n1: ["/dev/sdb", "/dev/sdc"], n2: ["/dev/sdb"] };

describe("cephRollSteps: one daemon (or one host's OSDs) at a time, a gate after each", () => {
    test("three hosts: roll-start, mons a b c, mgrs a b, noout, hosts n1 n2 n3 (sorted), noout off, mds a b", () => {
        const steps = cephRollSteps({ storage: "fs", fsid, hosts, timeoutSeconds: 300 });
        const show = steps.map((s) => (s.kind === "restart" ? `restart ${s.workloads.join(",")}` : `gate ${s.name}: ${s.args.join(" ")}`));
        const t = `--fsid ${fsid} --timeout 300`;
        assert.deepEqual(show, [
            `gate fs-gate-roll-start: roll-start ${t}`,
            "restart ceph-fs-mon-a",
            `gate fs-gate-mon-a: mon-quorum --id a ${t}`,
            "restart ceph-fs-mon-b",
            `gate fs-gate-mon-b: mon-quorum --id b ${t}`,
            "restart ceph-fs-mon-c",
            `gate fs-gate-mon-c: mon-quorum --id c ${t}`,
            "restart ceph-fs-mgr-a",
            `gate fs-gate-mgr-a: mgr-available --id a ${t}`,
            "restart ceph-fs-mgr-b",
            `gate fs-gate-mgr-b: mgr-available --id b ${t}`,
            `gate fs-gate-noout-set: noout set ${t}`,
            `gate fs-gate-n1-ok-to-stop: osd-ok-to-stop --host n1 ${t}`,
            "restart ceph-fs-osd-n1-sdb,ceph-fs-osd-n1-sdc",
            `gate fs-gate-n1-osd-up: osd-up --host n1 --osds 2 ${t}`,
            `gate fs-gate-n2-ok-to-stop: osd-ok-to-stop --host n2 ${t}`,
            "restart ceph-fs-osd-n2-sdb",
            `gate fs-gate-n2-osd-up: osd-up --host n2 --osds 1 ${t}`,
            `gate fs-gate-n3-ok-to-stop: osd-ok-to-stop --host n3 ${t}`,
            "restart ceph-fs-osd-n3-sdb",
            `gate fs-gate-n3-osd-up: osd-up --host n3 --osds 1 ${t}`,
            `gate fs-gate-noout-unset: noout unset ${t}`,
            `gate fs-gate-mds-a-handover: mds-handover --name a --fs fs ${t}`,
            "restart ceph-fs-mds-a",
            `gate fs-gate-mds-a-active: fs-active --fs fs --name a ${t}`,
            `gate fs-gate-mds-b-handover: mds-handover --name b --fs fs ${t}`,
            "restart ceph-fs-mds-b",
            `gate fs-gate-mds-b-active: fs-active --fs fs --name b ${t}`,
        ]);
    });

    test("a gate guards what restarts right before or after it; noout guards every OSD", () => {
        const steps = cephRollOrder("fs", hosts);
        const guards = Object.fromEntries(steps.flatMap((s) => (s.kind === "gate" ? [[s.name, s.guards]] : [])));
        assert.deepEqual(guards["fs-gate-mon-b"], ["ceph-fs-mon-b"]);
        assert.deepEqual(guards["fs-gate-n1-ok-to-stop"], ["ceph-fs-osd-n1-sdb", "ceph-fs-osd-n1-sdc"]);
        assert.deepEqual(guards["fs-gate-n1-osd-up"], ["ceph-fs-osd-n1-sdb", "ceph-fs-osd-n1-sdc"]);
        assert.deepEqual(guards["fs-gate-noout-set"], ["ceph-fs-osd-n1-sdb", "ceph-fs-osd-n1-sdc", "ceph-fs-osd-n2-sdb", "ceph-fs-osd-n3-sdb"]);
        assert.deepEqual(guards["fs-gate-noout-unset"], guards["fs-gate-noout-set"]);
        assert.deepEqual(guards["fs-gate-mds-b-handover"], ["ceph-fs-mds-b"]);
    });

    test("roll-start comes first, is the only first gate, and guards every daemon workload (it runs before whichever restarts first)", () => {
        const steps = cephRollOrder("fs", hosts);
        assert.deepEqual(steps[0], {
            kind: "gate",
            name: "fs-gate-roll-start",
            action: ["roll-start"],
            first: true,
            guards: ["ceph-fs-mon-a", "ceph-fs-mon-b", "ceph-fs-mon-c", "ceph-fs-mgr-a", "ceph-fs-mgr-b", "ceph-fs-osd-n1-sdb", "ceph-fs-osd-n1-sdc", "ceph-fs-osd-n2-sdb", "ceph-fs-osd-n3-sdb", "ceph-fs-mds-a", "ceph-fs-mds-b"],
        });
        assert.deepEqual(steps.filter((s) => s.kind === "gate" && s.first).length, 1);
        const restarted = steps.flatMap((s) => (s.kind === "restart" ? s.workloads : []));
        assert.deepEqual([...restarted].sort(), [...(steps[0] as { guards: string[] }).guards].sort());
        const rendered = cephRollSteps({ storage: "fs", fsid, hosts, timeoutSeconds: 30 })[0];
        assert.deepEqual(rendered.kind === "gate" && [rendered.first, rendered.args], [true, ["roll-start", "--fsid", fsid, "--timeout", "30"]]);
        assert.equal(daemonSelector("fs"), "storage.zcloud.io/storage=fs,app.kubernetes.io/component in (ceph-mon,ceph-mgr,ceph-osd,ceph-mds)");
    });

    test("one host: one mon, one mgr", () => {
        const steps = cephRollOrder("fs", { n1: ["/dev/sdb"] }).filter((s) => s.kind === "restart");
        assert.deepEqual(
            steps.map((s) => s.workloads.join(",")),
            ["ceph-fs-mon-a", "ceph-fs-mgr-a", "ceph-fs-osd-n1-sdb", "ceph-fs-mds-a", "ceph-fs-mds-b"],
        );
        assert.deepEqual(
            (cephRollOrder("fs", { n1: ["/dev/sdb"] })[0] as { guards: string[] }).guards,
            steps.flatMap((s) => s.workloads),
        );
    });

    test("a timeout that is not whole seconds is refused", () => {
        assert.throws(() => renderGateArgs(["noout", "set"], fsid, 0), { message: "a gate's timeout must be a whole number of seconds >= 1, got 0" });
        assert.throws(() => cephRollSteps({ storage: "fs", fsid, hosts, timeoutSeconds: 1.5 }), { message: "a gate's timeout must be a whole number of seconds >= 1, got 1.5" });
    });

    test("property: the order does not depend on the config's host order; every workload restarts once, after its own gate chain", () => {
        const node = fc.stringMatching(/^n[0-9]{1,2}$/);
        fc.assert(
            fc.property(fc.uniqueArray(node, { minLength: 1, maxLength: 7 }), fc.integer({ min: 1, max: 3 }), (nodes, devs) => {
                const hs = Object.fromEntries(nodes.map((n) => [n, Array.from({ length: devs }, (_, i) => `/dev/sd${"bcd"[i]}`)]));
                const reversed = Object.fromEntries(Object.entries(hs).reverse());
                assert.deepEqual(cephRollOrder("fs", hs), cephRollOrder("fs", reversed));
                const steps = cephRollOrder("fs", hs);
                const restarted = steps.flatMap((s) => (s.kind === "restart" ? s.workloads : []));
                assert.equal(new Set(restarted).size, restarted.length);
                // Between two restarts there is always a gate; every OSD host is preceded by its ok-to-stop gate.
                for (let i = 1; i < steps.length; i++) {
                    assert.ok(!(steps[i].kind === "restart" && steps[i - 1].kind === "restart"), `two restarts in a row at ${i}`);
                    const s = steps[i];
                    if (s.kind === "restart" && s.daemon === "osd") {
                        const before = steps[i - 1];
                        assert.equal(before.kind === "gate" ? before.name : before.kind, `fs-gate-${s.id}-ok-to-stop`);
                    }
                }
                assert.deepEqual(
                    steps.flatMap((s) => (s.kind === "restart" && s.daemon === "osd" ? [s.id] : [])),
                    rollHostOrder(hs),
                );
            }),
        );
    });
});

describe("guardHash: what a gate carries of the templates it guards", () => {
    test("key order and workload order do not matter; any value does", () => {
        const a = { spec: { containers: [{ name: "mon", image: "ceph:1" }] }, metadata: { labels: { x: "1" } } };
        const b = { metadata: { labels: { x: "1" } }, spec: { containers: [{ image: "ceph:1", name: "mon" }] } };
        assert.equal(guardHash({ w1: a, w2: b }), guardHash({ w2: b, w1: a }));
        assert.equal(guardHash({ w1: a }), guardHash({ w1: b }));
        assert.notEqual(guardHash({ w1: a }), guardHash({ w1: { ...a, spec: { containers: [{ name: "mon", image: "ceph:2" }] } } }));
        assert.notEqual(guardHash({ w1: a }), guardHash({ w2: a }));
        assert.match(guardHash({}), /^[0-9a-f]{64}$/);
    });

    test("property: equal for every permutation of keys, different for a changed leaf", () => {
        fc.assert(
            fc.property(fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.string(), { minKeys: 1 }), fc.string(), (d, extra) => {
                const shuffled = Object.fromEntries(Object.entries(d).reverse());
                assert.equal(guardHash({ w: d }), guardHash({ w: shuffled }));
                const k = Object.keys(d)[0];
                if (d[k] !== d[k] + extra) assert.notEqual(guardHash({ w: d }), guardHash({ w: { ...d, [k]: d[k] + extra } }));
            }),
        );
    });

    test("configHash is the text's sha256", () => {
        assert.equal(configHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    });
});
