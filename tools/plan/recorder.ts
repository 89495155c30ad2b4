import { createHash } from "crypto";
import * as fs from "fs";
import * as pulumi from "@pulumi/pulumi";
import { offlinePlanEnv } from "../../components/monitoring/operatorCrds";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import { configNamespace, declareSecurePaths } from "../../components/config/load";
import { credentialKeys, PlanConfig, PlannedResource, secretMarker } from "./model";

// The SDK's wire format marks secrets with this signature key/value pair.
const sigKey = "4dabf18193072939515e22adb298388d";
const secretSig = "1b47061264138c4ac30d75fd1eb44270";
const unknownValue = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/**
 * `value` with `f` applied to each element or property: the same array or object when nothing
 * changed. A plan's record keeps its inputs twice (redacted, and as policies see them) for
 * every resource: shared subtrees keep the second copy nearly free (5000 nodes: hundreds of MiB).
 */
function mapShared(value: unknown[] | Record<string, unknown>, f: (v: unknown, k: string) => unknown): unknown {
    if (Array.isArray(value)) {
        const mapped = value.map((v, i) => f(v, String(i)));
        return mapped.every((v, i) => v === value[i]) ? value : mapped;
    }
    const entries = Object.entries(value);
    const mapped = entries.map(([k, v]) => [k, f(v, k)] as const);
    return mapped.every(([, v], i) => v === entries[i][1]) ? value : Object.fromEntries(mapped);
}

/** Replaces secret values by "[secret]" and drops the SDK's internal markers. */
export function redact(value: unknown): unknown {
    if (value && typeof value === "object") {
        if ((value as Record<string, unknown>)[sigKey] === secretSig) {
            return secretMarker;
        }
        return mapShared(value as Record<string, unknown>, redact);
    }
    return value === unknownValue ? "[unknown]" : value;
}

/**
 * What a CrossGuard policy sees: values as they are, secret objects opened (a remote command's
 * whole connection is secret, yet `connection.hostKey` must be checkable); values that are
 * secrets themselves, and credentials inside opened ones, stay "[secret]".
 */
export function redactForPolicy(value: unknown, insideSecret = false): unknown {
    if (value && typeof value === "object") {
        const obj = value as Record<string, unknown>;
        if (obj[sigKey] === secretSig) {
            const inner = obj.value;
            return inner && typeof inner === "object" && !Array.isArray(inner) ? redactForPolicy(inner, true) : secretMarker;
        }
        return mapShared(obj, (v, k) => (insideSecret && !Array.isArray(obj) && credentialKeys.has(k) ? secretMarker : redactForPolicy(v, insideSecret)));
    }
    return value === unknownValue ? "[unknown]" : value;
}

/** Strings this long are node scripts; equal ones of one resource are kept once. */
const largeString = 4096;

/**
 * A remote command's create and update are the same script (tens of KB each, per node): the
 * record keeps one copy of equal large top-level strings instead of one per field.
 */
function shareEqualStrings(inputs: Record<string, unknown>): Record<string, unknown> {
    const large: string[] = [];
    for (const [k, v] of Object.entries(inputs)) {
        if (typeof v !== "string" || v.length < largeString) {
            continue;
        }
        const same = large.find((s) => s === v);
        if (same === undefined) {
            large.push(v);
        } else {
            inputs[k] = same;
        }
    }
    return inputs;
}

const assetHashes = new Map<string, string>();

/**
 * File assets as the engine keeps them in state: path and sha256 (it compares assets by hash).
 * The SDK's asset object holds its path as a promise, which JSON would print as `{}`.
 */
async function resolveAssets(value: unknown): Promise<unknown> {
    if (Array.isArray(value)) {
        return Promise.all(value.map(resolveAssets));
    }
    if (value instanceof pulumi.asset.FileAsset) {
        const file = await value.path;
        let sha256 = assetHashes.get(file);
        if (sha256 === undefined) {
            sha256 = createHash("sha256").update(fs.readFileSync(file)).digest("hex");
            assetHashes.set(file, sha256);
        }
        return { asset: "file", path: file, sha256 };
    }
    if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
        const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await resolveAssets(v)] as const));
        return Object.fromEntries(entries);
    }
    return value;
}

