import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { evaluatePolicies } from "../../policy/policies";
import { diffPlans } from "../../tools/plan/diff";
import { COMMAND, COPY, DAEMON_SET, DEPLOYMENT, LOCAL as LABEL, PlannedResource, STORAGE_CLASS, baseConfig, planBefore, planValues, resourceNamed, resourcesOfType } from "../helpers/plan";

const san = {
    name: "san",
    portals: ["10.0.0.50:3260", "10.0.1.50:3260"],
    iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
    lun: 1,
    chap: { username: "k8s", password: { secure: "v1:chap-ciphertext" } },
    initiators: ["node1", "node2"],
};
const config = (storage: Record<string, unknown> = {}) => ({ ...baseConfig, iscsi: [{ ...san, ...storage }] });
const args = (r: PlannedResource) => String((r.inputs as any).create);
/** The script's name and arguments: the stub's words after the bundle's staged path and sha256. */
const words = (r: PlannedResource) => {
    const [name, _staged, _sha256, ...rest] = args(r).slice(args(r).lastIndexOf("' ") + 2).split(" ");
    return [name, ...rest];
};

const run = planBefore(config());

describe("iSCSI graph", () => {
    test("one IscsiStorage with a login per initiator, one VG command, a label per initiator, one StorageClass", () => {
        const storage = resourceNamed(run(), "san", "zcloud:storage:IscsiStorage");
        const children = run().resources.filter((r) => r.parent === storage.urn).map((r) => `${r.type} ${r.name}`);
        assert.deepEqual(children.sort(), [
            `${LABEL} san-node1-label`,
            `${LABEL} san-node2-label`,
            `${COMMAND} san-node1-login`,
            `${COMMAND} san-node2-login`,
            `${COMMAND} san-vg`,
            `${COPY} san-node1-login-scripts`,
            `${COPY} san-node2-login-scripts`,
            `${COPY} san-vg-scripts`,
            `${STORAGE_CLASS} san-storageclass`,
        ]);
        assert.equal(resourcesOfType(run(), "zcloud:storage:CsiSanlockLvm").length, 1);
    });

    test("dependencies: VG after the first initiator's login; labels after their login and the VG; StorageClass after driver, VG, labels", () => {
        const urn = (name: string) => run().resources.find((r) => r.name === name && !r.type.includes(":ServiceAccount"))!.urn;
        assert.deepEqual(resourceNamed(run(), "san-node1-login").dependencies, [urn("san-node1-login-scripts")]);
        assert.deepEqual(resourceNamed(run(), "san-node2-login").dependencies, [urn("san-node2-login-scripts")]);
        assert.deepEqual(resourceNamed(run(), "san-vg").dependencies.sort(), [urn("san-node1-login"), urn("san-vg-scripts")].sort());
        for (const copy of resourcesOfType(run(), COPY)) {
            assert.deepEqual(copy.dependencies, [], copy.name);
        }
        // The VG's script set goes to the node it runs on: the first initiator's address.
        assert.equal((resourceNamed(run(), "san-vg-scripts").policyInputs as any).connection.host, "10.0.0.11");
        for (const node of ["node1", "node2"]) {
            assert.deepEqual(resourceNamed(run(), `san-${node}-label`).dependencies.sort(), [urn(`san-${node}-login`), urn("san-vg")].sort());
        }
        assert.deepEqual(
            resourceNamed(run(), "san-storageclass").dependencies.sort(),
            [urn("csi-sanlock-lvm-controller"), urn("san-vg"), urn("san-node1-label"), urn("san-node2-label")].sort(),
        );
        for (const name of ["san-node1-login", "san-node2-login", "san-vg"]) {
            assert.equal(resourceNamed(run(), name).deleteBeforeReplace, true, name);
        }
    });

    test("the CHAP password is the login's secret stdin, the VG command has no CHAP at all", () => {
        for (const node of ["node1", "node2"]) {
            const login = resourceNamed(run(), `san-${node}-login`);
            assert.equal((login.inputs as any).stdin, "[secret]");
            assert.deepEqual(words(login).slice(0, 2), ["iscsi-initiator", "apply"]);
            assert.deepEqual(words(login).slice(-2), ["--chap-user", "k8s"]);
            assert.match(String((login.inputs as any).delete), / iscsi-initiator \.zcloud-storage\/scripts\/([0-9a-f]{64})\.sh \1 release --storage san --vg zcloud-san /);
        }
        const vg = resourceNamed(run(), "san-vg");
        assert.equal((vg.inputs as any).stdin, undefined);
        assert.ok(!words(vg).some((w) => w.startsWith("--chap")), "the VG command never sees CHAP");
        assert.deepEqual(words(vg), [
            "iscsi-vg", "apply", "--storage", "san", "--vg", "zcloud-san", "--target", san.iqn, "--lun", "1",
            "--portal", "10.0.0.50:3260", "--portal", "10.0.1.50:3260", "--wait", "90", "--io-timeout", "30",
        ]);
    });

    test("StorageClass: csi-sanlock-lvm on the VG, WaitForFirstConsumer, only on the storage's initiators", () => {
        const sc = resourceNamed(run(), "san-storageclass", STORAGE_CLASS).inputs as any;
        assert.equal(sc.provisioner, "csi-sanlock-lvm.csi.vleo.net");
        assert.deepEqual(sc.parameters, { volumeGroup: "zcloud-san" });
        assert.equal(sc.volumeBindingMode, "WaitForFirstConsumer");
        // The driver's topology key with the initiators' sanlock host ids (10.0.0.11 and 10.0.0.12):
        // what external-provisioner must find the selected node's topology in (a node label key there
        // failed every CreateVolume, seen in test/drivers/prebuilt/sanlock-flow.test.ts).
        assert.deepEqual(sc.allowedTopologies, [{ matchLabelExpressions: [{ key: "csi-sanlock-lvm/topology", values: ["12", "13"] }] }]);
        const label = JSON.parse(String(resourceNamed(run(), "san-node2-label", LABEL).inputs.stdin));
        assert.deepEqual(label.metadata.labels, { "storage.zcloud.io/iscsi": "san" });
    });

    test("driver: node plugin and controller confined to initiator nodes; lock daemons in the pod with io timeout 30; least privilege", () => {
        const initiatorsOnly = { nodeSelectorTerms: [{ matchExpressions: [{ key: "storage.zcloud.io/iscsi", operator: "Exists" }] }] };
        const node = (resourceNamed(run(), "csi-sanlock-lvm-node", DAEMON_SET).inputs as any).spec.template.spec;
        assert.deepEqual(node.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, initiatorsOnly);
        assert.deepEqual(node.containers.map((c: any) => c.name), ["driverd", "lvmctrld", "node-driver-registrar", "liveness-probe"]);
        const lvmctrld = node.containers.find((c: any) => c.name === "lvmctrld");
        assert.ok(lvmctrld.args.includes("--sanlock-args=-o 30"));
        assert.ok(lvmctrld.args.includes("--lock-host-addr=$(NODE_IP)"));
        const controller = (resourceNamed(run(), "csi-sanlock-lvm-controller", DEPLOYMENT).inputs as any).spec.template.spec;
        assert.deepEqual(controller.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, initiatorsOnly);
        assert.deepEqual(controller.containers.map((c: any) => c.name), ["csi-provisioner", "csi-resizer"]);
        assert.ok(controller.containers.every((c: any) => c.securityContext?.privileged === undefined));
        const nodeRoles = run().resources.filter((r) => /Role/.test(r.type) && r.name.startsWith("csi-sanlock-lvm-node"));
        assert.deepEqual(nodeRoles, [], "the node plugin has no API permissions");
        const csiDriver = resourcesOfType(run(), "kubernetes:storage.k8s.io/v1:CSIDriver")[0].inputs as any;
        assert.deepEqual(csiDriver.spec, { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ["Persistent"] });
    });

    test("driverd's startup probe outlasts a lockspace rejoin after a node's unclean stop (166.5 s measured, test/drivers/README.md)", () => {
        // lvmctrld serves, and driverd's socket appears, only once the node holds the VG's lockspace;
        // after a reboot sanlock first waits out the host id's lease of the boot before.
        const node = (resourceNamed(run(), "csi-sanlock-lvm-node", DAEMON_SET).inputs as any).spec.template.spec;
        const driverd = node.containers.find((c: any) => c.name === "driverd");
        assert.deepEqual(driverd.startupProbe, { httpGet: { path: "/healthz", port: "healthz" }, failureThreshold: 60, periodSeconds: 10 });
        const rejoinAfterRebootSeconds = 166.5;
        assert.ok(driverd.startupProbe.failureThreshold * driverd.startupProbe.periodSeconds >= 3 * rejoinAfterRebootSeconds);
    });

    test("every image pinned, policies pass, the password appears nowhere in the plan", () => {
        const images = [...new Set(run().resources.flatMap((r) => ((r.inputs.spec as any)?.template?.spec?.containers ?? []).map((c: any) => c.image)))].sort();
        assert.deepEqual(images, [
            "quay.io/aleofreddi/csi-sanlock-lvm-driverd:v0.4.6",
            "quay.io/aleofreddi/csi-sanlock-lvm-lvmctrld:v0.4.6",
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
            "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
            "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
            "registry.k8s.io/sig-storage/livenessprobe:v2.19.0",
        ]);
        const planned = run().resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }));
        const violations = evaluatePolicies(planned, { "storage-privileged-namespace": { namespace: "zcloud-storage" } });
        assert.deepEqual(violations.filter((v) => v.policy !== "storage-ssh-host-key-pinned"), []);
        assert.ok(!JSON.stringify(run().resources).includes("chap-ciphertext"));
    });
});

