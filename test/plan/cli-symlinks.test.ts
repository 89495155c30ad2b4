// Stack files, --diff bases and --out are the PR author's in a pull request check: a symbolic link
// could read any file of the runner into the output (posted to the job summary) or make the plan
// write anywhere. Refused before anything is planned, one line naming the argument and the link.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import * as yaml from "js-yaml";
import { plan } from "../helpers/planCli";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-links-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const stack = path.join(dir, "Pulumi.real.yaml");
fs.writeFileSync(
    stack,
    yaml.dump({
        config: {
            "zcloud-storage:ssh": { privateKey: { secure: "v1:abc" }, hostKeys: { node1: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1" } },
            "zcloud-storage:nodes": { node1: { address: "10.0.0.1" } },
            "zcloud-storage:lvm": [{ name: "local-fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x5001"] } }],
        },
    }),
);
/** A file that must never be read into the output nor written. */
const victim = path.join(dir, "victim.txt");
fs.writeFileSync(victim, "config:\n  token: hunter2-do-not-print\n   broken: yes\n");

/** Exit 2, exactly this one line on stderr, nothing on stdout. */
async function refused(args: string[], line: string): Promise<void> {
    const r = await plan(...args);
    assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stderr, `${line}\n`);
    assert.equal(r.stdout, "");
}

const readOnly = "a stack file is read only through real directories and files, never through a link";
const writeOnly = "the plan writes only into real directories, never through a link";

describe("npm run plan: symbolic links", () => {
    test("a stack file or --diff base that is a link, or reached through one, is refused", async () => {
        const link = path.join(dir, "Pulumi.link.yaml");
        fs.symlinkSync(victim, link);
        await refused([link], `stack file ${link}: ${link} is a symbolic link; ${readOnly}`);
        await refused([stack, "--diff", link], `--diff stack file ${link}: ${link} is a symbolic link; ${readOnly}`);
        const linkedDir = path.join(dir, "stacks-link");
        fs.symlinkSync(dir, linkedDir);
        const through = path.join(linkedDir, "Pulumi.real.yaml");
        await refused([through], `stack file ${through}: ${linkedDir} is a symbolic link; ${readOnly}`);
        // `..` after a link is resolved from the link's target by the kernel: still refused
        const dotdot = `${linkedDir}/../${path.basename(dir)}/Pulumi.real.yaml`;
        await refused([dotdot], `stack file ${dotdot}: ${linkedDir} is a symbolic link; ${readOnly}`);
    });

    test("a YAML error quotes the stack file's keys and line numbers, never its values", async () => {
        const broken = path.join(dir, "Pulumi.broken.yaml");
        fs.writeFileSync(broken, "config:\n  zcloud-storage:ssh:\n    privateKey: { secure: v1:c2VjcmV0 }\n   user: root\n");
        const r = await plan(broken);
        assert.equal(r.code, 2);
        assert.equal(
            r.stderr,
            [
                `${path.relative(process.cwd(), broken)} is not valid YAML: bad indentation of a mapping entry (4:4); values are not shown`,
                "",
                " 1 | config:",
                " 2 |   zcloud-storage:ssh:",
                " 3 |     privateKey: …",
                " 4 |    user: …",
                "--------^",
                "",
            ].join("\n"),
        );
    });

    test("--out that is a link, or whose manifests/ or node-commands/ is, is refused before planning", async () => {
        const target = fs.mkdtempSync(path.join(dir, "elsewhere-"));
        const outLink = path.join(dir, "out-link");
        fs.symlinkSync(target, outLink);
        await refused([stack, "--out", outLink], `--out ${outLink}: ${outLink} is a symbolic link; ${writeOnly}`);
        await refused([stack, "--out", path.join(outLink, "sub")], `--out ${path.join(outLink, "sub")}: ${outLink} is a symbolic link; ${writeOnly}`);
        const out = path.join(dir, "out-with-link");
        fs.mkdirSync(out);
        fs.symlinkSync(target, path.join(out, "node-commands"));
        await refused([stack, "--out", out], `--out ${out}: ${path.join(out, "node-commands")} is a symbolic link; ${writeOnly}`);
        assert.deepEqual(fs.readdirSync(target), []);
    });

    test("a link in place of an output file is replaced by the file; its target is never written", async () => {
        const out = path.join(dir, "out-files");
        assert.equal((await plan(stack, "--out", out)).code, 0);
        const planted = path.join(out, "node-commands", "local-fast-node1-disks.create.sh");
        fs.rmSync(planted);
        fs.symlinkSync(victim, planted);
        const before = fs.readFileSync(victim, "utf8");
        const r = await plan(stack, "--out", out, "--force");
        assert.equal(r.code, 0, r.stderr);
        assert.equal(fs.readFileSync(victim, "utf8"), before);
        assert.ok(fs.lstatSync(planted).isFile());
        assert.match(fs.readFileSync(planted, "utf8"), /^#!\/bin\/sh\n# local-fast-node1-disks: create\n/);
        assert.deepEqual(fs.readdirSync(path.join(out, "node-commands")).filter((f) => f.endsWith(".tmp")), []);
    });
});
