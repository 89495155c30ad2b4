import * as pulumi from "@pulumi/pulumi";
import { cephFsStorageType } from "./cephfs/storageType";
import { ConfigIssue, ConfigValidationError } from "./config/errors";
import { StackModel } from "./config/model";
import { CsiDriverRef } from "./k8s/driverRef";
import { storageNamespace } from "./k8s/namespace";
import { lvmStorageType } from "./lvm/storageType";
import { iscsiStorageType } from "./iscsi/storageType";
import { nfsStorageType } from "./nfs/storageType";
import { SshSettings, sshAgentProblem } from "./node/nodeCommand";
import { isSecretConfigKey } from "./config/load";
import { drainKubeTarget } from "./k8s/kubeTarget";
import { DeployContext } from "./storageType";
import { StackMonitoring } from "./monitoring/stackMonitoring";
import { checkOperatorCrds, missingCrdsMessage, offlinePlanEnv, uncheckedCrdsMessage } from "./monitoring/operatorCrds";
import { TypeMonitoring } from "./monitoring/typeMonitoring";

/**
 * Every storage type the program builds, in the order their resources are registered. A new
 * type is a folder with its definition and one line here.
 */
export const storageTypes = {
    lvm: lvmStorageType,
    nfs: nfsStorageType,
    cephfs: cephFsStorageType,
    iscsi: iscsiStorageType,
} as const;

type Registry = typeof storageTypes;
type ComponentOf<K extends keyof Registry> = ReturnType<Registry[K]["component"]>;

export type DeployedStorages = {
    namespace: pulumi.Output<string>;
    /** Storage name -> StorageClass name. */
    storageClasses: Record<string, pulumi.Output<string>>;
    /** Present while monitoring is on (zcloud-storage:monitoring). */
    monitoring?: StackMonitoring;
    /** Type -> storage name -> the stack outputs of that storage. */
    outputs: { [K in keyof Registry]: Record<string, Record<string, pulumi.Input<unknown>>> };
} & { [K in keyof Registry]: ComponentOf<K>[] };

function sshSettings(model: StackModel): SshSettings | undefined {
    const ssh = model.ssh;
    if (!ssh) {
        return undefined;
    }
    return {
        ...ssh,
        privateKey: ssh.privateKey === undefined ? undefined : pulumi.secret(ssh.privateKey),
        bastion: ssh.bastion && {
            ...ssh.bastion,
            privateKey: ssh.bastion.privateKey === undefined ? undefined : pulumi.secret(ssh.bastion.privateKey),
        },
    };
}

/** Type-specific checks of every type, all reported together, before any resource exists. */
function checkTypes(model: StackModel): void {
    const issues = Object.values(storageTypes).flatMap((definition) => {
        const def = definition as unknown as DefinitionOfAnyType;
        const storages = model[definition.type] as unknown[];
        return storages.length > 0 && def.check ? def.check(storages, model) : [];
    });
    if (issues.length > 0) {
        throw new ConfigValidationError(issues);
    }
}

/**
 * Turns a validated model into resources: namespace, then per type its shared driver and one
 * component per storage. With `sharedResources: external` the namespace and the drivers belong to
 * another stack: nothing of them is registered, storages refer to them by name.
 */