describe("iSCSI config changes (offline diff)", () => {
    const kinds = (changes: ReturnType<typeof diffPlans>) => changes.map((c) => `${c.kind} ${c.resource.name}${c.fields.length ? ` ${c.fields.join(",")}` : ""}`).sort();

    test("a CHAP user change updates the logins in place and touches nothing else", async () => {
        const next = await planValues(config({ chap: { username: "k8s-2", password: { secure: "v1:other" } } }));
        assert.deepEqual(kinds(diffPlans(run().resources, next.resources)), ["update san-node1-login create,update", "update san-node2-login create,update"]);
    });

    test("an added initiator creates its login and label and adds its host id to the StorageClass in place; nothing is replaced or deleted", async () => {
        const next = await planValues(config({ initiators: ["node1", "node2", "node3"] }));
        assert.deepEqual(kinds(diffPlans(run().resources, next.resources)), ["create san-node3-label", "create san-node3-login", "create san-node3-login-scripts", "update san-storageclass allowedTopologies"]);
        assert.deepEqual((resourceNamed(next, "san-storageclass", STORAGE_CLASS).inputs as any).allowedTopologies[0].matchLabelExpressions[0].values, ["12", "13", "14"]);
    });

    test("a removed initiator deletes its label and login and drops its host id from the StorageClass in place; the label goes first", async () => {
        const next = await planValues(config({ initiators: ["node1"] }));
        assert.deepEqual(kinds(diffPlans(run().resources, next.resources)), ["delete san-node2-label", "delete san-node2-login", "delete san-node2-login-scripts", "update san-storageclass allowedTopologies"]);
        // Pulumi deletes dependents first: the label depends on the login.
        assert.ok(resourceNamed(run(), "san-node2-label").dependencies.includes(resourceNamed(run(), "san-node2-login").urn));
    });

    test("a portal by hostname or IPv6 is refused before any resource", async () => {
        const bad = await planValues(config({ portals: ["san.example:3260", "[fd00::50]:3260"] }));
        assert.deepEqual(bad.error?.issues, [
            { path: "iscsi[0].portals[0]", message: "san.example:3260: iSCSI portals are IPv4 address:port (the nodes find the LUN's device by the portal's address)" },
            { path: "iscsi[0].portals[1]", message: "[fd00::50]:3260: iSCSI portals are IPv4 address:port (the nodes find the LUN's device by the portal's address)" },
        ]);
        assert.equal(bad.resources.length, 0);
    });

    test("initiators whose addresses give one sanlock host id are refused before any resource", async () => {
        const clash = await planValues({ ...config(), nodes: { ...baseConfig.nodes, node2: { address: "10.0.8.11" } } });
        assert.match(clash.error?.message ?? "", /iscsi\[0\]\.initiators: node1 and node2 get the same sanlock host id 12 from their addresses/);
        assert.equal(clash.resources.length, 0);
    });
});
