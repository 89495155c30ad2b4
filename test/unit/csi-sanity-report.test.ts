import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decidedSpec, failedSpec, focusOn, ranSpec, sanityCounts, sanitySpecs, skippedAsItRan, transientCause, withRerun } from "../drivers/csiSanityReport";

/** A spec report as ginkgo v2 writes it in `--ginkgo.json-report` (the fields read). */
const specReport = (containers: string[], leaf: string, state: string, failure?: { FailureNodeType: string; Message: string }, leafType = "It") => ({
    ContainerHierarchyTexts: containers,
    LeafNodeType: leafType,
    LeafNodeText: leaf,
    State: state,
    ...(failure ? { Failure: failure } : {}),
});
const reportOf = (...specs: object[]) => JSON.stringify([{ SuiteDescription: "CSI Driver Test Suite", SuiteSucceeded: false, SpecReports: specs }]);

// csi-sanity's messages as a CI run of the guests' file printed them (test/nodes/README.md)
const cleanupLost = `resource cleanup failed
Expected
    <[]error | len:1, cap:1>: [
        <*errors.errorString | 0x13d4091540a0>{
            s: "DeleteVolume for volume ID 30acfbcf failed: rpc error: code = Internal desc = Delete \\"https://10.96.0.1:443/apis/topolvm.io/v1/logicalvolumes/sanity-node-full-10\\": http2: client connection lost",
        },
    ]
to be empty`;
const probeTimedOut = `Unexpected error:
    <*status.Error | 0xc000>:
    rpc error: code = FailedPrecondition desc = Get "https://10.96.0.1:443/apis/storage.k8s.io/v1/csidrivers/topolvm.io": context deadline exceeded
occurred`;
const wrongCode = `Expected
    <codes.Code>: 13
to equal
    <codes.Code>: 5`;

