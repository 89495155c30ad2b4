/** Generated LVM stacks for the benchmarks: N made-up nodes, each with its own by-id devices. */

export const benchNodeNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `node${String(i + 1).padStart(4, "0")}`);

export const benchHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchBenchBenchBenchBenchBenchBenchBench";

/** `zcloud-storage:` values (without prefix and without the SSH key): one LVM storage over the nodes. */
export function generatedLvmValues(nodes: number, devicesPerNode = 4): Record<string, unknown> {
    const names = benchNodeNames(nodes);
    return {
        ssh: { user: "root", hostKeys: Object.fromEntries(names.map((n) => [n, benchHostKey])) },
        nodes: Object.fromEntries(names.map((n, i) => [n, { address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }])),
        lvm: [
            {
                name: "local-fast",
                default: true,
                hosts: Object.fromEntries(
                    names.map((n, i) => [n, Array.from({ length: devicesPerNode }, (_, d) => `/dev/disk/by-id/wwn-0x5000c500${String(i * devicesPerNode + d).padStart(8, "0")}`)]),
                ),
            },
        ],
    };
}
