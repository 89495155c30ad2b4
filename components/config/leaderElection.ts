import { z } from "zod";

/**
 * `leaderElection`: the lease timings of every leader-elected controller the stack deploys
 * (topolvm-controller, and the CSI sidecars csi-provisioner, csi-resizer, csi-snapshotter of each
 * driver). Left out, each keeps its own defaults (15 s, 10 s, 2 s or 5 s). Longer leases suit a
 * control plane or nodes that answer slowly: a leader that cannot renew within `renewDeadline`
 * exits and restarts, failing the CSI calls in flight.
 */

/** Seconds, whole: the leases are renewed on a scale of seconds. */
export interface LeaderElectionConfig {
    leaseDuration: number;
    renewDeadline: number;
    retryPeriod: number;
}

/** client-go's leader elector jitters each retry by up to this factor and refuses a deadline it could overrun. */
export const leaderElectionJitter = 1.2;

const unitSeconds: Record<string, number> = { h: 3600, m: 60, s: 1 };

/** `90s`, `2m`, `1m30s`, `1h` -> seconds; undefined for anything else (no fractions, no other units, nothing zero). */
export function parseDurationSeconds(text: string): number | undefined {
    const m = /^(?:(\d{1,4})h)?(?:(\d{1,6})m)?(?:(\d{1,7})s)?$/.exec(text);
    if (!m || text === "") {
        return undefined;
    }
    const seconds = (Number(m[1] ?? 0) * unitSeconds.h) + (Number(m[2] ?? 0) * unitSeconds.m) + Number(m[3] ?? 0);
    return seconds > 0 ? seconds : undefined;
}

/** Seconds as a Go duration flag value: 137 -> `137s`. */
export function durationFlag(seconds: number): string {
    return `${seconds}s`;
}

const durationMessage = "must be a duration of whole seconds with its unit, at least 1s, such as 60s, 2m or 1m30s";

const duration = z
    .string({
        error: (issue) =>
            issue.input === undefined ? "is required: give leaseDuration, renewDeadline and retryPeriod together (each is checked against the others)" : durationMessage,
    })
    .refine((v) => parseDurationSeconds(v) !== undefined, { message: durationMessage })
    .transform((v) => parseDurationSeconds(v)!);

/** The largest retry period (s) client-go accepts with this renew deadline: renewDeadline > 1.2 x retryPeriod. */
export function longestRetryPeriod(renewDeadline: number): number {
    // r * 1.2 < d  <=>  6r < 5d, in whole numbers.
    return Math.ceil((5 * renewDeadline) / 6) - 1;
}

/**
 * What client-go would refuse in these timings (each controller would exit at start), by key. A
 * rule is checked only when its timings are valid durations (each invalid one has its own message).
 */
export function leaderElectionProblems(t: Partial<Record<keyof LeaderElectionConfig, unknown>>): Array<{ key: keyof LeaderElectionConfig; message: string }> {
    const problems: Array<{ key: keyof LeaderElectionConfig; message: string }> = [];
    const seconds = (v: unknown): v is number => typeof v === "number";
    if (seconds(t.leaseDuration) && seconds(t.renewDeadline) && t.renewDeadline >= t.leaseDuration) {
        problems.push({
            key: "renewDeadline",
            message: `${durationFlag(t.renewDeadline)} must be shorter than leaseDuration (${durationFlag(t.leaseDuration)}): a leader gives up before its lease runs out, or two could lead at once; the controllers would refuse it and exit`,
        });
    }
    if (!seconds(t.renewDeadline) || !seconds(t.retryPeriod)) {
        return problems;
    }
    const longest = longestRetryPeriod(t.renewDeadline);
    if (t.retryPeriod > longest) {
        problems.push({
            key: "retryPeriod",
            message: `${durationFlag(t.retryPeriod)} is too long for renewDeadline ${durationFlag(t.renewDeadline)}: renewDeadline must exceed ${leaderElectionJitter} x retryPeriod (client-go's jitter), so at most ${longest < 1 ? "(none: lengthen renewDeadline)" : durationFlag(longest)}; the controllers would refuse it and exit`,
        });
    }
    return problems;
}

export const leaderElectionSchema = z
    .strictObject({
        leaseDuration: duration,
        renewDeadline: duration,
        retryPeriod: duration,
    })
    .superRefine((t, ctx) => {
        for (const p of leaderElectionProblems(t)) {
            ctx.addIssue({ code: "custom", path: [p.key], message: p.message });
        }
    });