describe("csi-sanity's JSON report", () => {
    test("specs by their full text (the suite's description, containers, leaf), with state and failure; suite nodes only when they failed", () => {
        const specs = sanitySpecs(reportOf(
            specReport([], "", "passed", undefined, "BeforeSuite"),
            specReport(["Node Service"], "should be idempotent", "failed", { FailureNodeType: "AfterEach", Message: cleanupLost }),
            specReport(["ExpandVolume [Controller Server]"], "should work", "passed"),
            specReport(["Controller Service [Controller Server]", "CreateSnapshot"], "should create a snapshot", "skipped"),
            specReport([], "", "failed", { FailureNodeType: "AfterSuite", Message: "boom" }, "AfterSuite"),
        ));
        assert.deepEqual(specs, [
            { text: "CSI Driver Test Suite Node Service should be idempotent", state: "failed", failure: { in: "AfterEach", message: cleanupLost } },
            { text: "CSI Driver Test Suite ExpandVolume [Controller Server] should work", state: "passed" },
            { text: "CSI Driver Test Suite Controller Service [Controller Server] CreateSnapshot should create a snapshot", state: "skipped" },
            { text: "CSI Driver Test Suite AfterSuite", state: "failed", failure: { in: "AfterSuite", message: "boom" } },
        ]);
        assert.deepEqual(sanityCounts(specs), { total: 4, passed: 1, failed: 2, pending: 0, skipped: 1 });
    });

    test("a report that is not one suite's is refused", () => {
        assert.throws(() => sanitySpecs("[]"), { message: "csi-sanity report: one suite expected, got 0" });
        assert.throws(() => sanitySpecs("{}"), { message: "csi-sanity report: one suite expected, got object" });
        assert.throws(() => sanitySpecs('[{"SpecReports": []}]'), { message: "csi-sanity report: no SuiteDescription or SpecReports" });
    });

    test("a failure runs again only when a plugin's call timed out or lost its connection, never on an answer of the driver's", () => {
        const failed = (message: string, state = "failed") => ({ text: "t", state, failure: { in: "It", message } });
        assert.equal(transientCause(failed(cleanupLost)), "a connection to the API server lost");
        assert.equal(transientCause(failed(probeTimedOut)), "a call that timed out");
        assert.equal(transientCause(failed("rpc error: code = Unavailable desc = connection error: dial unix /csi/csi.sock: connect: connection refused")), "a plugin's socket not served (the plugin restarting)");
        // csi-sanity's comparison of codes, made with the plugin's socket gone
        const socketGone = 'unexpected error: connection error: desc = "transport: Error while dialing: dial unix /var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock: connect: no such file or directory"\nExpected\n    <codes.Code>: 14\nto equal\n    <codes.Code>: 3';
        assert.equal(transientCause(failed(socketGone)), "a plugin's socket not served (the plugin restarting)");
        // topolvm-node's readiness check, told by Probe: client-go's rate limiter at the check's 10 s deadline
        assert.equal(transientCause(failed("rpc error: code = FailedPrecondition desc = client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")), "a call that timed out");
        assert.equal(transientCause(failed("rpc error: code = Internal desc = the server was unable to return a response in the time allotted, but may still be processing the request (get logicalvolumes.topolvm.io pvc-1)")), "a call that timed out");
        assert.equal(transientCause(failed('rpc error: code = Internal desc = Get "https://10.250.0.1:6443/apis/storage.k8s.io/v1/csidrivers/topolvm.io": read tcp 10.250.0.11:41234->10.250.0.1:6443: read: connection reset by peer')), "a connection to the API server lost");
        assert.equal(transientCause(failed('rpc error: code = Internal desc = Put "https://10.250.0.1:6443/apis/topolvm.io/v1/logicalvolumes/x": unexpected EOF')), "a connection to the API server lost");
        assert.equal(transientCause(failed(wrongCode)), undefined);
        assert.equal(transientCause(failed("rpc error: code = NotFound desc = volume not found")), undefined);
        // ginkgo's own stop, a panic: not a plugin's timeout
        assert.equal(transientCause(failed("context deadline exceeded", "timedout")), undefined);
        assert.equal(transientCause(failed("context deadline exceeded", "panicked")), undefined);
        assert.equal(transientCause({ text: "t", state: "passed" }), undefined);
        assert.equal(failedSpec({ text: "t", state: "pending" }), false);
        assert.equal(failedSpec({ text: "t", state: "interrupted" }), true);
    });

    test("the rerun's results replace the first run's for the specs it ran; the rest are kept", () => {
        const first = [
            { text: "a", state: "passed" },
            { text: "b", state: "failed", failure: { in: "It", message: probeTimedOut } },
            { text: "c", state: "skipped" },
        ];
        // a focused run reports every other spec skipped, the pending one pending
        assert.deepEqual(withRerun([...first, { text: "d", state: "pending" }], [{ text: "a", state: "skipped" }, { text: "b", state: "passed" }, { text: "c", state: "skipped" }, { text: "d", state: "pending" }]), [
            { text: "a", state: "passed" },
            { text: "b", state: "passed" },
            { text: "c", state: "skipped" },
            { text: "d", state: "pending" },
        ]);
        assert.deepEqual([...first, { text: "d", state: "pending" }].filter(ranSpec).map((s) => s.text), ["a", "b"]);
    });

    // A GroupController spec as the lvm tier's thick storage met it (test/nodes/README.md): its
    // BeforeEach asks the plugin's capabilities, so it failed while topolvm-node's socket was gone;
    // run again, csi-sanity found the capability not claimed and skipped it (ginkgo's Skip()).
    const groupSnapshot = ["GroupController Service [GroupController VolumeGroupSnapshots]", "CreateVolumeGroupSnapshot"];
    const groupSnapshotText = `CSI Driver Test Suite ${groupSnapshot.join(" ")} should fail when no name is provided`;
    const socketGone = 'Unexpected error:\n    rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock: connect: no such file or directory"\noccurred';

    test("a spec that skipped itself as it ran keeps its reason and is told from one a pattern left out", () => {
        const specs = sanitySpecs(reportOf(
            specReport(groupSnapshot, "should fail when no name is provided", "skipped", { FailureNodeType: "BeforeEach", Message: "GroupControllerService not supported" }),
            specReport(["Controller Service [Controller Server]", "CreateSnapshot"], "should create a snapshot", "skipped"),
        ));
        assert.deepEqual(specs[0], { text: groupSnapshotText, state: "skipped", failure: { in: "BeforeEach", message: "GroupControllerService not supported" } });
        assert.deepEqual(specs.map(skippedAsItRan), [true, false]);
        assert.deepEqual(specs.map(decidedSpec), [true, false]);
        assert.deepEqual(specs.map(ranSpec), [false, false]);
        assert.deepEqual(specs.map(failedSpec), [false, false]);
        assert.deepEqual(sanityCounts(specs), { total: 2, passed: 0, failed: 0, pending: 0, skipped: 2 });
        // ginkgo's own skips after a failure (ordered containers) are not a capability's answer
        for (const message of ["Spec skipped because an earlier spec in an ordered container failed", "Spec skipped because a BeforeAll node failed"]) {
            assert.equal(skippedAsItRan({ text: "t", state: "skipped", failure: { in: "It", message } }), false, message);
        }
    });

    test("a spec failed on a gone socket and skipped by its capability check when run again counts as skipped", () => {
        const first = sanitySpecs(reportOf(
            specReport(groupSnapshot, "should fail when no name is provided", "failed", { FailureNodeType: "BeforeEach", Message: socketGone }),
            specReport(["Node Service"], "should work", "failed", { FailureNodeType: "It", Message: socketGone }),
            specReport(["Controller Service [Controller Server]", "CreateSnapshot"], "should create a snapshot", "skipped"),
        ));
        assert.equal(transientCause(first[0]), "a plugin's socket not served (the plugin restarting)");
        // the focused rerun: the two failed specs decided, the third left out by the focus
        const rerun = sanitySpecs(reportOf(
            specReport(groupSnapshot, "should fail when no name is provided", "skipped", { FailureNodeType: "BeforeEach", Message: "GroupControllerService not supported" }),
            specReport(["Node Service"], "should work", "passed"),
            specReport(["Controller Service [Controller Server]", "CreateSnapshot"], "should create a snapshot", "skipped"),
        ));
        assert.deepEqual(rerun.filter(decidedSpec).map((s) => s.text), first.filter(failedSpec).map((s) => s.text));
        const merged = withRerun(first, rerun);
        assert.deepEqual(merged.map((s) => s.state), ["skipped", "passed", "skipped"]);
        assert.deepEqual(sanityCounts(merged), { total: 3, passed: 1, failed: 0, pending: 0, skipped: 2 });
    });
});

