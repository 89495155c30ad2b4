/**
 * The Ceph image's entrypoint is never relied on: every container and init container that runs
 * the pinned Ceph image (here through a mirror, `imageRegistry`) gives its own command. quay.io's
 * image sets none and an image rebuilt from another distribution's packages (the nodes tier's, from
 * Debian's) may set another, so a container without a command would run whatever the image says.
 */
import { test } from "node:test";
import * as assert from "node:assert/strict";
import { DAEMON_SET, DEPLOYMENT, JOB, planValues, resourcesOfType, sharedFsConfig } from "../helpers/plan";
import * as fs from "node:fs";
import * as path from "node:path";
import { images } from "../../components/images";
import { programsCalled } from "../helpers/shellPrograms";
import { documentedCephImagePrograms } from "../helpers/cephImage";

interface Container {
    name: string;
    image: string;
    command?: string[];
}

test("every container running the Ceph image gives its own command (monitoring on, a mirror registry)", async () => {
    const run = await planValues({ ...sharedFsConfig, imageRegistry: "registry.local:5000/mirror", monitoring: {} });
    assert.equal(run.error, undefined, run.error?.message);
    const cephPath = images.ceph.slice(images.ceph.indexOf("/") + 1);
    const cephImage = `registry.local:5000/mirror/${cephPath}`;
    const seen: string[] = [];
    for (const r of [...resourcesOfType(run, DEPLOYMENT), ...resourcesOfType(run, DAEMON_SET), ...resourcesOfType(run, JOB)]) {
        const spec = (r.inputs as any).spec.template.spec;
        for (const c of [...(spec.initContainers ?? []), ...spec.containers] as Container[]) {
            if (c.image !== cephImage) continue;
            seen.push(`${r.name}/${c.name}`);
            assert.ok(Array.isArray(c.command) && c.command.length > 0, `${r.name}/${c.name} runs the Ceph image without a command of its own`);
        }
    }
    // the daemons, their init steps, the admin pods and the Jobs: the check covered them all
    const expectedNames = [
        "ceph-shared-fs-mon-a/mon-init",
        "ceph-shared-fs-mon-a/mon",
        "ceph-shared-fs-mgr-a/keyring",
        "ceph-shared-fs-mgr-a/mgr",
        "ceph-shared-fs-mds-a/keyring",
        "ceph-shared-fs-mds-a/mds",
        "ceph-shared-fs-admin/admin",
        "shared-fs-filesystem/filesystem",
        "shared-fs-filesystem/csi-user",
        "shared-fs-metrics/metrics",
    ];
    for (const expected of expectedNames) {
        assert.ok(seen.includes(expected), `${expected} not among the Ceph image's containers: ${seen.join(", ")}`);
    }
    assert.ok(seen.some((s) => /^ceph-shared-fs-osd-node4-.*\/osd$/.test(s)), seen.join(", "));
    assert.ok(seen.some((s) => /^shared-fs-node4-osd-.*-prepare\/prepare$/.test(s)), seen.join(", "));
});

test("docs/cephfs.md names exactly the programs the Ceph image must hold: the Ceph containers' commands and what the Ceph scripts call (shfmt's syntax tree)", async () => {
    const run = await planValues({ ...sharedFsConfig, monitoring: {} });
    assert.equal(run.error, undefined, run.error?.message);
    const commands = new Set<string>();
    for (const r of [...resourcesOfType(run, DEPLOYMENT), ...resourcesOfType(run, DAEMON_SET), ...resourcesOfType(run, JOB)]) {
        const spec = (r.inputs as any).spec.template.spec;
        for (const c of [...(spec.initContainers ?? []), ...spec.containers] as Container[]) {
            if (c.image === images.ceph && c.command?.length) commands.add(c.command[0]);
        }
    }
    // everything that runs inside the image: the library, the runner, each Ceph script set and the
    // key rotation tool (components/node/ceph)
    const nodeDir = path.join(__dirname, "..", "..", "components", "node");
    const scripts = [path.join(nodeDir, "lib.sh"), ...fs.readdirSync(path.join(nodeDir, "ceph")).filter((f) => f.endsWith(".sh")).map((f) => path.join(nodeDir, "ceph", f))];
    const called = programsCalled(scripts.map((f) => fs.readFileSync(f, "utf8")));
    assert.ok(called.includes("ceph") && called.includes("python3"), called.join(" "));
    const needed = [...new Set([...commands, ...called])].sort();
    assert.deepEqual(documentedCephImagePrograms().sort(), needed, needed.map((p) => `\`${p}\``).join(", "));
});
