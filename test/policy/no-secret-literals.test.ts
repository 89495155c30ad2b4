import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { checkNoSecretLiterals } from "../../policy/policies";
import { isCredentialName } from "../../policy/rules/no-secret-literals";
import { configMap, UNKNOWN_STRING, workload } from "./fixtures";

// Test material, not real keys.
const CEPH_KEY = "AQBvaBFZAAAAABAAmGb3WKt1bqDNbMyHCbXkpQ==";
const PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUX\n-----END CERTIFICATE-----\n";

const CM_TAIL =
    ": ConfigMaps are stored and shown in clear, readable by anyone who may read configmaps in the namespace, " +
    "and copied into manifests and logs. Put it in a Kubernetes Secret created from a Pulumi secret and mount or " +
    "reference that instead.";
const ENV_TAIL =
    ": a literal env value is part of the pod spec, shown to anyone who can read the workload and in the preview. " +
    "Use valueFrom.secretKeyRef to a Kubernetes Secret created from a Pulumi secret instead.";

describe("storage-no-secret-literals: ConfigMaps", () => {
    it("passes ordinary configuration, certificates and references to secrets", () => {
        const cm = configMap("shared-fs-ceph-conf", {
            "ceph.conf": "[global]\nfsid = 6b5a9a2e-0000-4000-8000-000000000000\nmon_host = 10.0.0.13\nkeyring = /etc/ceph/keyring\n",
            "lvmd.yaml": "socket-name: /run/topolvm/lvmd.sock\ndevice-classes:\n  - name: ssd\n    volume-group: zcloud-local-fast\n",
            "ca.crt": CERT,
            secretName: "shared-fs-admin",
            "tolerations.yaml": "- key: node-role.kubernetes.io/control-plane\n  operator: Exists\n",
            "config.json": '[{"clusterID": "shared-fs", "secretRef": "csi-cephfs-secret", "token_file": "/var/run/token"}]',
            password: "",
        });
        assert.deepEqual(checkNoSecretLiterals(cm), []);
    });

    it("reports a Ceph keyring, a PEM private key, a credential-named key, an embedded password and a Pulumi secret", () => {
        const cm = configMap("shared-fs-ceph-conf", {
            keyring: `[client.admin]\n\tkey = ${CEPH_KEY}\n\tcaps mon = "allow *"\n`,
            "id_ed25519": PEM,
            "admin-password": "hunter2",
            "dashboard.conf": "[mgr]\nmgr/dashboard/password = changeme\n",
            chap: "[secret]",
        });
        assert.deepEqual(checkNoSecretLiterals(cm), [
            `ConfigMap 'shared-fs-ceph-conf' key 'keyring' holds a Ceph key (key = AQ...)${CM_TAIL}`,
            `ConfigMap 'shared-fs-ceph-conf' key 'id_ed25519' holds a PEM private key${CM_TAIL}`,
            `ConfigMap 'shared-fs-ceph-conf' key 'admin-password' is named like a credential and has a value${CM_TAIL}`,
            `ConfigMap 'shared-fs-ceph-conf' key 'dashboard.conf' sets 'mgr/dashboard/password' to a literal value${CM_TAIL}`,
            `ConfigMap 'shared-fs-ceph-conf' key 'chap' holds a Pulumi secret${CM_TAIL}`,
        ]);
    });

    it("finds a bare Ceph key anywhere and key material in binaryData", () => {
        const cm = configMap("x", { "client.json": `{"user": "admin", "k": "${CEPH_KEY}"}` }, {
            "id_rsa": Buffer.from(PEM).toString("base64"),
            logo: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64"),
        });
        assert.deepEqual(checkNoSecretLiterals(cm).map((m) => m.split(":")[0]), [
            "ConfigMap 'x' key 'client.json' holds a Ceph key (key = AQ...)",
            "ConfigMap 'x' key 'id_rsa' holds a PEM private key",
        ]);
    });

    it("skips unknown data and values", () => {
        assert.deepEqual(checkNoSecretLiterals(configMap("x", { password: UNKNOWN_STRING })), []);
        assert.deepEqual(checkNoSecretLiterals({ ...configMap("x"), props: { data: UNKNOWN_STRING } }), []);
        assert.deepEqual(checkNoSecretLiterals({ ...configMap("x"), props: undefined }), []);
    });
});

