import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { nodeResourceName } from "../naming";
import { scriptBundle } from "./bundle";
import { bundleAssetFile, bundleStagingPath } from "./shipped";

/** How to reach nodes over SSH; the stack config's `ssh` key. */
export interface SshSettings {
    user: string;
    port: number;
    /**
     * Mark it secret (config `secure:` values are): it ends up in the command's connection.
     * Undefined: the key is in ssh-agent (`ssh.agent: true`), and no connection carries a key; the
     * provider of @pulumi/command 1.2.1 then signs with the agent at SSH_AUTH_SOCK of its own
     * environment (the pulumi CLI's), never with a socket path kept in the state.
     */
    privateKey?: pulumi.Input<string>;
    /** Node name -> pinned host public key. Unpinned nodes accept any host key. */
    hostKeys?: Record<string, string>;
    bastion?: { host: string; port: number; user: string; privateKey?: pulumi.Input<string>; hostKey?: string };
}

/** One node's SSH endpoint; the stack config's `nodes.<name>`. */
export interface NodeAddress {
    address: string;
    port?: number;
    user?: string;
}

export function sshUser(ssh: SshSettings, node: NodeAddress): string {
    return node.user ?? ssh.user;
}

/** Non-root users run the node scripts through `sudo -n` (fails instead of prompting). */
export function needsSudo(ssh: SshSettings, node: NodeAddress): boolean {
    return sshUser(ssh, node) !== "root";
}

/**
 * Why an `up` cannot log in with `ssh.agent: true`: no agent where pulumi runs (the provider reads
 * the same SSH_AUTH_SOCK as the program). A preview connects nowhere, so it needs none.
 */
export function sshAgentProblem(agent: boolean, dryRun: boolean, env: NodeJS.ProcessEnv): string | undefined {
    if (!agent || dryRun || env.SSH_AUTH_SOCK) {
        return undefined;
    }
    return "is true, but SSH_AUTH_SOCK is not set where pulumi runs, so no node command could log in; start an agent holding the key (eval \"$(ssh-agent -s)\"; ssh-add <key file>) in the shell that runs pulumi up";
}

/** A connection's key field: the key as a secret, or none at all when the agent holds it. */
function keyOf(key: pulumi.Input<string> | undefined): { privateKey?: pulumi.Output<string> } {
    return key === undefined ? {} : { privateKey: pulumi.secret(key) };
}

export function nodeConnection(ssh: SshSettings, nodeName: string, node: NodeAddress): command.types.input.remote.ConnectionArgs {
    const hostKey = ssh.hostKeys?.[nodeName];
    return {
        host: node.address,
        port: node.port ?? ssh.port,
        user: sshUser(ssh, node),
        ...keyOf(ssh.privateKey),
        dialErrorLimit: 5,
        perDialTimeout: 15,
        ...(hostKey ? { hostKey } : {}),
        ...(ssh.bastion
            ? {
                  proxy: {
                      host: ssh.bastion.host,
                      port: ssh.bastion.port,
                      user: ssh.bastion.user,
                      ...keyOf(ssh.bastion.privateKey ?? ssh.privateKey),
                      ...(ssh.bastion.hostKey ? { hostKey: ssh.bastion.hostKey } : {}),
                  },
              }
            : {}),
    };
}

/**
 * One node's copy of a script bundle, staged where the SSH user can write it (the stub installs
 * it as root). A script change is an in-place update that copies the new bundle beside the old
 * one; neither a replacement nor a delete removes a file, so every delete string kept in state
 * still finds the bundle it names.
 */
export function nodeScriptCopy(
    name: string,
    connection: command.types.input.remote.ConnectionArgs,
    scripts: readonly string[],
    opts: pulumi.CustomResourceOptions,
): command.remote.CopyToRemote {
    const bundle = scriptBundle(scripts);
    return new command.remote.CopyToRemote(
        name,
        // A file asset: the state keeps its path and hash, never the text.
        { connection, source: new pulumi.asset.FileAsset(bundleAssetFile(bundle)), remotePath: bundleStagingPath(bundle) },
        opts,
    );
}

export interface NodeScriptCommandArgs {
    connection: command.types.input.remote.ConnectionArgs;
    /** The script set its stubs run (components/node files, shared library first). */
    scripts: readonly string[];
    create: pulumi.Input<string>;
    update?: pulumi.Input<string>;
    delete: pulumi.Input<string>;
    stdin?: pulumi.Input<string>;
}

/**
 * A remote command whose create/update/delete are stubs running one script bundle, after the
 * bundle's copy to the same node (`<name>-scripts`) and nothing else of other nodes. Never a hash
 * in `triggers`: a triggers change replaces the command, which runs its release.
 */
export function nodeScriptCommand(
    name: string,
    a: NodeScriptCommandArgs,
    opts: pulumi.CustomResourceOptions,
): command.remote.Command {
    const copy = nodeScriptCopy(`${name}-scripts`, a.connection, a.scripts, { parent: opts.parent });
    const { scripts: _scripts, ...inputs } = a;
    return new command.remote.Command(name, inputs, { ...opts, dependsOn: withDependency(opts.dependsOn, copy) });
}

function withDependency(deps: pulumi.CustomResourceOptions["dependsOn"], extra: pulumi.Resource): pulumi.Input<pulumi.Resource>[] {
    if (deps === undefined) {
        return [extra];
    }
    if (Array.isArray(deps)) {
        return [...deps, extra];
    }
    if (pulumi.Resource.isInstance(deps)) {
        return [deps, extra];
    }
    throw new Error("node script command: pass dependsOn as a resource or a list of resources");
}

export interface NodeDiskCommandArgs {
    connection: command.types.input.remote.ConnectionArgs;
    /** The script set `apply` and `release` run. */
    scripts: readonly string[];
    /** Reconciles the node to the declared devices; the provider runs it again on update. */
    apply: pulumi.Input<string>;
    /** Releases everything on delete; refuses while data is in use. */
    release: pulumi.Input<string>;
}

/**
 * The one remote command of a (storage, node): one SSH session per node, so no two commands race
 * on one volume group, and no dependency on any other node, so a slow node blocks nobody.
 */
export function nodeDiskCommand(
    storage: string,
    node: string,
    a: NodeDiskCommandArgs,
    opts: pulumi.CustomResourceOptions,
): command.remote.Command {
    return nodeScriptCommand(
        nodeResourceName(storage, node, "disks"),
        // No `update`: on an update the provider runs `create` again (the same idempotent stub).
        { connection: a.connection, scripts: a.scripts, create: a.apply, delete: a.release },
        {
            ...opts,
            // A replacement must release the old disks before preparing them again.
            deleteBeforeReplace: true,
            customTimeouts: { create: "15m", update: "15m", delete: "15m" },
        },
    );
}

/** `zcloud-device: <declared> <stable>` lines of a node script's output. */
export function parseDeviceReport(stdout: string): Array<{ declared: string; stable: string }> {
    return stdout
        .split("\n")
        .map((line) => /^zcloud-device: (\S+) (\S+)$/.exec(line.trim()))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ declared: m[1], stable: m[2] }));
}
