/**
 * iSCSI status of one initiator: the facts components/node/iscsi-status.sh prints, parsed, and
 * the problems they show against the storage's config. Pure: unit-tested with exact messages.
 */
import { IscsiConfig } from "../../components/config/model";
import { iscsiVolumeGroup } from "../../components/iscsi/commands";
import type { Problem } from "./problem";

export type LockspaceState = "started" | "joining" | "stopped" | "no-daemon";

export interface IscsiNodeFacts {
    /** Every iSCSI session on the node: portal `host:port` and target IQN. */
    sessions: Array<{ portal: string; iqn: string }>;
    /** Several portals: the LUN's multipath device (null: none). Undefined with one portal. */
    multipath?: string | null;
    vgPresent: boolean;
    lockspace: LockspaceState;
}

const lockspaceStates: LockspaceState[] = ["started", "joining", "stopped", "no-daemon"];

/** Parses iscsi-status.sh's output; throws when a fact is missing (the script did not finish). */
export function parseIscsiFacts(stdout: string): IscsiNodeFacts {
    const sessions: IscsiNodeFacts["sessions"] = [];
    let multipath: string | null | undefined;
    let vgPresent: boolean | undefined;
    let lockspace: LockspaceState | undefined;
    for (const line of stdout.split("\n")) {
        const [kind, first, second] = line.trim().split(/\s+/);
        if (kind === "zcloud-iscsi-session:") {
            sessions.push({ portal: first, iqn: second });
        } else if (kind === "zcloud-iscsi-multipath:") {
            multipath = second === "missing" ? null : second;
        } else if (kind === "zcloud-iscsi-shared-vg:") {
            vgPresent = second === "present";
        } else if (kind === "zcloud-iscsi-lockspace:" && lockspaceStates.includes(second as LockspaceState)) {
            lockspace = second as LockspaceState;
        }
    }
    if (vgPresent === undefined || lockspace === undefined) {
        throw new Error("no VG or lockspace fact in the answer");
    }
    return { sessions, ...(multipath !== undefined ? { multipath } : {}), vgPresent, lockspace };
}

const lockspaceWords: Record<Exclude<LockspaceState, "started">, string> = {
    joining: "still joining",
    stopped: "not started (sanlock runs, the VG's lockspace is not in it)",
    "no-daemon": "not started (no sanlock daemon on the node)",
};

/** What the node shows against the config: a session per portal, multipath, VG, lockspace. */
export function iscsiNodeProblems(s: Pick<IscsiConfig, "portals" | "iqn" | "name">, node: string, facts: IscsiNodeFacts): Problem[] {
    const problems: Problem[] = [];
    for (const portal of s.portals) {
        if (!facts.sessions.some((x) => x.portal === portal && x.iqn === s.iqn)) {
            problems.push({ kind: "degraded", node, object: `portal ${portal}`, message: `no iSCSI session to ${s.iqn}` });
        }
    }
    if (s.portals.length > 1 && !facts.multipath) {
        problems.push({ kind: "degraded", node, object: "multipath", message: `no multipath device for the LUN of ${s.portals.length} portals` });
    }
    const vg = iscsiVolumeGroup(s.name);
    if (!facts.vgPresent) {
        problems.push({ kind: "degraded", node, object: `VG ${vg}`, message: "not visible on the node" });
    }
    if (facts.lockspace !== "started") {
        problems.push({ kind: "degraded", node, object: `lockspace lvm_${vg}`, message: lockspaceWords[facts.lockspace] });
    }
    return problems;
}
