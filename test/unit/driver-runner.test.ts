import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { expandVars, rewritePath, rewritePaths } from "../drivers/runner";

describe("drivers runner: rendered args as the kubelet and a local root see them", () => {
    test("$(VAR) expands from the container's env; $$ escapes; unknown names stay", () => {
        const env = { NODE_ID: "node1", CSI_ENDPOINT: "unix:///csi/csi.sock" };
        assert.equal(expandVars("--nodeid=$(NODE_ID)", env), "--nodeid=node1");
        assert.equal(expandVars("--endpoint=$(CSI_ENDPOINT)", env), "--endpoint=unix:///csi/csi.sock");
        assert.equal(expandVars("--x=$$(NODE_ID)", env), "--x=$(NODE_ID)");
        assert.equal(expandVars("--x=$(MISSING)", env), "--x=$(MISSING)");
    });

    test("a mount path is rewritten where it starts a path: whole arg, after =, after unix://, as a config value", () => {
        const to = "/tmp/r/csi";
        assert.equal(rewritePath("/csi/csi.sock", "/csi", to), "/tmp/r/csi/csi.sock");
        assert.equal(rewritePath("--csi-address=/csi/csi.sock", "/csi", to), "--csi-address=/tmp/r/csi/csi.sock");
        assert.equal(rewritePath("--endpoint=unix:///csi/csi.sock", "/csi", to), "--endpoint=unix:///tmp/r/csi/csi.sock");
        assert.equal(rewritePath("socket-name: /csi/lvmd.sock\n", "/csi", to), "socket-name: /tmp/r/csi/lvmd.sock\n");
        assert.equal(rewritePath("--dir=/csi", "/csi", to), "--dir=/tmp/r/csi");
    });

    test("a path that only shares a prefix, or sits inside another path, is left alone", () => {
        assert.equal(rewritePath("--x=/csiother/a", "/csi", "/tmp/r/csi"), "--x=/csiother/a");
        assert.equal(rewritePath("--x=/var/csi/a", "/csi", "/tmp/r/csi"), "--x=/var/csi/a");
    });

    test("several mounts are rewritten in one pass: a root below a mounted /tmp is not rewritten again", () => {
        const remaps: Array<[string, string]> = [
            ["/csi", "/tmp/r/csi"],
            ["/tmp", "/tmp/r/tmp"],
            ["/var/lib/kubelet", "/tmp/r/var/lib/kubelet"],
            ["/var/lib/kubelet/pods", "/tmp/r/pods"],
        ];
        assert.equal(rewritePaths("--endpoint=unix:///csi/csi.sock", remaps), "--endpoint=unix:///tmp/r/csi/csi.sock");
        assert.equal(rewritePaths("--working-mount-dir=/tmp", remaps), "--working-mount-dir=/tmp/r/tmp");
        assert.equal(rewritePaths("--a=/var/lib/kubelet/pods/x --b=/var/lib/kubelet/plugins", remaps), "--a=/tmp/r/pods/x --b=/tmp/r/var/lib/kubelet/plugins");
        assert.equal(rewritePaths("--x=/tmpfoo", remaps), "--x=/tmpfoo");
    });
});
