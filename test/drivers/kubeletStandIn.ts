/**
 * The kubelet's side of plugin registration, as a client: what the kubelet's plugin watcher does
 * when node-driver-registrar's socket appears in its plugins_registry directory. It asks the
 * registrar for the plugin (GetInfo), asks the driver at the endpoint the registrar names for its
 * node (csi.v1.Node/NodeGetInfo), and reports the outcome back (NotifyRegistrationStatus). The
 * caller then writes what the kubelet would: the node's CSINode entry and topology labels.
 *
 * gRPC from @grpc/grpc-js over unix sockets; the four messages involved are encoded and decoded
 * here by field number (kubelet's pluginregistration v1 and the CSI spec's NodeGetInfo), so no
 * generated code is needed.
 */
import * as grpc from "@grpc/grpc-js";

/** One decoded protobuf field: varints as bigint, length-delimited fields as bytes. */
export type ProtoField = { field: number; value: bigint | Buffer };

function readVarint(b: Buffer, at: number): [bigint, number] {
    let value = 0n;
    for (let shift = 0n; at < b.length; shift += 7n) {
        const byte = b[at++];
        value |= BigInt(byte & 0x7f) << shift;
        if ((byte & 0x80) === 0) {
            return [value, at];
        }
    }
    throw new Error("protobuf: truncated varint");
}

/** The fields of one protobuf message, in order (fixed-width fields are kept as their bytes). */
export function decodeFields(b: Buffer): ProtoField[] {
    const fields: ProtoField[] = [];
    let at = 0;
    while (at < b.length) {
        const [key, next] = readVarint(b, at);
        at = next;
        const field = Number(key >> 3n);
        const wire = Number(key & 7n);
        if (wire === 0) {
            const [v, n] = readVarint(b, at);
            fields.push({ field, value: v });
            at = n;
        } else if (wire === 2 || wire === 1 || wire === 5) {
            let len = wire === 1 ? 8 : 4;
            if (wire === 2) {
                const [l, n] = readVarint(b, at);
                len = Number(l);
                at = n;
            }
            if (at + len > b.length) {
                throw new Error(`protobuf: field ${field} runs past the message`);
            }
            fields.push({ field, value: b.subarray(at, at + len) });
            at += len;
        } else {
            throw new Error(`protobuf: field ${field} has wire type ${wire}, which these messages do not use`);
        }
    }
    return fields;
}

const strings = (fields: ProtoField[], n: number) => fields.filter((f) => f.field === n).map((f) => (f.value as Buffer).toString("utf8"));

function encodeVarint(n: number): Buffer {
    const out: number[] = [];
    do {
        out.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
        n >>>= 7;
    } while (n > 0);
    return Buffer.from(out);
}

/** pluginregistration.PluginInfo */
export interface PluginInfo {
    type: string;
    name: string;
    endpoint: string;
    supportedVersions: string[];
}

export function decodePluginInfo(b: Buffer): PluginInfo {
    const f = decodeFields(b);
    return { type: strings(f, 1)[0] ?? "", name: strings(f, 2)[0] ?? "", endpoint: strings(f, 3)[0] ?? "", supportedVersions: strings(f, 4) };
}

/** pluginregistration.RegistrationStatus */
export function encodeRegistrationStatus(registered: boolean, error = ""): Buffer {
    const parts: Buffer[] = [Buffer.from([0x08, registered ? 1 : 0])];
    if (error) {
        const text = Buffer.from(error, "utf8");
        parts.push(Buffer.from([0x12]), encodeVarint(text.length), text);
    }
    return Buffer.concat(parts);
}

/** csi.v1.NodeGetInfoResponse */
export interface NodeInfo {
    nodeId: string;
    maxVolumesPerNode: number;
    topology: Record<string, string>;
}

export function decodeNodeInfo(b: Buffer): NodeInfo {
    const f = decodeFields(b);
    const topology: Record<string, string> = {};
    for (const t of f.filter((x) => x.field === 3)) {
        // Topology { map<string, string> segments = 1; }: each entry a message { key = 1; value = 2 }.
        for (const entry of decodeFields(t.value as Buffer).filter((x) => x.field === 1)) {
            const e = decodeFields(entry.value as Buffer);
            topology[strings(e, 1)[0] ?? ""] = strings(e, 2)[0] ?? "";
        }
    }
    const max = f.find((x) => x.field === 2)?.value;
    return { nodeId: strings(f, 1)[0] ?? "", maxVolumesPerNode: max === undefined ? 0 : Number(max), topology };
}

const raw = (b: Buffer) => b;

/** One unary call on a unix socket with an encoded request; resolves with the encoded response. */
export function unaryCall(socket: string, method: string, request: Buffer, timeoutMs = 30_000): Promise<Buffer> {
    const client = new grpc.Client(`unix://${socket}`, grpc.credentials.createInsecure());
    return new Promise<Buffer>((resolve, reject) => {
        client.makeUnaryRequest(method, raw, raw, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
            client.close();
            if (err) {
                reject(new Error(`${method} on ${socket}: ${err.message}`));
            } else {
                resolve(res ?? Buffer.alloc(0));
            }
        });
    });
}

export const getInfo = async (registrationSocket: string) => decodePluginInfo(await unaryCall(registrationSocket, "/pluginregistration.Registration/GetInfo", Buffer.alloc(0)));

export const notifyRegistrationStatus = (registrationSocket: string, registered: boolean, error = "") =>
    unaryCall(registrationSocket, "/pluginregistration.Registration/NotifyRegistrationStatus", encodeRegistrationStatus(registered, error));

export const nodeGetInfo = async (csiSocket: string) => decodeNodeInfo(await unaryCall(csiSocket, "/csi.v1.Node/NodeGetInfo", Buffer.alloc(0)));

/** The CSINode the kubelet keeps for a node once a driver registered (storage.k8s.io/v1). */
export function csiNodeFor(node: { name: string; uid: string }, driver: string, info: NodeInfo) {
    return {
        apiVersion: "storage.k8s.io/v1",
        kind: "CSINode",
        metadata: { name: node.name, ownerReferences: [{ apiVersion: "v1", kind: "Node", name: node.name, uid: node.uid }] },
        spec: {
            drivers: [
                {
                    name: driver,
                    nodeID: info.nodeId,
                    topologyKeys: Object.keys(info.topology).sort(),
                    ...(info.maxVolumesPerNode > 0 ? { allocatable: { count: info.maxVolumesPerNode } } : {}),
                },
            ],
        },
    };
}