interface RegisterRequest {
    getType(): string;
    getName(): string;
    getParent(): string;
    getCustom(): boolean;
    getDependenciesList(): string[];
    getDeletebeforereplace(): boolean;
    getRetainondelete(): boolean | undefined;
    getReplaceonchangesList(): string[];
    getIgnorechangesList(): string[];
    getObject(): unknown;
}

/**
 * The SDK's mock monitor, plus a record of every registration with what the engine would see:
 * parent, dependencies (explicit and from inputs), options and inputs with secrets kept marked.
 */
class RecordingMonitor extends MockMonitor {
    readonly records: PlannedResource[] = [];
    /** Per record, the microtask generation it was recorded in (see MicrotaskGenerations). */
    readonly generations: number[] = [];

    constructor(
        mocks: pulumi.runtime.Mocks,
        private readonly clock: MicrotaskGenerations,
    ) {
        super(mocks);
    }

    async registerResource(req: RegisterRequest, callback: (err: unknown, resp: { getUrn(): string } | undefined) => void): Promise<void> {
        const deserialized = pulumi.runtime.deserializeProperties(req.getObject() as never, true) as Record<string, unknown>;
        const inputs = shareEqualStrings(req.getType() === "command:remote:CopyToRemote" ? ((await resolveAssets(deserialized)) as Record<string, unknown>) : deserialized);
        const record: PlannedResource = {
            urn: "",
            type: req.getType(),
            name: req.getName(),
            parent: req.getParent(),
            dependencies: [...new Set(req.getDependenciesList())].sort(),
            inputs: redact(inputs) as Record<string, unknown>,
            policyInputs: redactForPolicy(inputs) as Record<string, unknown>,
            custom: req.getCustom(),
            deleteBeforeReplace: req.getDeletebeforereplace(),
            retainOnDelete: req.getRetainondelete() ?? false,
            replaceOnChanges: req.getReplaceonchangesList(),
            ...(req.getIgnorechangesList().length ? { ignoreChanges: req.getIgnorechangesList() } : {}),
        };
        this.records.push(record);
        this.generations.push(this.clock.now());
        await super.registerResource(req, (err: unknown, resp: { getUrn(): string } | undefined) => {
            record.urn = resp?.getUrn() ?? "";
            callback(err, resp);
        });
    }
}

/** The ClusterIP a plan gives a Service that sets none (the API server allocates the real one). */
export function plannedClusterIp(name: string): string {
    const hash = createHash("sha256").update(name).digest();
    return `10.96.${hash[0]}.${(hash[1] % 253) + 1}`;
}

/**
 * Outputs a provider computes, made up deterministically from the resource name so the program's
 * pure functions run on realistic shapes: random ids and bytes, a Service's ClusterIP.
 */
function computedOutputs(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
    const hash = createHash("sha256").update(name).digest();
    switch (type) {
        case "random:index/randomUuid:RandomUuid": {
            const h = hash.toString("hex");
            return { result: `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}` };
        }
        case "random:index/randomBytes:RandomBytes": {
            const bytes = hash.subarray(0, Number(inputs.length ?? 16));
            return { base64: bytes.toString("base64"), hex: bytes.toString("hex") };
        }
        case "kubernetes:core/v1:Service":
            return inputs.spec?.clusterIP ? {} : { spec: { ...inputs.spec, clusterIP: plannedClusterIp(name) } };
        default:
            return {};
    }
}

/** Command scripts: inputs no program reads back, the largest strings of a plan. */
const scriptInputs = ["create", "update", "delete"];

