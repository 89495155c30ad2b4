/**
 * csi-sanity's results read from its JSON report (`--ginkgo.json-report`), and the rule by which
 * a failed spec may run again: pure helpers, tested in test/unit/csi-sanity-report.test.ts.
 *
 * On emulated guests a plugin's own calls to the API server (a Delete of a LogicalVolume, its
 * readiness check's Get) sometimes go unanswered for longer than the plugin waits, and the spec
 * that needed them fails with the plugin's timeout or lost connection, not with a wrong answer.
 * Such a spec runs again on its own; a spec that failed any other way fails the test at once.
 */

/** One spec of a csi-sanity run. */
export interface SanitySpec {
    /** The spec's full text as ginkgo's focus matches it: the suite's description, its containers' texts, its own. */
    text: string;
    /** ginkgo's state: passed, failed, skipped, pending, panicked, timedout, interrupted, aborted. */
    state: string;
    /** Where it failed (It, BeforeEach, AfterEach, ...) and ginkgo's failure message. */
    failure?: { in: string; message: string };
}

/** The counts csi-sanity prints at its end, from the specs. */
export interface SanityCounts {
    total: number;
    passed: number;
    failed: number;
    pending: number;
    skipped: number;
}

/** The specs of a report written by `--ginkgo.json-report` (suite-level nodes included, as failed when they failed). */
export function sanitySpecs(reportJson: string): SanitySpec[] {
    const reports = JSON.parse(reportJson);
    if (!Array.isArray(reports) || reports.length !== 1) throw new Error(`csi-sanity report: one suite expected, got ${Array.isArray(reports) ? reports.length : typeof reports}`);
    const suite = reports[0];
    if (typeof suite.SuiteDescription !== "string" || !Array.isArray(suite.SpecReports ?? [])) throw new Error("csi-sanity report: no SuiteDescription or SpecReports");
    return (suite.SpecReports ?? [])
        // suite-level nodes that ran without failing are not specs
        .filter((s: any) => s.LeafNodeType === "It" || (s.State !== "passed" && s.State !== "skipped"))
        .map((s: any): SanitySpec => {
            const text = [suite.SuiteDescription, ...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText || s.LeafNodeType].join(" ");
            const failure = s.Failure ? { in: String(s.Failure.FailureNodeType ?? s.LeafNodeType), message: String(s.Failure.Message ?? "") } : undefined;
            return { text, state: String(s.State), ...(failure && s.State !== "passed" ? { failure } : {}) };
        });
}

/** A spec the run ran (not skipped by a focus, a skip or a capability the driver lacks; not pending). */
export const ranSpec = (s: SanitySpec): boolean => s.state !== "skipped" && s.state !== "pending";

/**
 * A spec that skipped itself as it ran: csi-sanity's own check found a capability the driver does
 * not claim (`Skip()` in a BeforeEach or It). ginkgo keeps the skip's reason as the spec's failure
 * message; a spec left out by a focus or skip pattern has none. ginkgo's own skips after a failure
 * in an ordered container (csi-sanity has none) are not the driver's answer and do not count.
 */
export const skippedAsItRan = (s: SanitySpec): boolean =>
    s.state === "skipped" && s.failure !== undefined && !/^Spec skipped because (an earlier spec in an ordered container|a BeforeAll node) failed$/.test(s.failure.message);

/**
 * A spec a focused rerun decided: it ran, or skipped itself as it ran. A spec that failed because
 * a plugin's socket was gone may have failed in that very capability check, and be skipped by it
 * once the plugin serves again.
 */
export const decidedSpec = (s: SanitySpec): boolean => ranSpec(s) || skippedAsItRan(s);

/** A spec that ran and did not pass. */
export const failedSpec = (s: SanitySpec): boolean => ranSpec(s) && s.state !== "passed";

export function sanityCounts(specs: SanitySpec[]): SanityCounts {
    const count = (state: string) => specs.filter((s) => s.state === state).length;
    return { total: specs.length, passed: count("passed"), failed: specs.filter(failedSpec).length, pending: count("pending"), skipped: count("skipped") };
}

/**
 * The causes under which a failed spec runs again: each is a plugin's call that timed out or lost
 * its connection (to the API server, to lvmd, or csi-sanity's to a plugin restarting), never an
 * answer of the driver's. The names are printed with the spec.
 */
const transientCauses: { cause: string; pattern: RegExp }[] = [
    { cause: "a connection to the API server lost", pattern: /http2: client connection lost|http2: server sent GOAWAY|connection reset by peer|unexpected EOF|use of closed network connection/ },
    // client-go's rate limiter refusing to wait past the call's deadline; the API server's own timeout
    { cause: "a call that timed out", pattern: /context deadline exceeded|code = DeadlineExceeded|i\/o timeout|TLS handshake timeout|net\/http: request canceled|would exceed context deadline|the server was unable to return a response in the time allotted/ },
    // gRPC's own words when it cannot reach the socket: also where csi-sanity compares the code it got (Unavailable) with the one it wanted
    { cause: "a plugin's socket not served (the plugin restarting)", pattern: /code = Unavailable|connection refused|transport is closing|error reading from server: EOF|transport: Error while dialing: dial unix / },
];

/** Why a failed spec may run again, or undefined when its failure is an answer of the driver's (it must not). */
export function transientCause(spec: SanitySpec): string | undefined {
    if (!failedSpec(spec) || spec.failure === undefined) return undefined;
    // a spec ginkgo stopped (its own timeout, an interrupt) is not a plugin's timeout
    if (spec.state !== "failed") return undefined;
    return transientCauses.find((c) => c.pattern.test(spec.failure!.message))?.cause;
}

/** A regular expression (Go's RE2, as ginkgo reads `--ginkgo.focus`) matching exactly these specs' full texts. */
export function focusOn(texts: string[]): string {
    if (texts.length === 0) throw new Error("focusOn: no spec");
    const escape = (t: string) => t.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
    return `^(${texts.map(escape).join("|")})$`;
}

/** A run's specs with those a rerun decided (decidedSpec) replaced by their new results. */
export function withRerun(first: SanitySpec[], rerun: SanitySpec[]): SanitySpec[] {
    const again = new Map(rerun.filter(decidedSpec).map((s) => [s.text, s]));
    return first.map((s) => again.get(s.text) ?? s);
}
