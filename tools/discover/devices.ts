/**
 * Discover's result per node: each top-level device with its facts, verdict and the storages
 * that declare it; and the YAML proposal of clean devices. Pure: unit-tested.
 */
import { DeclaredDevice } from "./stack";
import { NodeReport, Verdict, formatSize, verdictOf } from "./inventory";
import { printable, yamlQuoted } from "../../components/config/printable";
import { renderTable } from "./table";

export interface DiscoveredDevice extends Verdict {
    path: string;
    byId: string[];
    size: number;
    model: string | null;
    serial: string | null;
    rotational: boolean;
    /** The name to put in a stack: the stable by-id name the disk scripts would report, else the kernel path. */
    stableName: string;
    /** Storages of the stack that declare this device on this node (`lvm local-fast`). */
    declaredBy: string[];
}

export interface NodeDiscovery {
    devices: DiscoveredDevice[];
    /** Declared paths that do not exist on the node (`/dev/sdz (lvm local-fast)`). */
    missingDeclared: string[];
}

export function discoverNode(report: NodeReport, declared: DeclaredDevice[], minSize: number): NodeDiscovery {
    const devices = report.devices.map((d): DiscoveredDevice => {
        const declaredBy = declared.filter((x) => report.declared.get(x.path) === d.path).map((x) => x.by);
        return {
            path: d.path,
            byId: report.byId.get(d.path) ?? [],
            size: d.size,
            ...verdictOf(d, report.guards.get(d.path), minSize),
            model: d.model?.trim() || null,
            serial: d.serial?.trim() || null,
            rotational: d.rota,
            stableName: report.stable.get(d.path) ?? d.path,
            declaredBy: [...new Set(declaredBy)],
        };
    });
    const missingDeclared = declared.filter((x) => report.declared.get(x.path) === null).map((x) => `${x.path} (${x.by})`);
    return { devices, missingDeclared };
}

const plainYaml = /^[A-Za-z0-9_./:+@=,-]+$/;
/** A YAML scalar of `s`: plain when safe, else double-quoted with escapes that read back exactly. */
export const yamlWord = (s: string) => (plainYaml.test(s) ? s : yamlQuoted(s));

/**
 * `hosts:` with each node's clean devices by stable name, to paste into an lvm or cephfs entry.
 * Devices the stack already declares carry a comment saying by which storage.
 */
export function proposalYaml(nodes: Array<[string, NodeDiscovery]>): string {
    const lines = ["hosts:"];
    for (const [node, found] of nodes) {
        const clean = found.devices.filter((d) => d.verdict === "clean");
        if (clean.length === 0) {
            continue;
        }
        lines.push(`  ${yamlWord(node)}:`);
        for (const d of clean) {
            const mark = d.declaredBy.length > 0 ? `  # already declared: ${d.declaredBy.join(", ")}` : "";
            lines.push(`    - ${yamlWord(d.stableName)}${mark}`);
        }
    }
    return lines.length === 1 ? "hosts: {}\n" : lines.join("\n") + "\n";
}

/**
 * The proposal as discover prints it: under its heading, or one line saying why there is none
 * (no node answered, or no clean device on those that did) instead of an empty `hosts: {}`.
 */
export function proposalSection(nodes: Array<[string, NodeDiscovery]>): string {
    if (nodes.length === 0) {
        return "No proposal: no node answered.";
    }
    if (!nodes.some(([, found]) => found.devices.some((d) => d.verdict === "clean"))) {
        return "No proposal: no clean device on the nodes that answered.";
    }
    const yaml = proposalYaml(nodes);
    return `Proposal (clean devices by stable name; paste into an lvm or cephfs entry):\n\n${yaml.replace(/^/gm, "  ").trimEnd()}`;
}

/** The people-facing table of one node. */
export function renderNodeDevices(found: NodeDiscovery): string {
    const rows = found.devices.map((d) => [
        d.path,
        formatSize(d.size),
        d.rotational ? "hdd" : "ssd",
        [d.model, d.serial].filter(Boolean).join(" / ") || "-",
        d.byId.map((b) => b.replace("/dev/disk/by-id/", "")).join(" ") || "-",
        (d.verdict === "clean" ? "clean" : `not clean: ${d.reason}`) + (d.declaredBy.length ? ` [declared: ${d.declaredBy.join(", ")}]` : ""),
    ]);
    const lines = [renderTable(["DEVICE", "SIZE", "KIND", "MODEL / SERIAL", "BY-ID", "VERDICT"], rows)];
    for (const m of found.missingDeclared) {
        lines.push(printable(`  declared but missing on the node: ${m}`));
    }
    return lines.join("\n");
}
