import { cephNames, deviceSlug, mdsIds, mgrIds, monPlacement, nodeResourceName } from "../naming";
import { ConfigIssue } from "./errors";
import { StackParsed } from "./schema";

/**
 * Every name the program derives from config values, with what must keep it unique (its scope)
 * and the key it comes from. Names join values with `-` (`<storage>-<node>-disks`), turn device
 * paths into slugs and cut to length limits, so distinct inputs can meet in one name; two
 * resources with one URN, or two Kubernetes objects with one name, would overwrite each other.
 */
export interface DerivedName {
    /** Names are unique within a scope: a component type and resource type, or the namespace. */
    scope: string;
    name: string;
    /** What the name is, for messages: `disk command`, `OSD workload`. */
    role: string;
    /** The key path it is derived from (`cephfs[0].hosts.node1[1]`). */
    source: string;
    /** The value behind it, shown next to the path (`/dev/sdb`). */
    value: string;
}

const scopes = {
    lvmCommand: "LvmStorage command:remote:Command",
    lvmLabel: "LvmStorage command:local:Command",
    cephCommand: "CephFsStorage command:remote:Command",
    // The node labels, OSD drains and roll gates: local commands of one name space.
    cephLabel: "CephFsStorage command:local:Command",
    cephDrain: "CephFsStorage command:local:Command",
    // ConfigMaps, Secrets, Services and workloads of the storage namespace, one name space for all.
    namespaced: "objects of the storage namespace",
} as const;

function nodeNames(type: "lvm" | "cephfs", i: number, storage: string, node: string): DerivedName[] {
    const source = `${type}[${i}].hosts.${node}`;
    const command = type === "lvm" ? scopes.lvmCommand : scopes.cephCommand;
    const label = type === "lvm" ? scopes.lvmLabel : scopes.cephLabel;
    return [
        { scope: command, name: nodeResourceName(storage, node, "disks"), role: "disk command", source, value: node },
        { scope: label, name: nodeResourceName(storage, node, "label"), role: "node label", source, value: node },
    ];
}

function cephStorageNames(i: number, storage: string, hosts: string[], monitored: boolean): DerivedName[] {
    const n = cephNames(storage);
    const source = `cephfs[${i}].name`;
    const fixed: Array<[string, string]> = [
        [n.conf, "ceph.conf ConfigMap"],
        [n.keys, "key Secret"],
        [n.osdKeys, "OSD key Secret"],
        [n.csiSecret, "CSI Secret"],
        [n.admin, "admin DaemonSet"],
        [n.filesystem, "filesystem Job"],
        // Monitoring on: the Job that turns the prometheus module on, and the managers' metrics Service.
        ...(monitored ? [[n.metrics, "metrics Job and Service"] as [string, string]] : []),
        ...monPlacement(hosts).map((m): [string, string] => [n.mon(m.id), `mon ${m.id}`]),
        ...mgrIds(hosts.length).map((id): [string, string] => [n.mgr(id), `mgr ${id}`]),
        ...mdsIds.map((id): [string, string] => [n.mds(id), `mds ${id}`]),
    ];
    return fixed.map(([name, role]) => ({ scope: scopes.namespaced, name, role, source, value: storage }));
}

/** Every derived name of a shape-valid config, in config order. */
export function derivedNames(c: StackParsed): DerivedName[] {
    const out: DerivedName[] = [];
    c.lvm.forEach((s, i) => {
        out.push({ scope: scopes.namespaced, name: `lvmd-${s.name}`, role: "lvmd ConfigMap", source: `lvm[${i}].name`, value: s.name });
        for (const node of Object.keys(s.hosts)) {
            out.push(...nodeNames("lvm", i, s.name, node));
        }
    });
    c.cephfs.forEach((s, i) => {
        const hosts = Object.keys(s.hosts);
        out.push(...cephStorageNames(i, s.name, hosts, c.monitoring !== undefined));
        const osd = cephNames(s.name).osd;
        for (const [node, devices] of Object.entries(s.hosts)) {
            out.push(...nodeNames("cephfs", i, s.name, node));
            devices.forEach((device, j) => {
                const source = `cephfs[${i}].hosts.${node}[${j}]`;
                out.push(
                    { scope: scopes.namespaced, name: osd(node, device), role: "OSD workload", source, value: device },
                    { scope: scopes.cephDrain, name: nodeResourceName(s.name, node, `osd-${deviceSlug(device)}-drain`), role: "OSD drain command", source, value: device },
                );
            });
        }
    });
    return out;
}

/**
 * Two sources that derive one name, each pair reported once at the later source. A device listed
 * twice for one node is reported by devicesClaimedOnce; its names are not reported again.
 */
export function nameCollisions(c: StackParsed): ConfigIssue[] {
    const first = new Map<string, DerivedName>();
    const reported = new Set<string>();
    const issues: ConfigIssue[] = [];
    for (const d of derivedNames(c)) {
        const key = `${d.scope}\u0000${d.name}`;
        const earlier = first.get(key);
        if (!earlier) {
            first.set(key, d);
            continue;
        }
        const pair = `${earlier.source}\u0000${d.source}`;
        const sameList = earlier.source.replace(/\[\d+\]$/, "") === d.source.replace(/\[\d+\]$/, "");
        if ((sameList && earlier.value === d.value) || reported.has(pair)) {
            continue;
        }
        reported.add(pair);
        issues.push({
            path: d.source,
            message: `${d.value} gives the ${d.role} the name "${d.name}", which ${earlier.source} (${earlier.value}) already gives its ${earlier.role}; two resources cannot share a name, so rename the storage or node, or use another path of the device`,
        });
    }
    return issues;
}
