import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { commonLabels } from "../naming";

/**
 * The storage namespace. Node agents need privileged pods, hostPID and host paths, which the
 * `restricted` and `baseline` Pod Security levels forbid; only this namespace gets `privileged`.
 */
export function storageNamespace(name: string, opts: pulumi.CustomResourceOptions): k8s.core.v1.Namespace {
    return new k8s.core.v1.Namespace(
        "namespace",
        {
            metadata: {
                name,
                labels: {
                    ...commonLabels("namespace"),
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                },
            },
        },
        opts,
    );
}
