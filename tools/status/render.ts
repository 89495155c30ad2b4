/** The people-facing status: one block per storage, a node table, then its problems. */
import { formatSize } from "../discover/inventory";
import { printable } from "../../components/config/printable";
import { renderTable } from "../discover/table";
import { NodeStatus, StorageStatus, problemLine } from "./evaluate";

const yesNo = (v: boolean | null) => (v === null ? "?" : v ? "yes" : "NO");

function vgCells(n: NodeStatus): string[] {
    if (n.vg === undefined) {
        return [];
    }
    if (n.vg === null) {
        return ["-", "-", "-", "-", "-"];
    }
    const v = n.vg;
    return [formatSize(v.size), formatSize(v.free), String(v.lvCount), v.thinPoolPercent === undefined ? "-" : `${v.thinPoolPercent}%`, v.devices.join(" ")];
}

/** iSCSI: sessions (portals), multipath device, VG visible, lockspace state. */
function iscsiCells(n: NodeStatus): string[] {
    const i = n.iscsi;
    if (!i) {
        return ["-", "-", "-", "-"];
    }
    return [i.sessions.map((x) => x.portal).join(" ") || "none", i.multipath === undefined ? "-" : (i.multipath ?? "NO"), yesNo(i.vgPresent), i.lockspace];
}

function detailCells(type: StorageStatus["type"], n: NodeStatus): string[] {
    if (type === "lvm") {
        return vgCells(n);
    }
    return type === "iscsi" ? iscsiCells(n) : [Object.keys(n.devices).join(" ")];
}

const detailHeaders: Partial<Record<StorageStatus["type"], string[]>> = {
    lvm: ["VG SIZE", "VG FREE", "LVS", "THIN", "VG DEVICES"],
    iscsi: ["SESSIONS", "MULTIPATH", "VG", "LOCKSPACE"],
};

/** Storage, node and problem lines carry what nodes and the cluster report: escaped (see printable). */
export function renderStatus(storages: StorageStatus[]): string {
    const out: string[] = [];
    for (const s of storages) {
        const sc = s.storageClass ? (s.storageClass.present ? `StorageClass ${s.name}${s.storageClass.default ? " (default)" : ""}` : "StorageClass missing") : "StorageClass ?";
        out.push(`${s.name} (${s.type}): ${s.healthy ? "healthy" : `${s.problems.length} problem${s.problems.length === 1 ? "" : "s"}`}; ${sc}`);
        if (s.ceph) {
            out.push(printable(`  ceph ${s.ceph.status}${s.ceph.expected ? ` (${s.ceph.expected})` : ""}, OSDs ${s.ceph.up} up / ${s.ceph.in} in / ${s.ceph.osds}, used ${formatSize(s.ceph.bytesUsed)} of ${formatSize(s.ceph.bytesTotal)}`));
        }
        const nodes = Object.entries(s.nodes);
        if (nodes.length > 0) {
            const header = ["NODE", "READY", "LABEL", "DAEMONS", ...(detailHeaders[s.type] ?? ["DEVICES"])];
            const rows = nodes.map(([name, n]) => [name, yesNo(n.ready), yesNo(n.label), yesNo(n.daemonsReady), ...detailCells(s.type, n)]);
            out.push(renderTable(header, rows));
        }
        for (const p of s.problems) {
            out.push(printable(`  ${p.kind}: ${problemLine(s.name, p)}`));
        }
        out.push("");
    }
    return out.join("\n");
}
