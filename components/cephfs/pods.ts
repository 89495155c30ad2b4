import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ServiceAccountGrant } from "../k8s/rbac";
import { mount } from "../k8s/workloads";
import { commonLabels } from "../naming";
import { cephNames } from "./cluster";
import { configHash, guardHash } from "./gates";
import { cephLibraryBundle, cephLibraryFile, cephLibraryName, CephScript, cephScriptBundle, cephScriptDir, cephScriptSetName, ScriptSetScript, scriptSetsAnnotation, scriptSetsValue } from "./scripts";

export type Container = k8s.types.input.core.v1.Container;
export type Volume = k8s.types.input.core.v1.Volume;
export type PodSpec = k8s.types.input.core.v1.PodSpec;
/** A pod template: its spec and the annotations that roll it (the script sets it runs). */
export interface PodTemplate {
    spec: PodSpec;
    annotations?: Record<string, pulumi.Input<string>>;
}
/** A key of the storage's key Secrets (a file of the key directory). */
export type CephKeyName = "mon" | "admin" | "bootstrap-osd" | "csi";

/** Daemon pod annotations that restart a daemon when its ceph.conf or its keys change. */
export const cephConfAnnotation = "storage.zcloud.io/ceph-conf";
export const cephKeysAnnotation = "storage.zcloud.io/ceph-keys";

/**
 * sha256 of the keys a pod mounts, by name (a hash of 16 or more random bytes tells nothing of
 * them): a changed key restarts the daemons that read it. Undefined while a key is unknown.
 */
export function keysHash(keys: Record<string, string | undefined>): string | undefined {
    return Object.values(keys).some((k) => k === undefined) ? undefined : guardHash({ "zcloud-ceph-keys": keys });
}

/** Where the Ceph containers find things (ceph-lib.sh settings). */
export const cephPaths = { conf: "/etc/ceph", keys: "/etc/zcloud/ceph-keys", data: "/var/lib/ceph" };
export const cephEnv = [
    { name: "CEPH_CONF", value: `${cephPaths.conf}/ceph.conf` },
    { name: "ZCLOUD_CEPH_KEYS", value: cephPaths.keys },
    { name: "ZCLOUD_CEPH_DATA", value: cephPaths.data },
];

export interface CephPodsArgs {
    /** The storage's name. */
    storage: string;
    namespace: pulumi.Input<string>;
    /** The Ceph image reference. */
    image: string;
    /** The storage's ceph.conf ConfigMap. */
    conf: k8s.core.v1.ConfigMap;
    /** The account every Ceph pod runs as (no token mounted). */
    account: ServiceAccountGrant;
    /** The storage component: parent of every workload. */
    parent: pulumi.Resource;
    /** ceph.conf's text: its hash rolls the daemons (a changed conf restarts them, gated). */
    confText: pulumi.Output<string>;
    /** The keys of the storage's Secrets (secrets): their hash rolls the daemons that mount them. */
    keys: Record<CephKeyName, pulumi.Output<string>>;
}

/**
 * What every Ceph workload of one storage shares: its image, env and ceph.conf mount, the pod
 * base (account, ceph.conf volume) and the single-replica Deployment daemons run in. Each
 * concern's file (mons, mgr and mds, OSDs, admin pods, filesystem) builds on it.
 */
export class CephPods {
    readonly storage: string;
    readonly names: ReturnType<typeof cephNames>;
    readonly namespace: pulumi.Input<string>;
    readonly account: ServiceAccountGrant;
    readonly child: pulumi.CustomResourceOptions;
    private readonly image: string;
    private readonly confVolume: Volume;
    private readonly scriptSets = new Map<ScriptSetScript, k8s.core.v1.ConfigMap>();
    private libraryMap: k8s.core.v1.ConfigMap | undefined;
    private readonly confHash: pulumi.Output<string>;
    private readonly keys: Record<CephKeyName, pulumi.Output<string>>;
    private readonly templates = new Map<string, k8s.types.input.core.v1.PodTemplateSpec>();

    constructor(a: CephPodsArgs) {
        this.storage = a.storage;
        this.names = cephNames(a.storage);
        this.namespace = a.namespace;
        this.account = a.account;
        this.child = { parent: a.parent };
        this.image = a.image;
        this.confVolume = { name: "ceph-conf", configMap: { name: a.conf.metadata.name } };
        this.confHash = a.confText.apply(configHash);
        this.keys = a.keys;
    }

    /** The pod template of a daemon Deployment made by single() (what its gates guard). */
    templateOf(workload: string): k8s.types.input.core.v1.PodTemplateSpec {
        const t = this.templates.get(workload);
        if (t === undefined) {
            throw new Error(`no daemon workload ${workload} of storage ${this.storage}`);
        }
        return t;
    }

    /** A daemon's restart annotations: ceph.conf's hash and the hash of the keys its pod mounts. */
    private daemonAnnotations(t: PodTemplate): Record<string, pulumi.Input<string>> {
        const keysVolume = (t.spec.volumes as Volume[] | undefined)?.find((v) => v.name === "ceph-keys");
        const mounted = (keysVolume?.secret as { items?: Array<{ key: CephKeyName }> } | undefined)?.items;
        const names = (mounted ?? []).map((i) => i.key);
        const keys = pulumi.unsecret(pulumi.all(Object.fromEntries(names.map((n) => [n, this.keys[n]]))).apply((k) => keysHash(k as Record<string, string | undefined>) as string));
        return { [cephConfAnnotation]: this.confHash, ...(names.length ? { [cephKeysAnnotation]: keys } : {}) };
    }

    /** The storage's common labels for one component. */
    labels(component: string): Record<string, string> {
        return commonLabels(component, this.storage);
    }

