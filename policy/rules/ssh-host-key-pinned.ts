import { isUnknown, obj, PlannedResource, REMOTE_COMMAND_TYPE, SECRET_MARKER, str } from "../model";

/**
 * storage-ssh-host-key-pinned (advisory): a remote command names the SSH host key of its node and
 * of the bastion it goes through. The connection is a Pulumi secret: the policy server sees it in
 * clear; where it is an opaque "[secret]" this policy cannot tell and stays silent.
 */
export function checkSshHostKeyPinned(resource: PlannedResource): string[] {
    if (resource.type !== REMOTE_COMMAND_TYPE) {
        return [];
    }
    const raw = resource.props?.connection;
    if (raw === undefined || raw === SECRET_MARKER || isUnknown(raw)) {
        return [];
    }
    const connection = obj(raw);
    if (!connection) {
        return [];
    }
    const messages: string[] = [];
    const host = str(connection.host);
    if (!isPinned(connection.hostKey)) {
        messages.push(
            `remote command '${resource.name}' connects to ${host ?? "its node"} without a pinned SSH host key: ` +
                "whoever answers at that address receives the login and the disk commands, so a man in the middle " +
                "could read or wipe the node's disks. Pin the node's key under zcloud-storage:ssh.hostKeys (as printed " +
                `by \`ssh-keyscan -t ed25519 ${host ?? "<address>"}\`, checked out of band).`,
        );
    }
    const proxy = obj(connection.proxy);
    if (proxy && !isPinned(proxy.hostKey)) {
        const bastion = str(proxy.host);
        messages.push(
            `remote command '${resource.name}' goes through bastion ${bastion ?? "(unknown host)"} without a pinned ` +
                "SSH host key: a man in the middle at the bastion receives the login for every node behind it. Pin " +
                "it as zcloud-storage:ssh.bastion.hostKey (as printed by " +
                `\`ssh-keyscan -t ed25519 ${bastion ?? "<address>"}\`, checked out of band).`,
        );
    }
    return messages;
}

/** A non-empty key, or a value this policy cannot see (unknown during preview, opaque secret). */
function isPinned(hostKey: unknown): boolean {
    if (isUnknown(hostKey) || hostKey === SECRET_MARKER) {
        return true;
    }
    return (str(hostKey)?.trim() ?? "") !== "";
}

/**
 * The cause of a message of this policy: the address or bastion without a pinned key. Every
 * remote command of one node (or all behind one bastion) shares it, so the plan prints it once.
 */
export function sshHostKeyCause(message: string): { key: string; message: (names: string[]) => string } | undefined {
    const m = /^remote command '[^']*' (connects to (\S+)|goes through bastion (\S+)) without a pinned SSH host key: (.*)$/s.exec(message);
    if (!m) {
        return undefined;
    }
    const [, , host, bastion, rest] = m;
    const what = host !== undefined ? `connect to ${host}` : `go through bastion ${bastion}`;
    return {
        key: host !== undefined ? `host ${host}` : `bastion ${bastion}`,
        message: (names) => `${names.length} remote commands (${names.join(", ")}) ${what} without a pinned SSH host key: ${rest}`,
    };
}