export function deployStorages(model: StackModel, opts: pulumi.ComponentResourceOptions = {}): DeployedStorages {
    checkTypes(model);
    const agentProblem = sshAgentProblem(model.ssh?.agent ?? false, pulumi.runtime.isDryRun(), process.env);
    if (agentProblem) {
        throw new ConfigValidationError([{ path: "ssh.agent", message: agentProblem }]);
    }
    if (model.monitoring?.prometheusOperator && process.env[offlinePlanEnv] !== "1") {
        operatorCrdsOrStop();
    }
    const external = model.sharedResources === "external";
    const namespace = external ? pulumi.output(model.namespace) : storageNamespace(model.namespace, opts).metadata.name;
    const ssh = sshSettings(model);
    const ctx: DeployContext = {
        model,
        namespace,
        imageRegistry: model.imageRegistry,
        opts,
        ssh: () => {
            if (!ssh) {
                // Validation reports this with its fix; reaching here means the model was built by hand.
                throw new Error("ssh settings are required for storages that prepare nodes");
            }
            return ssh;
        },
        kube: () => {
            // kubectl where `pulumi up` runs must reach the cluster the Kubernetes provider manages.
            const kubernetes = new pulumi.Config("kubernetes");
            return drainKubeTarget(kubernetes.get("context"), kubernetes.get("kubeconfig"), isSecretConfigKey("kubernetes:kubeconfig"));
        },
    };
    const storageClasses: Record<string, pulumi.Output<string>> = {};
    const deployed: Record<string, unknown> = { namespace, storageClasses, outputs: {} };
    const expectedDrivers: string[] = [];
    const watched: Record<string, TypeMonitoring> = {};
    const outputs = deployed.outputs as Record<string, Record<string, unknown>>;
    for (const [type, definition] of Object.entries(storageTypes) as Array<[keyof Registry, Registry[keyof Registry]]>) {
        // One generic path for every type; each definition is type-checked where it is written.
        const def = definition as unknown as DefinitionOfAnyType;
        const storages = model[type] as Array<{ name: string }>;
        const listed = model.drivers?.some((d) => d === type) ?? false;
        const { shared, components } = storages.length > 0 || listed ? deployType(def, storages, ctx, external) : { shared: undefined, components: [] };
        if (external && storages.length > 0) {
            expectedDrivers.push((shared as CsiDriverRef).driverName);
        }
        outputs[type] = {};
        components.forEach((c, i) => {
            storageClasses[storages[i].name] = c.storageClassName;
            outputs[type][storages[i].name] = def.outputs(c);
        });
        deployed[type] = components;
        if (model.monitoring && (storages.length > 0 || listed)) {
            watched[type] = def.monitoring(storages, { namespace: model.namespace, ownsDriver: !external, runbookBaseUrl: model.monitoring.runbookBaseUrl });
        }
    }
    if (model.monitoring) {
        deployed.monitoring = new StackMonitoring("monitoring", { namespace, namespaceName: model.namespace, config: model.monitoring, types: watched }, opts);
    }
    if (external) {
        // The preview and the offline plan say what this stack needs from the owning stack.
        pulumi.log.warn(expectationNote(model.namespace, expectedDrivers));
    }
    return deployed as DeployedStorages;
}

/**
 * Stops before any resource when the cluster lacks the Prometheus Operator's CRDs (one line, with
 * what to do); a cluster kubectl cannot ask only gets a warning (the provider tells at apply).
 */
function operatorCrdsOrStop(): void {
    const kubernetes = new pulumi.Config("kubernetes");
    const kubeconfig = kubernetes.get("kubeconfig");
    const target = drainKubeTarget(kubernetes.get("context"), kubeconfig, isSecretConfigKey("kubernetes:kubeconfig"));
    const result = checkOperatorCrds({ context: target.context, kubeconfigPath: target.kubeconfigPath, kubeconfigContent: target.kubeconfigContent === undefined ? undefined : kubeconfig });
    if ("unknown" in result) {
        pulumi.log.warn(uncheckedCrdsMessage(result.unknown));
    } else if (result.missing.length > 0) {
        throw new ConfigValidationError([{ path: "monitoring.prometheusOperator", message: missingCrdsMessage(result.missing) }]);
    }
}

/** What a stack with `sharedResources: external` needs to exist before its `pulumi up`. */
export function expectationNote(namespace: string, driverNames: string[]): string {
    const drivers = driverNames.length > 0 ? ` and the CSI driver${driverNames.length === 1 ? "" : "s"} ${driverNames.join(", ")}` : "";
    return `sharedResources: external: this stack creates no Namespace and no CSI driver; it expects the Namespace ${namespace}${drivers}, deployed by the stack that owns the shared resources (pulumi up that stack first)`;
}

type AnyComponent = { storageClassName: pulumi.Output<string> };
interface DefinitionOfAnyType {
    check?(storages: unknown[], model: StackModel): ConfigIssue[];
    shared(storages: unknown[], ctx: DeployContext): unknown;
    external?(ctx: DeployContext): unknown;
    component(storage: unknown, index: number, shared: unknown, ctx: DeployContext): AnyComponent;
    outputs(component: AnyComponent): Record<string, pulumi.Input<unknown>>;
    monitoring(storages: unknown[], ctx: { namespace: string; ownsDriver: boolean; runbookBaseUrl?: string }): TypeMonitoring;
}

function deployType(def: DefinitionOfAnyType, storages: unknown[], ctx: DeployContext, external: boolean): { shared: unknown; components: AnyComponent[] } {
    if (external && !def.external) {
        // Validation refuses such storages with its reason; reaching here means the model was built by hand.
        throw new Error("this storage type cannot be deployed without its driver (sharedResources: external)");
    }
    const shared = external ? def.external!(ctx) : def.shared(storages, ctx);
    return { shared, components: storages.map((s, i) => def.component(s, i, shared, ctx)) };
}