    /**
     * The `ceph-keys` volume: only the named keys of a key Secret (read-only for the owner). A
     * pod gets the keys its steps use, nothing more; only the containers that mount it see them.
     */
    keysVolume(secret: k8s.core.v1.Secret, keys: CephKeyName[]): Volume {
        return { name: "ceph-keys", secret: { secretName: secret.metadata.name, defaultMode: 0o400, items: keys.map((key) => ({ key, path: key })) } };
    }

    /** ceph.conf alone: what a long-running daemon with its own keyring mounts. */
    readonly confMount = mount("ceph-conf", cephPaths.conf);

    /** ceph.conf and the key directory: for the steps that act as a Ceph user from a Secret key. */
    get keyedMounts() {
        return [this.confMount, { name: "ceph-keys", mountPath: cephPaths.keys, readOnly: true }];
    }

    /** A container of the Ceph image with the Ceph env, ceph.conf (no keys) and small requests. */
    container(c: Partial<Container> & { name: string }): Container {
        return {
            image: this.image,
            env: cephEnv,
            volumeMounts: [this.confMount],
            resources: { requests: { cpu: "50m", memory: "128Mi" } },
            ...c,
        };
    }

    /**
     * The immutable ConfigMap of one script set (made on first use, one per storage and set). Its
     * name carries the set's id, so a changed script is a new ConfigMap and the old one is
     * deleted only after everything that referred to it (pods rolled, drains updated or deleted).
     * Local sets (cephfs-gate.sh, cephfs-osd-remove.sh) are read by the gates' and drains' stub.
     */
    scriptSet(script: ScriptSetScript): k8s.core.v1.ConfigMap {
        let cm = this.scriptSets.get(script);
        if (cm === undefined) {
            cm = this.immutableScripts(cephScriptSetName(this.storage, script), script, cephScriptBundle(script).text);
            this.scriptSets.set(script, cm);
        }
        return cm;
    }

    /**
     * The immutable ConfigMap of the storage's shared library (lib.sh + ceph-lib.sh, key
     * ceph-library.sh), made on first use: every Ceph set runs after it, so it travels once per
     * storage, named by its id like a set (a changed library is a new ConfigMap and rolls the
     * daemons, whose pods carry its hash).
     */
    library(): k8s.core.v1.ConfigMap {
        this.libraryMap ??= this.immutableScripts(cephLibraryName(this.storage), cephLibraryFile, cephLibraryBundle().text);
        return this.libraryMap;
    }

    private immutableScripts(name: string, key: string, text: string): k8s.core.v1.ConfigMap {
        return new k8s.core.v1.ConfigMap(name, { metadata: { name, namespace: this.namespace, labels: this.labels("ceph-scripts") }, immutable: true, data: { [key]: text } }, this.child);
    }

    /** The `scripts` mount: the pod's script sets, read-only, at cephScriptDir. */
    readonly scriptsMount = { name: "scripts", mountPath: cephScriptDir, readOnly: true };

    /**
     * A pod template on the storage's account with the ceph.conf volume and `volumes`; with
     * `scripts`, also the `scripts` volume (the library's and those sets' ConfigMaps, one file
     * each) and their hashes as an annotation, so a changed library or set rolls the pod.
     */
    pod(volumes: Volume[], extra: PodSpec, scripts: CephScript[] = []): PodTemplate {
        const source = (cm: k8s.core.v1.ConfigMap, key: string) => ({ configMap: { name: cm.metadata.name, items: [{ key, path: key }] } });
        const scriptsVolume: Volume[] = scripts.length
            ? [{ name: "scripts", projected: { defaultMode: 0o555, sources: [source(this.library(), cephLibraryFile), ...scripts.map((s) => source(this.scriptSet(s), s))] } }]
            : [];
        return {
            spec: {
                serviceAccountName: this.account.serviceAccount.metadata.name,
                automountServiceAccountToken: false,
                volumes: [this.confVolume, ...volumes, ...scriptsVolume],
                ...extra,
            },
            ...(scripts.length ? { annotations: { [scriptSetsAnnotation]: scriptSetsValue(scripts) } } : {}),
        };
    }

    /** A workload's pod template: labels, the template's annotations (if any) and spec. */
    template(labels: Record<string, string>, t: PodTemplate): k8s.types.input.core.v1.PodTemplateSpec {
        return { metadata: { labels, ...(t.annotations ? { annotations: t.annotations } : {}) }, spec: t.spec };
    }

    /**
     * One daemon in a one-replica Deployment named `workload`, never two at once; its pod carries
     * the hashes of ceph.conf and of its keys, so a change of either restarts it (through the gates).
     */
    single(
        workload: string,
        component: string,
        podLabels: Record<string, string>,
        template: PodTemplate,
        deps: pulumi.Resource[],
        extra: pulumi.CustomResourceOptions = {},
    ): k8s.apps.v1.Deployment {
        const podTemplate = this.template(podLabels, { ...template, annotations: { ...template.annotations, ...this.daemonAnnotations(template) } });
        this.templates.set(workload, podTemplate);
        return new k8s.apps.v1.Deployment(
            workload,
            {
                metadata: { name: workload, namespace: this.namespace, labels: this.labels(component) },
                spec: {
                    replicas: 1,
                    // Never two daemons of one id (or on one store) at once.
                    strategy: { type: "Recreate" },
                    selector: { matchLabels: podLabels },
                    template: podTemplate,
                },
            },
            { ...this.child, ...extra, dependsOn: [...deps, ...this.account.ready], customTimeouts: { create: "10m", update: "10m", delete: "10m" } },
        );
    }
}
