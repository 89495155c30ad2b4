/**
 * An API server stand-in just deep enough for controller-runtime programs to start: discovery of
 * the groups TopoLVM uses, the objects it was given (a node, the CSIDriver: what a cluster would
 * hold before the driver starts) in lists, watches and GETs, 404 for anything else, and writes
 * echoed back without being kept. It proves the programs start and serve with their rendered
 * flags, not that they reconcile anything. Every request is recorded.
 */
import * as http from "node:http";

type Resource = { name: string; kind: string; namespaced: boolean };

/** group/version -> resources the programs look up (discovery answers only these). */
const served: Record<string, Resource[]> = {
    v1: [
        { name: "nodes", kind: "Node", namespaced: false },
        { name: "pods", kind: "Pod", namespaced: true },
        { name: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true },
        { name: "persistentvolumes", kind: "PersistentVolume", namespaced: false },
        { name: "events", kind: "Event", namespaced: true },
        { name: "configmaps", kind: "ConfigMap", namespaced: true },
    ],
    "storage.k8s.io/v1": [
        { name: "csidrivers", kind: "CSIDriver", namespaced: false },
        { name: "storageclasses", kind: "StorageClass", namespaced: false },
        { name: "csistoragecapacities", kind: "CSIStorageCapacity", namespaced: true },
    ],
    "coordination.k8s.io/v1": [{ name: "leases", kind: "Lease", namespaced: true }],
    "events.k8s.io/v1": [{ name: "events", kind: "Event", namespaced: true }],
    "topolvm.io/v1": [{ name: "logicalvolumes", kind: "LogicalVolume", namespaced: false }],
    "topolvm.cybozu.com/v1": [{ name: "logicalvolumes", kind: "LogicalVolume", namespaced: false }],
};

const verbs = ["create", "delete", "get", "list", "patch", "update", "watch"];

function resourceList(groupVersion: string) {
    return {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion,
        resources: served[groupVersion].map((r) => ({ name: r.name, singularName: "", namespaced: r.namespaced, kind: r.kind, verbs })),
    };
}

function groupList() {
    const groups = Object.keys(served)
        .filter((gv) => gv.includes("/"))
        .map((gv) => {
            const [name, version] = gv.split("/");
            const v = { groupVersion: gv, version };
            return { name, versions: [v], preferredVersion: v };
        });
    return { kind: "APIGroupList", apiVersion: "v1", groups };
}

/** /api/v1/..., /apis/<g>/<v>/...: the group/version and what follows it. */
function split(pathname: string): { gv: string; rest: string[] } | undefined {
    const parts = pathname.split("/").filter(Boolean);
    if (parts[0] === "api" && parts[1] === "v1") {
        return { gv: "v1", rest: parts.slice(2) };
    }
    if (parts[0] === "apis" && parts.length >= 3) {
        return { gv: `${parts[1]}/${parts[2]}`, rest: parts.slice(3) };
    }
    return undefined;
}

export interface ApiStandIn {
    /** The unix socket it listens on (podNetwork forwards a pod's 127.0.0.1:<port> to it). */
    socket: string;
    /** "METHOD path[?watch]" of every request so far. */
    requests: string[];
    /** Every write with its JSON body (protobuf bodies as undefined). */
    writes: Array<{ method: string; path: string; body: any }>;
    close(): Promise<void>;
}

/** An object as the stand-in serves it: apiVersion, kind and metadata.name at least. */
export type ServedObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; [k: string]: unknown }; [k: string]: unknown };

export function startApiStandIn(socket: string, objects: ServedObject[] = []): Promise<ApiStandIn> {
    const requests: string[] = [];
    const writes: ApiStandIn["writes"] = [];
    const withVersion = (o: ServedObject) => ({ ...o, metadata: { resourceVersion: "1", uid: `00000000-0000-0000-0000-${o.metadata.name.length.toString().padStart(12, "0")}`, ...o.metadata } });
    const objectsOf = (gv: string, kind: string, namespace?: string) =>
        objects.filter((o) => o.apiVersion === gv && o.kind === kind && (!namespace || o.metadata.namespace === namespace)).map(withVersion);
    const watches = new Set<http.ServerResponse>();
    const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://stand-in");
        requests.push(`${req.method} ${url.pathname}${url.searchParams.get("watch") === "true" ? "?watch" : ""}`);
        const json = (code: number, body: unknown) => {
            res.writeHead(code, { "Content-Type": "application/json" });
            res.end(JSON.stringify(body));
        };
        if (url.pathname === "/version") {
            return json(200, { major: "1", minor: "35", gitVersion: "v1.35.0" });
        }
        if (url.pathname === "/api") {
            return json(200, { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] });
        }
        if (url.pathname === "/apis") {
            return json(200, groupList());
        }
        const at = split(url.pathname);
        if (!at || !served[at.gv]) {
            return json(404, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 });
        }
        if (at.rest.length === 0) {
            return json(200, resourceList(at.gv));
        }
        // namespaces/<ns>/<resource>[/<name>] or <resource>[/<name>]
        const namespace = at.rest[0] === "namespaces" && at.rest.length >= 3 ? at.rest[1] : undefined;
        const rest = namespace ? at.rest.slice(2) : at.rest;
        const resource = served[at.gv].find((r) => r.name === rest[0]);
        if (!resource) {
            return json(404, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 });
        }
        if (req.method === "GET" && url.searchParams.get("watch") === "true") {
            res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
            // A streaming list (client-go's WatchList): the objects, then the bookmark that ends it.
            if (url.searchParams.get("sendInitialEvents") === "true") {
                for (const o of objectsOf(at.gv, resource.kind, namespace)) {
                    res.write(`${JSON.stringify({ type: "ADDED", object: o })}\n`);
                }
                const end = { resourceVersion: "1", annotations: { "k8s.io/initial-events-end": "true" } };
                res.write(`${JSON.stringify({ type: "BOOKMARK", object: { kind: resource.kind, apiVersion: at.gv, metadata: end } })}\n`);
            }
            watches.add(res);
            res.once("close", () => watches.delete(res));
            return;
        }
        if (req.method === "GET" && rest.length === 1) {
            return json(200, { kind: `${resource.kind}List`, apiVersion: at.gv, metadata: { resourceVersion: "1" }, items: objectsOf(at.gv, resource.kind, namespace) });
        }
        const named = objectsOf(at.gv, resource.kind, namespace).find((o) => o.metadata.name === rest[1]);
        if (req.method === "GET" && named) {
            return json(200, named);
        }
        if (req.method === "GET") {
            return json(404, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404, details: { name: rest[1], kind: resource.name } });
        }
        let body = "";
        req.on("data", (d) => (body += d));
        req.on("end", () => {
            // Writes come as JSON or protobuf (events); a protobuf one is answered with its kind only.
            const isJson = (req.headers["content-type"] ?? "").includes("json");
            const parsed = isJson && body ? JSON.parse(body) : undefined;
            writes.push({ method: req.method ?? "", path: url.pathname, body: parsed });
            // The answer is the object as written (a patch answered as if it were the whole object).
            const obj = { apiVersion: at.gv, kind: resource.kind, ...parsed };
            obj.metadata = { name: rest[1], ...obj.metadata, resourceVersion: "1", uid: "00000000-0000-0000-0000-000000000001" };
            json(req.method === "POST" ? 201 : 200, obj);
        });
    });
    return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(socket, () =>
            resolve({
                socket,
                requests,
                writes,
                close: () =>
                    new Promise<void>((done) => {
                        for (const w of watches) {
                            w.destroy();
                        }
                        server.close(() => done());
                    }),
            }),
        );
    });
}
