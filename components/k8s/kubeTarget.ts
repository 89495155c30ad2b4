import * as pulumi from "@pulumi/pulumi";
import { isKubeconfigContent } from "../config/formats";

/**
 * The cluster the Kubernetes provider uses, as kubectl options: the stack's kubernetes:context
 * and kubernetes:kubeconfig (a path, or the file's content). Used by what runs kubectl where
 * `pulumi up` runs: the node label commands (node/nodeLabel.ts), the CephFS drains and gates.
 */
export interface DrainKubeTarget {
    context?: string;
    kubeconfigPath?: string;
    kubeconfigContent?: pulumi.Input<string>;
}

/**
 * kubernetes:kubeconfig as the provider reads it: content when it looks like a kubeconfig, else a
 * path. A secret one is always content (validation refuses a secret path, which would reach
 * kubectl's arguments), so it only ever travels in a command's secret environment.
 */
export function drainKubeTarget(context: string | undefined, kubeconfig: string | undefined, kubeconfigIsSecret = false): DrainKubeTarget {
    if (kubeconfig === undefined || kubeconfig === "") {
        return { context };
    }
    return kubeconfigIsSecret || isKubeconfigContent(kubeconfig) ? { context, kubeconfigContent: kubeconfig } : { context, kubeconfigPath: kubeconfig };
}

/** kubectl target options of a local script (content goes through the environment, never argv). */
export function drainKubeArgs(k: DrainKubeTarget): string[] {
    return [...(k.context ? ["--context", k.context] : []), ...(k.kubeconfigPath ? ["--kubeconfig", k.kubeconfigPath] : []), ...(k.kubeconfigContent ? ["--kubeconfig-from-env"] : [])];
}

/** The environment variable that carries a secret kubeconfig's content to a local command. */
export const kubeconfigEnv = "ZCLOUD_DRAIN_KUBECONFIG";
