import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseStackConfig } from "../../components/config/parse";
import { nfsMountOptionProblem, nfsPathProblem, nfsServerProblem } from "../../components/config/schema";

/** NFS section of the stack config: defaults, and every message with its key path. */

const nfs = (entry: Record<string, unknown>) => ({ nfs: [{ name: "nas", server: "10.0.0.60", path: "/exports/k8s", ...entry }] });
const errorsOf = (values: Record<string, unknown>) => parseStackConfig(values).errors;

describe("nfs config: valid entries", () => {
    test("defaults: onDelete archive, no mount options, not default, no ssh needed", () => {
        const r = parseStackConfig({ nfs: [{ name: "nas", server: "nas.example", path: "/exports/k8s" }] });
        assert.deepEqual(r.errors, []);
        assert.deepEqual(r.model?.nfs, [{ name: "nas", default: false, server: "nas.example", path: "/exports/k8s", onDelete: "archive", mountOptions: [] }]);
    });

    test("IPv4, bare IPv6 and hostnames are servers", () => {
        for (const server of ["10.0.0.60", "fd00::60", "2001:db8::1", "nas", "nas.storage.example", "nas-01.example."]) {
            assert.deepEqual(errorsOf(nfs({ server })), [], server);
        }
    });

    test("each onDelete value and known mount options are accepted", () => {
        for (const onDelete of ["delete", "retain", "archive"]) {
            assert.equal(parseStackConfig(nfs({ onDelete })).model?.nfs[0].onDelete, onDelete);
        }
        const mountOptions = ["nfsvers=4.1", "vers=3", "hard", "noatime", "nconnect=4", "proto=tcp", "sec=krb5p", "local_lock=none", "rsize=1048576"];
        assert.deepEqual(parseStackConfig(nfs({ mountOptions })).model?.nfs[0].mountOptions, mountOptions);
    });

    test("the root of an NFSv4 pseudo filesystem and a trailing slash are absolute paths", () => {
        assert.deepEqual(errorsOf(nfs({ path: "/" })), []);
        assert.deepEqual(errorsOf(nfs({ path: "/exports/k8s/" })), []);
    });
});

describe("nfs config: errors name their key path", () => {
    test("every problem of every entry is reported together", () => {
        const errors = errorsOf({
            nfs: [
                { name: "Bad_Name", server: "10.0.0.300", path: "exports/k8s", onDelete: "remove", mountOptions: ["nfsvers=5", "hardd", "rw,noatime", "vers"] },
                { name: "nas", server: "[fd00::1]", path: "/exports/a#b", mountopts: [] },
                { name: "nas2", server: "fd00::60", path: "/exports/../k8s" },
                { name: "nas3", path: "/a" },
                { name: "nas4", server: "nas", path: "/a", mountOptions: "nfsvers=4.1" },
            ],
        });
        assert.deepEqual(errors, [
            {
                path: "nfs[0].name",
                message: `"Bad_Name" is not a lowercase RFC 1123 name (a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters), e.g. local-fast`,
            },
            { path: "nfs[0].server", message: '"10.0.0.300" is not an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.60' },
            { path: "nfs[0].path", message: '"exports/k8s" is not an absolute path on the server, e.g. /exports/k8s' },
            { path: "nfs[0].onDelete", message: '"remove" is not one of delete, retain, archive (archive keeps the data in an archived- directory)' },
            { path: "nfs[0].mountOptions[0]", message: "nfsvers must be one of 3, 4, 4.0, 4.1, 4.2" },
            { path: "nfs[0].mountOptions[1]", message: 'unknown NFS mount option "hardd"; did you mean "hard"?' },
            {
                path: "nfs[0].mountOptions[2]",
                message: '"rw,noatime" is not a mount option: write one option per item as name or name=value, without spaces or commas',
            },
            { path: "nfs[0].mountOptions[3]", message: "vers must be one of 3, 4, 4.0, 4.1, 4.2" },
            { path: "nfs[1].server", message: "write the IPv6 address without brackets: fd00::1" },
            { path: "nfs[1].path", message: '"#" cannot appear in an NFS path: csi-driver-nfs separates server, path and directory with # in volume IDs' },
            { path: "nfs[1].mountopts", message: 'unknown key; did you mean "mountOptions"? (known keys: name, default, server, path, onDelete, mountOptions, alerts)' },
            { path: "nfs[2].path", message: '"/exports/../k8s" is not an absolute path on the server, e.g. /exports/k8s' },
            { path: "nfs[3].server", message: "is required" },
            { path: "nfs[4].mountOptions", message: 'must be a list, not string "nfsvers=4.1"' },
        ]);
    });

    test("a missing path and a list that is not a list", () => {
        assert.deepEqual(errorsOf({ nfs: [{ name: "nas", server: "nas" }] }), [{ path: "nfs[0].path", message: "is required" }]);
        assert.deepEqual(errorsOf({ nfs: { name: "nas" } }), [{ path: "nfs", message: "must be a list of nfs storages, not a map" }]);
    });

    test("names are unique across all storage types, and at most one is the default", () => {
        const errors = errorsOf({
            ssh: { privateKey: "k" },
            nodes: { node1: { address: "10.0.0.11" } },
            lvm: [{ name: "shared", default: true, hosts: { node1: ["/dev/sdb"] } }],
            nfs: [
                { name: "shared", server: "nas", path: "/a" },
                { name: "nas", default: true, server: "nas", path: "/b" },
            ],
        });
        assert.deepEqual(errors, [
            { path: "nfs[0].name", message: '"shared" is already used by lvm[0]; StorageClass names must be unique across all storage types' },
            { path: "nfs[1].default", message: "only one StorageClass can be the default and lvm[0] (shared) already is; set default: false on one of them" },
        ]);
    });
});

describe("nfs value checks as functions", () => {
    test("nfsMountOptionProblem", () => {
        assert.equal(nfsMountOptionProblem("nfsvers=4.2"), undefined);
        assert.equal(nfsMountOptionProblem("nolock"), undefined);
        assert.equal(nfsMountOptionProblem(""), '"" is not a mount option: write one option per item as name or name=value, without spaces or commas');
        assert.equal(nfsMountOptionProblem("timeo = 600"), '"timeo = 600" is not a mount option: write one option per item as name or name=value, without spaces or commas');
        assert.equal(nfsMountOptionProblem("nfsver=4.1"), 'unknown NFS mount option "nfsver"; did you mean "nfsvers"?');
        assert.equal(nfsMountOptionProblem("vers=4.3"), "vers must be one of 3, 4, 4.0, 4.1, 4.2");
    });

    test("nfsServerProblem", () => {
        assert.equal(nfsServerProblem("fd00::60"), undefined);
        assert.equal(nfsServerProblem("[fd00::60]"), "write the IPv6 address without brackets: fd00::60");
        assert.equal(nfsServerProblem("nfs://nas"), "must be an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.60");
        assert.equal(nfsServerProblem("nas:/exports"), "must be an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.60");
    });

    test("nfsPathProblem", () => {
        assert.equal(nfsPathProblem("/exports/k8s"), undefined);
        assert.equal(nfsPathProblem("/exports//k8s"), "must be an absolute path on the server, e.g. /exports/k8s");
        assert.equal(nfsPathProblem("/exports/k 8s"), "must be an absolute path on the server, e.g. /exports/k8s");
        assert.equal(nfsPathProblem("/exports/#1"), '"#" cannot appear in an NFS path: csi-driver-nfs separates server, path and directory with # in volume IDs');
    });
});