/**
 * What the engine echoes of a resource's inputs as its outputs. A command's scripts are left out:
 * the mock monitor keeps every state and the SDK another copy as outputs, and for 5000 nodes those
 * copies of scripts that nothing reads would double the plan's memory.
 */
function echoedInputs(type: string, inputs: Record<string, unknown>): Record<string, unknown> {
    if (!type.startsWith("command:")) {
        return inputs;
    }
    return Object.fromEntries(Object.entries(inputs).filter(([k]) => !scriptInputs.includes(k)));
}

/** Mocks answer like a preview: the engine echoes inputs as outputs and knows no ids yet. */
const mocks: pulumi.runtime.Mocks = {
    newResource: (args) => ({
        id: `${args.name}-id`,
        state: { ...echoedInputs(args.type, args.inputs), ...computedOutputs(args.type, args.name, args.inputs) },
    }),
    call: (args) => args.inputs,
};

/**
 * Counts microtask generations while a program registers its resources. Under the mock runtime a
 * program registers everything in microtasks (no I/O, no timers), and the queue is FIFO: a job
 * queued by a job of generation g runs in generation g + 1, after every job of generation g. A
 * chain that queues its next step each time it runs (one job per generation) counts them. A
 * resource's generation is the depth of its registration chain, which does not depend on how many
 * other nodes the program makes: the plan in pieces (tools/plan/pieces.ts) merges on it. The
 * chain stops when the program is done, or after `idleLimit` generations without a record (a
 * program waiting for I/O would otherwise never get it): a record after that marks the
 * generations unusable.
 */
export class MicrotaskGenerations {
    private generation = 0;
    private idle = 0;
    private running = true;
    /** False when a record came after the chain stopped: generations say nothing then. */
    reliable = true;

    constructor(private readonly idleLimit = 100_000) {
        const step = () => {
            if (!this.running) {
                return;
            }
            this.generation++;
            if (++this.idle > this.idleLimit) {
                this.running = false;
                return;
            }
            queueMicrotask(step);
        };
        queueMicrotask(step);
    }

    /** The current generation (and the chain counts from here as active again). */
    now(): number {
        if (!this.running) {
            this.reliable = false;
        }
        this.idle = 0;
        return this.generation;
    }

    stop(): void {
        this.running = false;
    }
}

/** What a program registered, in order, with each record's microtask generation. */
export interface Recorded {
    records: PlannedResource[];
    generations: number[];
    /** Whether the generations can order records of separate runs (see MicrotaskGenerations). */
    generationsReliable: boolean;
}

/**
 * Runs a Pulumi program under the mock runtime with the given config and returns every resource
 * it registered. One run per process: the SDK keeps global state.
 */
export async function recordProgram(config: PlanConfig, program: () => unknown): Promise<PlannedResource[]> {
    return (await recordProgramWithGenerations(config, program)).records;
}

/** recordProgram, with the generation of each record. */
export async function recordProgramWithGenerations(config: PlanConfig, program: () => unknown): Promise<Recorded> {
    const configStrings = Object.fromEntries(
        Object.entries(config.values).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    );
    pulumi.runtime.setAllConfig(configStrings, config.secretKeys);
    declareSecurePaths(config.securePaths);
    // The program's project: its `new pulumi.Config()` reads `<project>:` keys, as under the CLI.
    const project = config.project ?? configNamespace;
    // The program asks no cluster in the offline plan (components/monitoring/operatorCrds.ts).
    process.env[offlinePlanEnv] = "1";
    await pulumi.runtime.setMocks(mocks, project, config.stack, true);
    const clock = new MicrotaskGenerations();
    const monitor = new RecordingMonitor(mocks, clock);
    pulumi.runtime.setMockOptions(monitor, project, config.stack, true);
    try {
        await pulumi.runtime.runInPulumiStack(async () => program());
    } finally {
        clock.stop();
    }
    await pulumi.runtime.disconnect();
    return { records: monitor.records, generations: monitor.generations, generationsReliable: clock.reliable };
}
