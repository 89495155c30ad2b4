import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { DrainKubeTarget, kubeconfigEnv } from "../k8s/kubeTarget";
import { NodeStorageType, devicesAnnotationKey, nodeResourceName, storageLabelKey } from "../naming";
import { shellQuote } from "./script";

export interface NodeStorageLabelArgs {
    node: string;
    type: NodeStorageType;
    storage: string;
    devices: string[];
    /** The cluster the Kubernetes provider uses (kubectl runs where `pulumi up` runs). */
    kube: DrainKubeTarget;
}

/**
 * The field manager of a storage's node labels. It differs from the manager of the NodePatch that
 * set them before (`zcloud-<storage>`), so deleting that NodePatch (a relinquish of its manager's
 * fields) leaves the label this one also owns.
 */
export function nodeLabelFieldManager(storage: string): string {
    return `zcloud-storage/${storage}`;
}

/** The Node object a label command applies: only the storage's label and devices annotation. */
export function nodeLabelManifest(a: Omit<NodeStorageLabelArgs, "kube">): string {
    return JSON.stringify({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: a.node, labels: { [storageLabelKey(a.type)]: a.storage }, annotations: { [devicesAnnotationKey(a.type)]: a.devices.join(",") } },
    });
}

/**
 * The shell text of a label command. Create (and update: the provider runs create again)
 * server-side-applies the Node on its stdin after checking the node exists (an apply would create
 * a Node; the check reads no stdin); delete applies the bare Node under the same field manager,
 * which removes the fields only this manager owned, unless the node is gone. Both refuse a Node
 * made by a client-side `kubectl apply`. No --force-conflicts: a label key
 * another manager holds with another value fails the command. A kubeconfig's content comes from
 * the secret environment into a private file, never argv. Prints nothing on success.
 */
export function nodeLabelScripts(node: string, storage: string, kube: DrainKubeTarget): { create: string; delete: string } {
    const fromEnv = kube.kubeconfigContent !== undefined;
    const prelude = fromEnv ? `f=$(umask 077;mktemp);trap 'rm -f "$f"' 0;printf '%s\\n' "$${kubeconfigEnv}" >"$f";` : "";
    const target = [...(kube.context ? ["--context", shellQuote(kube.context)] : []), ...(kube.kubeconfigPath ? ["--kubeconfig", shellQuote(kube.kubeconfigPath)] : []), ...(fromEnv ? ['--kubeconfig "$f"'] : [])];
    const k = ["kubectl", ...target].join(" ");
    const apply = `${k} apply --server-side --field-manager=${shellQuote(nodeLabelFieldManager(storage))} -f - >/dev/null`;
    const bare = JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: node } });
    // The node's name, and the annotation of a client-side `kubectl apply` if it has one: kubectl
    // would move that apply's fields to this manager and the apply would then drop them.
    const q = shellQuote(node);
    const get = `n=$(${k} get node ${q} --ignore-not-found -o 'jsonpath={.metadata.name}{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}' </dev/null);`;
    const refuse = `[ "$n" = ${q} ]||{ echo "node ${node}: not found, or made by client-side kubectl apply: not changed" >&2;exit 1;}`;
    return {
        create: `set -eu;${prelude}${get}${refuse};${apply}`,
        delete: `set -eu;${prelude}${get}[ -z "$n" ]||{ ${refuse};printf %s ${shellQuote(bare)}|${apply};}`,
    };
}

/**
 * Marks a node as serving a storage, after its disks are ready (pass the disk command in
 * dependsOn): a local command (where `pulumi up` runs, with kubectl) that applies the storage's
 * label and devices annotation (the Node on stdin, JSON, which the policy pack and the offline plan
 * read). Its state keeps the command and the small manifest, not the live Node.
 * Deleting it first on node removal makes the storage's daemons leave the node before its disks
 * are released.
 */
export function nodeStorageLabel(a: NodeStorageLabelArgs, opts: pulumi.CustomResourceOptions): command.local.Command {
    const scripts = nodeLabelScripts(a.node, a.storage, a.kube);
    return new command.local.Command(
        nodeResourceName(a.storage, a.node, "label"),
        {
            // No `update`: on an update the provider runs `create` again (the same apply).
            create: scripts.create,
            delete: scripts.delete,
            // stdin reaches create (and update), not delete: delete needs only the node's name.
            stdin: nodeLabelManifest(a),
            ...(a.kube.kubeconfigContent ? { environment: { [kubeconfigEnv]: pulumi.secret(a.kube.kubeconfigContent) } } : {}),
        },
        opts,
    );
}
