import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as protobuf from "protobufjs";
import { csiNodeFor, decodeFields, decodeNodeInfo, decodePluginInfo, encodeRegistrationStatus } from "../drivers/kubeletStandIn";

/** The messages as kubelet's pluginregistration v1 and the CSI spec declare them, encoded by protobufjs. */
const schema = protobuf.parse(`
syntax = "proto3";
message PluginInfo { string type = 1; string name = 2; string endpoint = 3; repeated string supported_versions = 4; }
message RegistrationStatus { bool plugin_registered = 1; string error = 2; }
message Topology { map<string, string> segments = 1; }
message NodeGetInfoResponse { string node_id = 1; int64 max_volumes_per_node = 2; Topology accessible_topology = 3; }
`).root;
const encode = (type: string, value: object) => Buffer.from(schema.lookupType(type).encode(schema.lookupType(type).fromObject(value)).finish());

describe("kubelet stand-in: the registration and NodeGetInfo messages", () => {
    test("PluginInfo as the registrar sends it", () => {
        const b = encode("PluginInfo", { type: "CSIPlugin", name: "topolvm.io", endpoint: "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock", supportedVersions: ["1.0.0", "0.4.0"] });
        assert.deepEqual(decodePluginInfo(b), { type: "CSIPlugin", name: "topolvm.io", endpoint: "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock", supportedVersions: ["1.0.0", "0.4.0"] });
    });

    test("NodeGetInfoResponse: node id, a multi-byte volume limit, every topology segment", () => {
        const b = encode("NodeGetInfoResponse", { nodeId: "sc-a", maxVolumesPerNode: 300, accessibleTopology: { segments: { "topology.topolvm.io/node": "sc-a", zone: "z1" } } });
        assert.deepEqual(decodeNodeInfo(b), { nodeId: "sc-a", maxVolumesPerNode: 300, topology: { "topology.topolvm.io/node": "sc-a", zone: "z1" } });
        assert.deepEqual(decodeNodeInfo(encode("NodeGetInfoResponse", { nodeId: "n" })), { nodeId: "n", maxVolumesPerNode: 0, topology: {} });
    });

    test("RegistrationStatus encodes as protobufjs does, with and without an error", () => {
        assert.deepEqual(encodeRegistrationStatus(true), encode("RegistrationStatus", { pluginRegistered: true }));
        const long = "x".repeat(200);
        assert.deepEqual(encodeRegistrationStatus(false, long), Buffer.concat([Buffer.from([8, 0]), encode("RegistrationStatus", { error: long })]));
    });

    test("a truncated message is refused, not half read", () => {
        const b = encode("PluginInfo", { name: "topolvm.io" });
        assert.throws(() => decodeFields(b.subarray(0, b.length - 1)), /protobuf: field 2 runs past the message/);
        assert.throws(() => decodeFields(Buffer.from([0x08, 0x80])), /protobuf: truncated varint/);
    });

    test("the CSINode the kubelet writes: owned by the node, the driver's node id and topology keys", () => {
        assert.deepEqual(csiNodeFor({ name: "sc-a", uid: "u1" }, "topolvm.io", { nodeId: "sc-a", maxVolumesPerNode: 0, topology: { b: "1", a: "2" } }), {
            apiVersion: "storage.k8s.io/v1",
            kind: "CSINode",
            metadata: { name: "sc-a", ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "sc-a", uid: "u1" }] },
            spec: { drivers: [{ name: "topolvm.io", nodeID: "sc-a", topologyKeys: ["a", "b"] }] },
        });
        assert.deepEqual(csiNodeFor({ name: "n", uid: "u" }, "d", { nodeId: "n", maxVolumesPerNode: 8, topology: {} }).spec.drivers[0].allocatable, { count: 8 });
    });
});