describe("focusOn", () => {
    // spec texts as csi-sanity's are made: words, brackets, parentheses, dots, slashes, quotes
    const specText = fc.array(fc.constantFrom("a", "b", " ", "[", "]", "(", ")", ".", "*", "+", "?", "|", "^", "$", "\\", "{", "}", "/", "'", "-"), { minLength: 1, maxLength: 12 }).map((cs) => cs.join(""));

    test("matches exactly the specs given, whole texts only (RE2 and JavaScript read these escapes alike)", () => {
        fc.assert(fc.property(fc.uniqueArray(specText, { minLength: 2, maxLength: 6 }), fc.integer({ min: 1 }), (texts, n) => {
            const chosen = texts.slice(0, 1 + (n % (texts.length - 1)));
            const focus = new RegExp(focusOn(chosen));
            for (const t of texts) assert.equal(focus.test(t), chosen.includes(t), `${JSON.stringify(t)} against ${focus}`);
            // a chosen text inside a longer one is not matched
            for (const t of chosen) assert.equal(focus.test(`x ${t}`) && !chosen.includes(`x ${t}`), false);
        }));
    });

    test("no spec is refused (an empty focus would run the whole suite)", () => {
        assert.throws(() => focusOn([]), { message: "focusOn: no spec" });
    });
});
