import assert from "node:assert/strict";
import { it } from "node:test";
import { csiSecretData } from "../../components/cephfs/csi";

it("csiSecretData: ceph-csi's provisioner keys (adminID/adminKey) and mount keys (userID/userKey) are one user's", () => {
    assert.deepEqual(csiSecretData("csi", "AQBkey=="), { userID: "csi", userKey: "AQBkey==", adminID: "csi", adminKey: "AQBkey==" });
});
