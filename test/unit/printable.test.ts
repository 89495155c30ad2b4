// What discover and status print of text a node or the cluster reports: control characters
// escaped visibly in tables, lines and the YAML proposal; --json exact and valid.
import { describe, test } from "node:test";
import * as assert from "node:assert/strict";
import * as yaml from "js-yaml";
import { discoverNode, proposalYaml, renderNodeDevices } from "../../tools/discover/devices";
import { parseNodeReport } from "../../tools/discover/inventory";
import { jsonText, printable, yamlQuoted } from "../../components/config/printable";
import { StorageStatus } from "../../tools/status/evaluate";
import { renderStatus } from "../../tools/status/render";

const hostile = "Evil\u001b[31mRED\r\nforged line\t\u0000\u007f\u009b2J\u202etxt.exe\u2028end";

describe("printable", () => {
    test("escapes C0, DEL, C1, line separators and bidi controls; leaves text, backslashes and other Unicode", () => {
        assert.equal(printable(hostile), "Evil\\x1b[31mRED\\x0d\\x0aforged line\\x09\\x00\\x7f\\x9b2J\\u202etxt.exe\\u2028end");
        assert.equal(printable("Samsung SSD 870 \\x20 Ünïcode ✓"), "Samsung SSD 870 \\x20 Ünïcode ✓");
    });

    test("jsonText parses back to the same data and holds no raw control character", () => {
        const value = { model: hostile, nested: [hostile] };
        for (const text of [jsonText(value, 2), jsonText(value)]) {
            assert.deepEqual(JSON.parse(text), value);
            assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e]/);
        }
    });

    test("yamlQuoted reads back as the same string and holds no raw control character", () => {
        const quoted = yamlQuoted(hostile);
        assert.equal(yaml.load(quoted), hostile);
        assert.doesNotMatch(quoted, /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e]/);
    });
});

describe("a node reporting escapes and line breaks", () => {
    // What a hostile or broken node could print: a model with an ANSI colour and a newline that
    // forges a fact line, a serial with a C1 CSI and a bidi override, a by-id link named with an
    // OSC title sequence.
    const lsblk = JSON.stringify({
        blockdevices: [
            { name: "sdb", path: "/dev/sdb", type: "disk", size: 100 * 1024 ** 3, model: "Evil\u001b[31mRED\nzcloud-guard: /dev/sdc ok", serial: "S\u009b2J\u202eN", rota: false, wwn: null, mountpoints: [null], fstype: null },
        ],
    });
    const byId = "/dev/disk/by-id/nvme-x\u001b]0;pwned\u0007";
    const answer = [`zcloud-lsblk: ${lsblk}`, "zcloud-guard: /dev/sdb ok", `zcloud-stable: /dev/sdb ${byId}`, `zcloud-byid: ${byId} /dev/sdb`].join("\n");
    const found = discoverNode(parseNodeReport(answer), [], 1024 ** 3);

    test("discover's table prints each escape visibly, on one line per device", () => {
        assert.equal(
            renderNodeDevices(found),
            [
                "  DEVICE    SIZE     KIND  MODEL / SERIAL                                                 BY-ID                   VERDICT",
                "  /dev/sdb  100 GiB  ssd   Evil\\x1b[31mRED\\x0azcloud-guard: /dev/sdc ok / S\\x9b2J\\u202eN  nvme-x\\x1b]0;pwned\\x07  clean",
            ].join("\n"),
        );
    });

    test("the proposal quotes the name with YAML escapes that read back exactly", () => {
        const proposal = proposalYaml([["node1", found]]);
        assert.equal(proposal, 'hosts:\n  node1:\n    - "/dev/disk/by-id/nvme-x\\u001b]0;pwned\\u0007"\n');
        assert.deepEqual(yaml.load(proposal), { hosts: { node1: [byId] } });
    });

    test("the data stays exact for --json", () => {
        assert.equal(found.devices[0].model, "Evil\u001b[31mRED\nzcloud-guard: /dev/sdc ok");
        assert.equal(JSON.parse(jsonText(found)).devices[0].serial, "S\u009b2J\u202eN");
    });

    test("status prints ceph output, node errors and VG names escaped", () => {
        const storages: StorageStatus[] = [
            {
                name: "fast",
                type: "lvm",
                healthy: false,
                storageClass: { present: true, default: false },
                nodes: {
                    node1: { ready: true, label: true, daemonsReady: true, devices: {}, vg: { name: "zcloud-fast", size: 1024 ** 3, free: 0, lvCount: 1, devices: ["/dev/sdb\u001b[2K"] } },
                },
                problems: [{ kind: "unreachable", node: "node2", object: "ssh", message: "unreachable: Connection closed\u001b[1A\u001b[2Kfast (lvm): healthy" }],
            },
            {
                name: "shared",
                type: "cephfs",
                healthy: true,
                storageClass: { present: true, default: false },
                ceph: { status: "HEALTH_OK\u001b[8m", osds: 1, up: 1, in: 1, bytesUsed: 0, bytesTotal: 1024 ** 3 },
                nodes: {},
                problems: [],
            },
        ] as StorageStatus[];
        assert.equal(
            renderStatus(storages),
            [
                "fast (lvm): 1 problem; StorageClass fast",
                "  NODE   READY  LABEL  DAEMONS  VG SIZE  VG FREE  LVS  THIN  VG DEVICES",
                "  node1  yes    yes    yes      1 GiB    0 B      1    -     /dev/sdb\\x1b[2K",
                "  unreachable: fast: node2: ssh: unreachable: Connection closed\\x1b[1A\\x1b[2Kfast (lvm): healthy",
                "",
                "shared (cephfs): healthy; StorageClass shared",
                "  ceph HEALTH_OK\\x1b[8m, OSDs 1 up / 1 in / 1, used 0 B of 1 GiB",
                "",
            ].join("\n"),
        );
    });
});
