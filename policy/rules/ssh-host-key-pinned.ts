import { isUnknown, obj, PlannedResource, SECRET_MARKER, str } from "../model";

export const REMOTE_COMMAND_TYPE = "command:remote:Command";

/**
 * storage-ssh-host-key-pinned (advisory): a remote command names the node's SSH host key. The
 * connection is a Pulumi secret: the policy server sees it in clear, the offline plan only as
 * "[secret]" (then this policy cannot tell and stays silent).
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
    if (!connection || isUnknown(connection.hostKey) || connection.hostKey === SECRET_MARKER) {
        return [];
    }
    const hostKey = str(connection.hostKey)?.trim();
    if (hostKey) {
        return [];
    }
    const host = str(connection.host);
    return [
        `remote command '${resource.name}' connects to ${host ?? "its node"} without a pinned SSH host key: whoever answers ` +
            "at that address receives the login and the disk commands, so a man in the middle could read or " +
            "wipe the node's disks. Pin the node's key under zcloud-storage:ssh.hostKeys (as printed by " +
            `\`ssh-keyscan -t ed25519 ${host ?? "<address>"}\`, checked out of band).`,
    ];
}
