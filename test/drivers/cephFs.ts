/**
 * How a rendered ceph-csi container is started, whichever way the test runs it (in the Ceph
 * tier's namespace, prebuilt/cephCsiRig.ts, or in a guest, guestPod.ts): the container, its env
 * as the kubelet gives it, its args expanded.
 */
import * as assert from "node:assert/strict";
import type { RenderedContainer, RenderedPod } from "./prebuilt/cephCsiRig";

/** The csi-cephfsplugin container of a rendered ceph-csi pod: no command (the image's entrypoint, cephcsi, runs with the rendered args). */
export function cephFsPluginContainer(pod: RenderedPod, podName: string): RenderedContainer {
    const ctr = pod.containers.find((x) => x.name === "csi-cephfsplugin");
    assert.ok(ctr, `${podName}: no csi-cephfsplugin container`);
    assert.equal(ctr.command, undefined, `${podName}: csi-cephfsplugin has a command`);
    return ctr;
}

/** A container's env as the kubelet gives it (spec.nodeName = `nodeName`, metadata.namespace = zcloud-storage). */
export function downwardEnv(ctr: RenderedContainer, podName: string, nodeName: string): Record<string, string> {
    const env: Record<string, string> = {};
    for (const e of ctr.env) {
        const field = e.valueFrom?.fieldRef?.fieldPath;
        if (e.value !== undefined) env[e.name] = e.value;
        else if (field === "spec.nodeName") env[e.name] = nodeName;
        else if (field === "metadata.namespace") env[e.name] = "zcloud-storage";
        else throw new Error(`${podName}: env ${e.name} has no value the test can give`);
    }
    return env;
}

/** A container's args with `$(VAR)` expanded from its env, as Kubernetes does. */
export function expandedArgs(ctr: RenderedContainer, env: Record<string, string>, podName: string): string[] {
    return ctr.args.map((a) =>
        a.replace(/\$\((\w+)\)/g, (_, v: string) => {
            assert.ok(env[v] !== undefined, `${podName}: $(${v}) is not in the container's env`);
            return env[v];
        }),
    );
}

