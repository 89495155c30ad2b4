// zcloud-storage:leaderElection: the lease timings of the stack's leader-elected controllers.
// The refusals word for word, the model they give, and the cross rules against client-go's own
// check (NewLeaderElector: leaseDuration > renewDeadline, renewDeadline > 1.2 x retryPeriod in
// nanoseconds), generated (fast-check).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { formatIssue } from "../../components/config/errors";
import { durationFlag, leaderElectionProblems, longestRetryPeriod, parseDurationSeconds } from "../../components/config/leaderElection";
import { parseStackConfig } from "../../components/config/parse";
import { leaderElectionTimingFlags } from "../../components/k8s/leaderElection";

const errorsOf = (values: Record<string, unknown>) => parseStackConfig(values).errors.map(formatIssue);
const timings = (leaseDuration: unknown, renewDeadline: unknown, retryPeriod: unknown) => ({ leaderElection: { leaseDuration, renewDeadline, retryPeriod } });

/** client-go's NewLeaderElector checks, as it computes them (time.Duration is int64 nanoseconds). */
function clientGoRefuses(lease: number, renew: number, retry: number): { lease: boolean; retry: boolean } {
    const ns = 1e9;
    return { lease: lease * ns <= renew * ns, retry: renew * ns <= Math.trunc(1.2 * (retry * ns)) };
}

describe("config: leaderElection", () => {
    test("absent: nothing in the model (the controllers keep their defaults); given: whole seconds", () => {
        assert.equal(Object.hasOwn(parseStackConfig({}).model!, "leaderElection"), false);
        assert.deepEqual(parseStackConfig(timings("137s", "107s", "26s")).model!.leaderElection, { leaseDuration: 137, renewDeadline: 107, retryPeriod: 26 });
        assert.deepEqual(parseStackConfig(timings("2m", "1m30s", "1h")).errors.map(formatIssue), [
            "leaderElection.retryPeriod: 3600s is too long for renewDeadline 90s: renewDeadline must exceed 1.2 x retryPeriod (client-go's jitter), so at most 74s; the controllers would refuse it and exit",
        ]);
        assert.deepEqual(parseStackConfig(timings("2m", "1m30s", "1m")).model!.leaderElection, { leaseDuration: 120, renewDeadline: 90, retryPeriod: 60 });
    });

    test("refusals, each at its key, all reported together", () => {
        assert.deepEqual(errorsOf(timings(60, "40", "0s")), [
            "leaderElection.leaseDuration: must be a duration of whole seconds with its unit, at least 1s, such as 60s, 2m or 1m30s, not number 60",
            'leaderElection.renewDeadline: "40" is not a duration of whole seconds with its unit, at least 1s, such as 60s, 2m or 1m30s',
            'leaderElection.retryPeriod: "0s" is not a duration of whole seconds with its unit, at least 1s, such as 60s, 2m or 1m30s',
        ]);
        assert.deepEqual(errorsOf(timings("1.5s", "500ms", "1d")).length, 3, "no cross rule over invalid durations");
        assert.deepEqual(errorsOf(timings("10s", "11s", "1d")), [
            'leaderElection.retryPeriod: "1d" is not a duration of whole seconds with its unit, at least 1s, such as 60s, 2m or 1m30s',
            "leaderElection.renewDeadline: 11s must be shorter than leaseDuration (10s): a leader gives up before its lease runs out, or two could lead at once; the controllers would refuse it and exit",
        ]);
        assert.deepEqual(errorsOf(timings("10s", "10s", "9s")), [
            "leaderElection.renewDeadline: 10s must be shorter than leaseDuration (10s): a leader gives up before its lease runs out, or two could lead at once; the controllers would refuse it and exit",
            "leaderElection.retryPeriod: 9s is too long for renewDeadline 10s: renewDeadline must exceed 1.2 x retryPeriod (client-go's jitter), so at most 8s; the controllers would refuse it and exit",
        ]);
        assert.deepEqual(errorsOf({ leaderElection: { leaseDuration: "60s", renewDeadline: "40s" } }), [
            "leaderElection.retryPeriod: is required: give leaseDuration, renewDeadline and retryPeriod together (each is checked against the others)",
        ]);
        assert.deepEqual(errorsOf({ leaderElection: { leaseDuration: "60s", renewDeadline: "40s", retryPeriod: "10s", renewDeadlin: "1s" } }), [
            'leaderElection.renewDeadlin: unknown key; did you mean "renewDeadline"? (known keys: leaseDuration, renewDeadline, retryPeriod)',
        ]);
        assert.deepEqual(errorsOf({ leaderElection: "60s" }), ['leaderElection: must be a map of keys, not string "60s"']);
        assert.deepEqual(errorsOf({ sharedResources: "external", ...timings("137s", "107s", "26s") }), [
            "leaderElection: a stack with sharedResources: external deploys no controller; set the lease timings in the stack that owns the shared resources (sharedResources: owned), or remove this key",
        ]);
    });

    test("durations: h, m and s in that order, whole numbers, nothing zero", () => {
        fc.assert(
            fc.property(fc.nat(30), fc.nat(300), fc.nat(10000), (h, m, s) => {
                const text = `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
                const total = h * 3600 + m * 60 + s;
                assert.equal(parseDurationSeconds(text), total > 0 ? total : undefined);
                if (total > 0) {
                    assert.equal(parseDurationSeconds(durationFlag(total)), total, "a rendered flag reads back as the same seconds");
                }
            }),
        );
        for (const bad of ["1s2m", "1m1h", "-1s", "1.5s", "1S", " 1s", "1s ", "1ms", "1", "s", "0h0m0s"]) {
            assert.equal(parseDurationSeconds(bad), undefined, bad);
        }
    });

    test("the cross rules refuse exactly what client-go refuses, and the longest retry period named is accepted", () => {
        const seconds = fc.integer({ min: 1, max: 400 });
        fc.assert(
            fc.property(seconds, seconds, seconds, (leaseDuration, renewDeadline, retryPeriod) => {
                const refused = clientGoRefuses(leaseDuration, renewDeadline, retryPeriod);
                const keys = leaderElectionProblems({ leaseDuration, renewDeadline, retryPeriod }).map((p) => p.key);
                assert.deepEqual(keys, [...(refused.lease ? ["renewDeadline"] : []), ...(refused.retry ? ["retryPeriod"] : [])]);
                const longest = longestRetryPeriod(renewDeadline);
                assert.equal(clientGoRefuses(renewDeadline + 1, renewDeadline, longest + 1).retry, true);
                if (longest >= 1) {
                    assert.equal(clientGoRefuses(renewDeadline + 1, renewDeadline, longest).retry, false);
                }
            }),
            { numRuns: 2000 },
        );
    });

    test("flags: none without timings; the three client-go flags with them", () => {
        assert.deepEqual(leaderElectionTimingFlags(undefined), []);
        assert.deepEqual(leaderElectionTimingFlags({ leaseDuration: 137, renewDeadline: 107, retryPeriod: 26 }), [
            "--leader-election-lease-duration=137s",
            "--leader-election-renew-deadline=107s",
            "--leader-election-retry-period=26s",
        ]);
    });
});
