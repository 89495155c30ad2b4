/** test/helpers/shellPrograms.ts: the programs a shell text calls, from shfmt's syntax tree. */
import { test } from "node:test";
import * as assert from "node:assert/strict";
import { programsCalled } from "../helpers/shellPrograms";

test("simple commands anywhere (pipelines, substitutions, conditions, functions' bodies) name their program", () => {
    const text = ['a=$(foo x | bar)', 'if baz; then qux "$a"; fi', 'f() { quux >/dev/null; }', 'while read -r l; do corge; done < "$x"', 'case $a in *) grault ;; esac'].join("\n");
    assert.deepEqual(programsCalled([text]), ["bar", "baz", "corge", "foo", "grault", "quux", "qux"]);
});

test("wrappers are programs and name the program they run; builtins, the texts' own functions, probes and non-literal names are left out", () => {
    const text = [
        "exec ceph-mon --foreground",
        "timeout 5 wget -q x",
        'timeout "$((t + 5))" wget -q x',
        "timeout -s KILL 3 curl y",
        "nice -n 5 ionice z",
        "xargs -r rm",
        "command stat f",
        "command -v maybe-absent >/dev/null",
        'printf "%s" x; echo; test -e f; [ -e f ]; read -r v; set -eu; local x; cd /',
        'zc_log() { :; }; zc_log hi',
        '"$@"',
        '$prog arg',
        "'quoted-name' arg",
    ].join("\n");
    assert.deepEqual(programsCalled([text]), ["ceph-mon", "curl", "ionice", "nice", "quoted-name", "rm", "stat", "timeout", "wget", "xargs"]);
});

test("a function defined in one text is not a program of another", () => {
    assert.deepEqual(programsCalled(["zc_die() { exit 1; }", "zc_die x; sed s/a/b/"]), ["sed"]);
});
