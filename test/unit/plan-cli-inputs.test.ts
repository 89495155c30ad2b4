import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import { CliInputError, firstSymlink, resolveStackArg } from "../../tools/plan/cliInputs";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-cli-inputs-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));

test("a stack name whose stacks/Pulumi.<name>.yaml is a link is refused, naming the link", () => {
    const stacks = path.join(root, "project", "stacks");
    fs.mkdirSync(stacks, { recursive: true });
    fs.writeFileSync(path.join(stacks, "Pulumi.dev.yaml"), "config: {}\n");
    fs.symlinkSync(path.join(root, "elsewhere.yaml"), path.join(stacks, "Pulumi.prod.yaml"));
    assert.equal(resolveStackArg("dev", stacks), path.join(stacks, "Pulumi.dev.yaml"));
    assert.throws(() => resolveStackArg("prod", stacks, "--diff stack"), (e: unknown) => {
        assert.ok(e instanceof CliInputError);
        assert.equal(
            e.message,
            // outside the working directory, so shown as an absolute path
            `--diff stack "prod": ${path.join(stacks, "Pulumi.prod.yaml")} is a symbolic link; a stack file is read only through real directories and files, never through a link`,
        );
        return true;
    });
});

test("firstSymlink walks the path as given, skips what an absolute path shares with the root, stops where nothing exists", () => {
    const real = path.join(root, "real");
    fs.mkdirSync(real);
    fs.symlinkSync(real, path.join(root, "link"));
    assert.equal(firstSymlink(path.join(root, "link", "x.yaml"), "/"), path.join(root, "link"));
    assert.equal(firstSymlink(path.join(root, "link", "x.yaml"), path.join(root, "link")), undefined);
    assert.equal(firstSymlink(path.join(root, "real", "x.yaml"), "/"), undefined);
    assert.equal(firstSymlink(path.join(root, "none", "link"), "/"), undefined);
});