describe("storage-no-secret-literals: container env", () => {
    it("tells credential names from references to them", () => {
        for (const name of ["PASSWORD", "ADMIN_PASSWORD", "adminPassword", "CEPH_ADMIN_SECRET", "API_TOKEN", "ACCESS_KEY", "CHAP_PASSWD", "apikey", "privateKey"]) {
            assert.equal(isCredentialName(name), true, name);
        }
        for (const name of ["SECRET_NAME", "KEY_FILE", "TOKEN_PATH", "PUBLIC_KEY", "KEYRING", "NODE_ID", "CSI_ENDPOINT", "secretRef", "ACCESS_KEY_ID"]) {
            assert.equal(isCredentialName(name), false, name);
        }
    });

    it("passes valueFrom, references and harmless values", () => {
        const ds = workload("DaemonSet", "shared-fs-mon", {
            namespace: "zcloud-storage",
            containers: [
                {
                    name: "mon",
                    image: "quay.io/ceph/ceph:v19.2.3",
                    env: [
                        { name: "CEPH_ADMIN_SECRET", valueFrom: { secretKeyRef: { name: "shared-fs-admin", key: "key" } } },
                        { name: "KEYRING_FILE", value: "/etc/ceph/keyring" },
                        { name: "TOKEN", value: "$(SERVICE_TOKEN)" },
                        { name: "ENABLE_TOKEN", value: "true" },
                        { name: "PASSWORD", value: "" },
                        { name: "NODE_ID", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
                    ],
                },
            ],
        });
        assert.deepEqual(checkNoSecretLiterals(ds), []);
    });

    it("reports literal credentials, key material in any variable and Pulumi secrets as literals", () => {
        const ds = workload("DaemonSet", "shared-fs-mon", {
            initContainers: [{ name: "init", image: "x:1", env: [{ name: "CEPH_ADMIN_SECRET", value: CEPH_KEY }] }],
            containers: [
                {
                    name: "mon",
                    image: "x:1",
                    env: [
                        { name: "DASHBOARD_PASSWORD", value: "changeme" },
                        { name: "SSH_IDENTITY", value: PEM },
                        { name: "CHAP", value: "[secret]" },
                        { name: "LOG_LEVEL", value: "info" },
                    ],
                },
            ],
        });
        assert.deepEqual(checkNoSecretLiterals(ds), [
            `DaemonSet 'shared-fs-mon' init container 'init' env CEPH_ADMIN_SECRET holds a Ceph key (key = AQ...) as a literal value${ENV_TAIL}`,
            `DaemonSet 'shared-fs-mon' container 'mon' env DASHBOARD_PASSWORD is named like a credential and has a literal value${ENV_TAIL}`,
            `DaemonSet 'shared-fs-mon' container 'mon' env SSH_IDENTITY holds a PEM private key as a literal value${ENV_TAIL}`,
            `DaemonSet 'shared-fs-mon' container 'mon' env CHAP holds a Pulumi secret as a literal value${ENV_TAIL}`,
        ]);
    });

    it("skips unknown env values", () => {
        const job = workload("Job", "x", { containers: [{ name: "c", image: "x:1", env: [{ name: "PASSWORD", value: UNKNOWN_STRING }] }] });
        assert.deepEqual(checkNoSecretLiterals(job), []);
        const odd = workload("Job", "y", { containers: [{ name: "c", image: "x:1" }] });
        (odd.props!.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } }).template.spec.containers[0].env = UNKNOWN_STRING;
        assert.deepEqual(checkNoSecretLiterals(odd), []);
    });
});
