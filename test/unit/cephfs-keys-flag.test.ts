/**
 * `cephfs[].keys: aes256` (docs/cephfs.md "Key rotation"): accepted as that one value, refused with
 * one clear error otherwise, refused when the program's Ceph image knows only AES-128 keys, and
 * carried into the model.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatIssue } from "../../components/config/errors";
import { parseStackConfig } from "../../components/config/parse";
import { cephKeysForImage } from "../../components/config/rules";
import { StackParsed } from "../../components/config/schema";
import { cephMajorRelease, images } from "../../components/images";

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
const stack = (extra: Record<string, unknown>) => ({
    ssh: { privateKey: "k", hostKeys: { node1: key } },
    nodes: { node1: { address: "10.0.0.11" } },
    cephfs: [{ name: "shared-fs", hosts: { node1: ["/dev/sdb"] }, ...extra }],
});

test("keys: aes256 is carried into the model with the shipped image (Ceph 20+), refused before; left out, the model has none", () => {
    const on = parseStackConfig(stack({ keys: "aes256" }));
    if (cephMajorRelease(images.ceph) >= 20) {
        assert.deepEqual(on.errors, []);
        assert.equal(on.model!.cephfs[0].keys, "aes256");
    } else {
        assert.deepEqual(on.errors.map(formatIssue), [`cephfs[0].keys: aes256 needs Ceph 20 or later, but the program ships ${images.ceph}, whose Ceph knows only AES-128 keys`]);
    }
    const off = parseStackConfig(stack({}));
    assert.deepEqual(off.errors, []);
    assert.equal(off.model!.cephfs[0].keys, undefined);
});

test("keys: any other value is refused with one error naming the key path", () => {
    for (const v of ["aes128", "AES256", true]) {
        assert.deepEqual(parseStackConfig(stack({ keys: v })).errors.map(formatIssue), [
            `cephfs[0].keys: ${JSON.stringify(v)} is not "aes256" (new AES-256 keys for the storage, docs/cephfs.md "Key rotation"), or left out`,
        ], String(v));
    }
});

test("keys: aes256 needs a Ceph 20 image: refused for Squid 19.2.4, accepted for Tentacle 20.2.4", () => {
    const parsed = { cephfs: [{ name: "shared-fs", keys: "aes256" }, { name: "other" }] } as unknown as StackParsed;
    assert.deepEqual(cephKeysForImage("quay.io/ceph/ceph:v19.2.4")(parsed, {} as never), [
        { path: "cephfs[0].keys", message: "aes256 needs Ceph 20 or later, but the program ships quay.io/ceph/ceph:v19.2.4, whose Ceph knows only AES-128 keys" },
    ]);
    assert.deepEqual(cephKeysForImage("quay.io/ceph/ceph:v20.2.4")(parsed, {} as never), []);
});

test("csiKey: aes256 is carried into the model with the shipped image (Ceph 20+), refused before; left out, the model has none", () => {
    const on = parseStackConfig(stack({ csiKey: "aes256" }));
    if (cephMajorRelease(images.ceph) >= 20) {
        assert.deepEqual(on.errors, []);
        assert.equal(on.model!.cephfs[0].csiKey, "aes256");
    } else {
        assert.deepEqual(on.errors.map(formatIssue), [`cephfs[0].csiKey: aes256 needs Ceph 20 or later, but the program ships ${images.ceph}, whose Ceph knows only AES-128 keys`]);
    }
    assert.equal(parseStackConfig(stack({})).model!.cephfs[0].csiKey, undefined);
});

test("csiKey: any other value is refused with one error naming the key path", () => {
    for (const v of ["aes", "aes256k", false]) {
        assert.deepEqual(parseStackConfig(stack({ csiKey: v })).errors.map(formatIssue), [
            `cephfs[0].csiKey: ${JSON.stringify(v)} is not "aes256" (an AES-256 key for the CSI user, read only by Linux 7.0 and later on every node that mounts the volumes, docs/cephfs.md "Keys on Ceph 20"), or left out (AES-128)`,
        ], String(v));
    }
});

test("keys and csiKey before Ceph 20: one error each, naming its own path", () => {
    const parsed = { cephfs: [{ name: "shared-fs", keys: "aes256", csiKey: "aes256" }, { name: "other", csiKey: "aes256" }] } as unknown as StackParsed;
    const msg = "aes256 needs Ceph 20 or later, but the program ships quay.io/ceph/ceph:v19.2.4, whose Ceph knows only AES-128 keys";
    assert.deepEqual(cephKeysForImage("quay.io/ceph/ceph:v19.2.4")(parsed, {} as never), [
        { path: "cephfs[0].keys", message: msg },
        { path: "cephfs[0].csiKey", message: msg },
        { path: "cephfs[1].csiKey", message: msg },
    ]);
    assert.deepEqual(cephKeysForImage("quay.io/ceph/ceph:v20.2.4")(parsed, {} as never), []);
});
