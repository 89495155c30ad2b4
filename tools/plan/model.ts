import { PlaceholderSecret } from "../../components/config/stackDocument";

/** The offline plan's JSON shape (DESIGN "Offline plan"); tests and reviewers rely on it. */
export interface PlannedResource {
    urn: string;
    type: string;
    name: string;
    parent: string;
    dependencies: string[];
    /** Inputs as the program registered them; secret values replaced by "[secret]". */
    inputs: Record<string, unknown>;
    /** Inputs as a policy sees them (secret objects opened, sensitive leaves redacted); not printed. */
    policyInputs?: Record<string, unknown>;
    custom: boolean;
    deleteBeforeReplace: boolean;
    /** Pulumi forgets it on delete and leaves it in the cluster (`retainOnDelete`). */
    retainOnDelete: boolean;
    /** Input paths whose change replaces the resource (the replaceOnChanges option, which the
     * providers' SDKs also set from their schema, e.g. a command's `triggers`). */
    replaceOnChanges?: string[];
    /** Input paths the engine keeps at their old value once the resource exists (ignoreChanges). */
    ignoreChanges?: string[];
}

/** The config a plan runs with: `zcloud-storage:` keys and others, as a stack file holds them. */
export interface PlanConfig {
    /** Full keys (`zcloud-storage:nodes`) -> values (objects or strings). */
    values: Record<string, unknown>;
    /** Full keys whose value holds a `secure:` leaf. */
    secretKeys: string[];
    /** Full key paths of `secure:` leaves (`zcloud-storage:ssh.privateKey`); the CLI does not pass these. */
    securePaths?: string[];
    stack: string;
    /** When the stack lists config files: the stack file's own values, which Pulumi passes to the program. */
    passedValues?: Record<string, unknown>;
    /** The config files merged into `values`, as listed (`zcloud-storage:configFiles`). */
    configFiles?: string[];
    /** The `secure:` leaves that hold a placeholder, not a ciphertext (components/config/stackDocument.ts). */
    placeholders?: PlaceholderSecret[];
    /** The Pulumi project the program runs as (`pulumi.getProject()`, `new pulumi.Config()`); default zcloud-storage. */
    project?: string;
}

export interface PlanRun {
    resources: PlannedResource[];
    /** Set when the program refused to run (config errors). */
    error?: { kind: "config" | "program"; message: string; issues?: Array<{ path: string; message: string }> };
    warnings: string[];
    /** Measured in the plan process: program run time and peak memory. */
    stats?: { programMs: number; maxRssMb: number };
    /** A plan piece's run (tools/plan/pieces.ts): each record's microtask generation, and whether
     * the program took its piece and the generations can order records of separate runs. */
    piece?: { generations: number[]; taken: boolean; generationsReliable: boolean };
}

export const secretMarker = "[secret]";

/** Credential fields of a remote connection; kept hidden even where a secret object is opened. */
export const credentialKeys: ReadonlySet<string> = new Set(["privateKey", "password", "privateKeyPassword"]);
