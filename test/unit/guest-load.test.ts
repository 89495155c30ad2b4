import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { describeGuestLoad, namedDaemons, parseGuestLoad } from "../nodes/guestLoad";

// guestLoadCommand's output in a guest of lvm.test.ts, 1140 s after its boot (2026-12-06), ps shortened
const sample = [
    "1140.52 1310.27",
    "100",
    "2",
    "cpu  41208 0 61537 121046 512 0 5240 0 0 0",
    "systemd                        25",
    "rcu_preempt                    52",
    "containerd                    298",
    "kubelet                       309",
    "kube-proxy                     32",
    "containerd-shim                77",
    "containerd-shim                76",
    "containerd-shim                76",
    "lvmd                            5",
    "topolvm-node                   11",
    "topolvm-control                14",
    "sshd                            9",
    "ps                              0",
    "",
].join("\n");

describe("a guest node's load", () => {
    test("busy time from /proc/stat (user, nice, system, irq, softirq), CPU time by process, the rest as other", () => {
        const load = parseGuestLoad(sample);
        assert.deepEqual(load, {
            uptimeS: 1140.52,
            cpus: 2,
            busyS: (41208 + 61537 + 5240) / 100,
            byProcess: { other: 34, rcu_preempt: 52, containerd: 298, kubelet: 309, "kube-proxy": 32, "containerd-shim": 229, lvmd: 5, "topolvm-node": 11, "topolvm-control": 14 },
        });
        assert.equal(
            describeGuestLoad("topolvm-a", load),
            "topolvm-a: 1141 s up, 2 vCPUs 47 % busy (1080 CPU s); kubelet 309 s, containerd 298 s, containerd-shim 229 s, rcu_preempt 52 s, other 34 s, kube-proxy 32 s, topolvm-control 14 s, topolvm-node 11 s, lvmd 5 s",
        );
    });

    test("refuses output it cannot read, and a node without its kubelet or containerd", () => {
        assert.throws(() => parseGuestLoad(sample.replace("kubelet ", "kubelex ")), /^Error: guest load: no kubelet process in:\n1140\.52/);
        assert.throws(() => parseGuestLoad(sample.replace(/^containerd {2,}298$/m, "")), /guest load: no containerd process/);
        assert.throws(() => parseGuestLoad(sample.replace("sshd                            9", "sshd nine")), /guest load: a ps line unread \("sshd nine"\)/);
        assert.throws(() => parseGuestLoad(sample.replace(/^cpu .*$/m, "intr 1 2 3")), /guest load: no cpu line of \/proc\/stat/);
        assert.throws(() => parseGuestLoad(sample.replace("\n2\n", "\ntwo\n")), /guest load: no uptime, clock ticks or CPU count/);
        assert.throws(() => parseGuestLoad(""), /guest load: no uptime/);
    });

    test("every process's time is counted once: the named ones under their name, all others under other", () => {
        const name = fc.oneof(fc.constantFrom(...namedDaemons), fc.stringMatching(/^[a-z][a-z0-9_:/.-]{0,14}$/));
        fc.assert(
            fc.property(fc.array(fc.tuple(name, fc.nat(100_000)), { maxLength: 40 }), (procs) => {
                const ps = [["kubelet", 1], ["containerd", 2], ...procs].map(([n, s]) => `${n} ${s}`).join("\n");
                const load = parseGuestLoad(`10.0 5.0\n100\n2\ncpu  1 0 1 8 0 0 0 0 0 0\n${ps}\n`);
                const total = 3 + procs.reduce((sum, [, s]) => sum + s, 0);
                assert.equal(Object.values(load.byProcess).reduce((a, b) => a + b, 0), total);
                for (const [n] of procs) assert.ok(namedDaemons.includes(n) ? n in load.byProcess : "other" in load.byProcess);
            }),
        );
    });
});
