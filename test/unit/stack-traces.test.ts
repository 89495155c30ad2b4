/**
 * The registration stack each resource sends the engine (kept in the checkpoint as `stackTrace`,
 * its first frame as `sourcePosition`): limitRegistrationStackTraces keeps its first frames and
 * leaves every other stack trace alone. Resources are registered with the SDK's mock monitor,
 * which receives the same RegisterResourceRequest the engine would.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import { formatStack, isRegistrationStack, limitRegistrationStackTraces } from "../../components/stackTraces";

interface Sent {
    name: string;
    frames: string[];
    sourcePosition: string;
}

const sent: Sent[] = [];
type Position = { getUri(): string; getLine(): number } | undefined;
const where = (p: Position) => (p ? `${p.getUri().split("/").pop()}:${p.getLine()}` : "");

class CapturingMonitor extends MockMonitor {
    async registerResource(req: any, callback: (err: unknown, resp: unknown) => void): Promise<void> {
        const frames = (req.getStacktrace()?.getFramesList() ?? []).map((f: { getPc(): Position }) => where(f.getPc()));
        sent.push({ name: req.getName(), frames, sourcePosition: where(req.getSourceposition()) });
        return super.registerResource(req, callback);
    }
}

const mocks: pulumi.runtime.Mocks = { newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }), call: (a) => a.inputs };

class Thing extends pulumi.CustomResource {
    constructor(name: string) {
        super("test:index:Thing", name, {});
    }
}

// Ten calls deep, as a component's resources are (index.ts -> deployStorages -> ... -> new Command).
function deep(name: string, depth: number): Thing {
    return depth === 0 ? new Thing(name) : deep(name, depth - 1);
}

async function register(name: string): Promise<Sent> {
    const thing = deep(name, 10);
    await new Promise<void>((resolve) => thing.urn.apply(() => resolve()));
    const found = sent.find((s) => s.name === name);
    assert.ok(found, `${name} was not registered`);
    return found;
}

test("each resource's registration stack keeps its first 4 frames; other stack traces are untouched", async () => {
    await pulumi.runtime.setMocks(mocks, "zcloud-storage", "site", false);
    pulumi.runtime.setMockOptions(new CapturingMonitor(mocks), "zcloud-storage", "site", false);

    const before = await register("before");
    assert.ok(before.frames.length > 12, `the SDK sends the whole stack: ${before.frames.length} frames`);
    assert.match(before.sourcePosition, /^stack-traces\.test\.ts:\d+$/);

    limitRegistrationStackTraces();
    const after = await register("after");
    assert.deepEqual(after.frames, before.frames.slice(0, 4));
    assert.equal(after.sourcePosition, before.sourcePosition);
    // The constructor's call, then the calls above it: here the recursion.
    assert.ok(after.frames.every((f) => f.startsWith("stack-traces.test.ts:")), after.frames.join(", "));

    const error = deep10();
    assert.equal(error.stack?.split("\n").length, 1 + Error.stackTraceLimit, "a program's errors keep their frames");
});

function deep10(depth = 20): Error {
    return depth === 0 ? new Error("boom") : deep10(depth - 1);
}

test("a registration stack is one captured in the SDK's Resource.callsites, nothing else", () => {
    let frames: NodeJS.CallSite[] = [];
    const previous = Error.prepareStackTrace;
    Error.prepareStackTrace = (error, stack) => {
        frames = stack;
        return formatStack(error, stack);
    };
    try {
        const stack = new Error("mine").stack;
        assert.equal(isRegistrationStack(frames), false);
        assert.match(stack ?? "", /^Error: mine\n {4}at .*stack-traces\.test\.ts:\d+:\d+/);
        (pulumi.Resource as unknown as { callsites(): unknown }).callsites();
        assert.equal(isRegistrationStack(frames), true);
    } finally {
        Error.prepareStackTrace = previous;
    }
});

test("frames must be a positive integer", () => {
    assert.throws(() => limitRegistrationStackTraces(0), { message: "limitRegistrationStackTraces: frames must be a positive integer, got 0" });
});
