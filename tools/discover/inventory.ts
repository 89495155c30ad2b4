/**
 * A node's device inventory: the facts components/node/discover.sh prints, parsed, and the
 * verdict per device. Pure functions: unit-tested on recorded output.
 */

/** One lsblk node as `lsblk -J -b -o NAME,PATH,TYPE,SIZE,MODEL,SERIAL,ROTA,WWN,MOUNTPOINTS,FSTYPE` prints it. */
export interface LsblkDevice {
    name: string;
    path: string;
    type: string;
    size: number;
    model: string | null;
    serial: string | null;
    rota: boolean;
    wwn: string | null;
    mountpoints: Array<string | null>;
    fstype: string | null;
    children?: LsblkDevice[];
}

export type GuardResult = { ok: true } | { ok: false; reason: string };

export interface PvFact {
    pv: string;
    vg: string;
    vgSize: number;
    vgFree: number;
    lvCount: number;
}

export interface LvFact {
    vg: string;
    lv: string;
    attr: string;
    /** Data usage in percent for thin pools (and thin LVs); undefined when LVM shows none. */
    dataPercent?: number;
}

/** Everything one run of discover.sh reported about a node. */
export interface NodeReport {
    devices: LsblkDevice[];
    guards: Map<string, GuardResult>;
    stable: Map<string, string>;
    /** Kernel path -> its /dev/disk/by-id links, sorted. */
    byId: Map<string, string[]>;
    /** Declared path -> kernel path, or null when it does not exist on the node. */
    declared: Map<string, string | null>;
    pvs: PvFact[];
    lvs: LvFact[];
}

const factPattern = /^(zcloud-[a-z]+): (.*)$/;

function splitFirst(text: string): [string, string] {
    const at = text.indexOf(" ");
    return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
}

/** Parses discover.sh's output; throws when the device list is missing (the script did not run). */
export function parseNodeReport(stdout: string): NodeReport {
    const report: NodeReport = { devices: [], guards: new Map(), stable: new Map(), byId: new Map(), declared: new Map(), pvs: [], lvs: [] };
    let sawLsblk = false;
    for (const line of stdout.split("\n")) {
        const m = factPattern.exec(line.trimEnd());
        if (!m) {
            continue;
        }
        const [, kind, rest] = m;
        const [first, second] = splitFirst(rest);
        switch (kind) {
            case "zcloud-lsblk":
                report.devices = (JSON.parse(rest) as { blockdevices: LsblkDevice[] }).blockdevices;
                sawLsblk = true;
                break;
            case "zcloud-guard": {
                const [word, reason] = splitFirst(second);
                report.guards.set(first, word === "ok" ? { ok: true } : { ok: false, reason });
                break;
            }
            case "zcloud-stable":
                report.stable.set(first, second);
                break;
            case "zcloud-byid":
                report.byId.set(second, [...(report.byId.get(second) ?? []), first].sort());
                break;
            case "zcloud-declared":
                report.declared.set(first, second === "missing" ? null : second);
                break;
            case "zcloud-pv": {
                const [pv, vg, size, free, count] = rest.split("|").map((s) => s.trim());
                report.pvs.push({ pv, vg, vgSize: Number(size) || 0, vgFree: Number(free) || 0, lvCount: Number(count) || 0 });
                break;
            }
            case "zcloud-lv": {
                const [vg, lv, attr, data] = rest.split("|").map((s) => s.trim());
                report.lvs.push({ vg, lv, attr, ...(data ? { dataPercent: Number(data) } : {}) });
                break;
            }
        }
    }
    if (!sawLsblk) {
        throw new Error("the node printed no device list (zcloud-lsblk line missing)");
    }
    return report;
}

/** Mount points that make a disk the system's own. */
const systemMounts = new Set(["/", "/boot", "/boot/efi", "/usr", "/var"]);

/** System mount points anywhere in a device tree (partitions, LVs, ...). */
export function systemMountsOf(d: LsblkDevice): string[] {
    const here = d.mountpoints.filter((m): m is string => m !== null && systemMounts.has(m));
    return [...here, ...(d.children ?? []).flatMap(systemMountsOf)];
}

export const gib = 1024 ** 3;

/** `1 GiB`, `64 MiB`, `512 B`: binary units, at most one decimal. */
export function formatSize(bytes: number): string {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
        value /= 1024;
        unit++;
    }
    const text = unit === 0 || Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, "");
    return `${text} ${units[unit]}`;
}

/** Parses `64MiB`, `1G`, `512` (bytes) for --min-size. */
export function parseSize(text: string): number {
    const m = /^(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B)?$/i.exec(text.trim());
    if (!m) {
        throw new Error(`not a size: ${text} (use e.g. 1GiB, 500MiB or bytes)`);
    }
    const power = " KMGTP".indexOf(m[2].toUpperCase() || " ");
    return Math.round(Number(m[1]) * 1024 ** power);
}

export interface Verdict {
    verdict: "clean" | "not clean";
    /** Why not clean; null when clean. */
    reason: string | null;
}

/**
 * The verdict on a top-level device: no medium, the system's own disk, then whatever the disk
 * scripts' guards refuse, then too small; else clean.
 */
export function verdictOf(d: LsblkDevice, guard: GuardResult | undefined, minSize: number): Verdict {
    const not = (reason: string): Verdict => ({ verdict: "not clean", reason });
    if (d.size === 0) {
        return not("no medium (size 0)");
    }
    const system = systemMountsOf(d);
    if (system.length > 0) {
        return not(`system disk (holds ${system.join(", ")})`);
    }
    if (!guard) {
        return not("the node did not report its guard verdict");
    }
    if (!guard.ok) {
        return not(guard.reason);
    }
    if (d.size < minSize) {
        return not(`too small (${formatSize(d.size)} < ${formatSize(minSize)})`);
    }
    return { verdict: "clean", reason: null };
}
