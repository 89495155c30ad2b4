/**
 * For every resource it registers, Pulumi's Node.js SDK sends the engine the call stack of the
 * resource's constructor (Resource.callsites lifts Error.stackTraceLimit to Infinity for it and
 * parses `new Error().stack`), and the engine keeps it in the checkpoint as `stackTrace`: some 20
 * frames, about 1.1 KiB per resource, mostly the SDK's and the language host's own frames. Neither
 * the SDK nor the engine has an option to shorten it. This keeps the frames that say where a
 * resource comes from (`sourcePosition` is the first of them) and drops the rest; every other
 * stack trace (a program's errors) stays as it was.
 */

/** Frames of the SDK's own before the first one it keeps: callsites, stackTrace, Resource, its base class, the resource's class. */
const sdkFrames = 5;

/** Frames kept per resource: the constructor's caller and the three calls above it. */
export const registrationFrames = 4;

/** The frames of the SDK's registration stack (the capture starts in Resource.callsites of @pulumi/pulumi). */
export function isRegistrationStack(frames: readonly NodeJS.CallSite[]): boolean {
    const first = frames[0];
    return first !== undefined && first.getFunctionName() === "callsites" && /[\\/]@pulumi[\\/]pulumi[\\/]resource\.js$/.test(first.getFileName() ?? "");
}

/** A stack as V8 prints it when no Error.prepareStackTrace is set. */
export function formatStack(error: Error, frames: readonly NodeJS.CallSite[]): string {
    const head = Error.prototype.toString.call(error);
    return [head, ...frames.map((f) => `    at ${f}`)].join("\n");
}

/**
 * Keeps `frames` frames (default 4) of each resource's registration stack in the state. Call it in
 * a program before any resource is made: it wraps Error.prepareStackTrace (chaining to one set
 * before, e.g. the language host's source-map support) for the rest of the process.
 */
export function limitRegistrationStackTraces(frames: number = registrationFrames): void {
    if (!Number.isInteger(frames) || frames < 1) {
        throw new Error(`limitRegistrationStackTraces: frames must be a positive integer, got ${frames}`);
    }
    const previous = Error.prepareStackTrace;
    Error.prepareStackTrace = (error, stack) => {
        const kept = isRegistrationStack(stack) ? stack.slice(0, sdkFrames + frames) : stack;
        return previous ? previous(error, kept) : formatStack(error, kept);
    };
}
