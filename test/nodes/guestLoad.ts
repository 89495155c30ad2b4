/**
 * How busy a guest node has been since it booted, and with what: the guest's own accounting
 * (/proc/stat, ps), read over SSH at one moment. Under TCG a node's own daemons (kubelet,
 * containerd, the containers' shims) take most of each guest's busy time, CPU this 2-core machine's
 * other work needs (test/nodes/README.md): lvm.test.ts prints this per guest in its figures, CI's
 * log included.
 * Pure: no I/O.
 */

/** The guest-side command whose output `parseGuestLoad` reads. */
export const guestLoadCommand = "cat /proc/uptime; getconf CLK_TCK; nproc; head -n 1 /proc/stat; ps -e -o comm=,cputimes=";

/** The processes named on their own; every other process counts as "other". */
export const namedDaemons = ["kubelet", "containerd", "containerd-shim", "kube-proxy", "lvmd", "topolvm-node", "topolvm-control", "rcu_preempt"];

export interface GuestLoad {
    uptimeS: number;
    cpus: number;
    /** CPU seconds the guest spent busy (not idle, not waiting on I/O) since boot, all CPUs. */
    busyS: number;
    /** CPU seconds of the live processes by name (ps's 15-character `comm`), "other" for the rest. */
    byProcess: Record<string, number>;
}

function fail(why: string, output: string): never {
    throw new Error(`guest load: ${why} in:\n${output}`);
}

/** Reads guestLoadCommand's output; throws on anything else, or when kubelet or containerd is not running. */
export function parseGuestLoad(output: string): GuestLoad {
    const lines = output.split("\n").filter((l) => l.trim() !== "");
    const [uptime, tck, nproc, stat, ...ps] = lines;
    const uptimeS = Number(uptime?.split(" ")[0]);
    const ticks = Number(tck);
    const cpus = Number(nproc);
    if (!(uptimeS > 0) || !(ticks > 0) || !(Number.isInteger(cpus) && cpus > 0)) fail("no uptime, clock ticks or CPU count", output);
    // cpu  user nice system idle iowait irq softirq steal ...
    const fields = /^cpu\s+(.*)$/.exec(stat ?? "")?.[1].trim().split(/\s+/).map(Number);
    if (!fields || fields.length < 7 || fields.some((n) => !Number.isFinite(n))) fail("no cpu line of /proc/stat", output);
    const [user, nice, system, , , irq, softirq] = fields;
    const byProcess: Record<string, number> = {};
    for (const line of ps) {
        const m = /^(.*\S)\s+(\d+)$/.exec(line.trim());
        if (!m) fail(`a ps line unread (${JSON.stringify(line)})`, output);
        const name = namedDaemons.includes(m[1]) ? m[1] : "other";
        byProcess[name] = (byProcess[name] ?? 0) + Number(m[2]);
    }
    for (const daemon of ["kubelet", "containerd"]) {
        if (!(daemon in byProcess)) fail(`no ${daemon} process`, output);
    }
    return { uptimeS, cpus, busyS: (user + nice + system + irq + softirq) / ticks, byProcess };
}

/** One line for the figures: "topolvm-a: 1140 s up, 2 vCPUs 37 % busy; kubelet 309 s, ...", largest first. */
export function describeGuestLoad(name: string, load: GuestLoad): string {
    const percent = Math.round((100 * load.busyS) / (load.uptimeS * load.cpus));
    const parts = Object.entries(load.byProcess)
        .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
        .map(([process, s]) => `${process} ${s} s`);
    return `${name}: ${load.uptimeS.toFixed(0)} s up, ${load.cpus} vCPUs ${percent} % busy (${load.busyS.toFixed(0)} CPU s); ${parts.join(", ")}`;
}
