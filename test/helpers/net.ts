import * as net from "node:net";

/** A TCP port free on 127.0.0.1 right now (the OS picks it; the caller binds it soon after). */
export function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const srv = net.createServer();
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => {
            const addr = srv.address();
            srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no free port on 127.0.0.1"))));
        });
    });
}
