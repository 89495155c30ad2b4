import { StackModel } from "../components/config/model";
import { CommonOptions, commonUsage, parseCommonArgs, positiveInt, runCli } from "./discover/args";
import { collectFromNodes, collectInventories, needsSudo } from "./discover/collect";
import { iscsiStatusCommand } from "../components/iscsi/commands";
import { NodeReport } from "./discover/inventory";
import { Day2ConfigError, Day2Stack, loadDay2Stack } from "./discover/stack";
import { keySourceProblem } from "./discover/ssh";
import { CephHealth, CephOsd, ClusterFacts, Kubectl, kubectlFor, readCephHealth, readCephOsds, readCluster } from "./status/cluster";
import { StatusFacts, StorageStatus, evaluateStatus, exitCodeOf } from "./status/evaluate";
import { parseIscsiFacts } from "./status/iscsi";
import { jsonText } from "../components/config/printable";
import { renderStatus } from "./status/render";

const usage = `usage: npm run status -- <stack|file> [--identity FILE] [--accept-unpinned] [--concurrency N] [--timeout SECONDS] [--json] [--watch SECONDS] | --version | --help

Capacity, health and drift of every storage of the stack, from the cluster (kubectl with the
stack's kubernetes:context, else KUBECONFIG's current context) and read-only SSH to its nodes.

  <stack|file>       a stack name (stacks/Pulumi.<stack>.yaml) or the path of a stack file
  --watch SECONDS    repeat every SECONDS until interrupted (with --json: one object a line)
${commonUsage}

Exit codes: 0 healthy, 1 degraded or drifted, 2 the cluster or a node could not be reached,
3 usage or config error (nothing contacted). With --watch, the code of the last round.`;

interface Options extends CommonOptions {
    watch?: number;
}

function parseArgs(argv: string[]): Options {
    let watch: number | undefined;
    const common = parseCommonArgs(argv, { "--watch": { value: true, set: (v) => (watch = positiveInt("--watch", v)) } });
    return { ...common, watch };
}

/** Nodes that hold devices of an lvm or cephfs storage: the ones status reads over SSH. */
function deviceNodes(model: StackModel): string[] {
    return [...new Set([...model.lvm, ...model.cephfs].flatMap((s) => Object.keys(s.hosts)))];
}

/** Every node status reads over SSH: device nodes and iSCSI initiators. */
function sshNodes(model: StackModel): string[] {
    return [...new Set([...deviceNodes(model), ...model.iscsi.flatMap((s) => s.initiators)])];
}

/** iscsi-status.sh on every initiator of every iSCSI storage. */
async function readIscsi(model: StackModel, opts: Options): Promise<NonNullable<StatusFacts["iscsi"]>> {
    const items = model.iscsi.flatMap((storage) => storage.initiators.map((node) => ({ node, storage })));
    const answers = await collectFromNodes(model, items, opts.ssh, opts.concurrency, ({ node, storage }) => iscsiStatusCommand({ storage: storage.name, portals: storage.portals, iqn: storage.iqn, lun: storage.lun }, needsSudo(model, node)), parseIscsiFacts);
    const facts: NonNullable<StatusFacts["iscsi"]> = new Map(model.iscsi.map((s) => [s.name, new Map()]));
    for (const a of answers) {
        facts.get(a.item.storage.name)!.set(a.item.node, "error" in a ? { error: a.error } : a.value);
    }
    return facts;
}

/** A Ready admin pod of the CephFS storage (it holds the admin key): where `ceph status` runs. */
function adminPodOf(cluster: ClusterFacts, storage: string): string | undefined {
    return cluster.pods.find((p) => p.ready && p.labels["app.kubernetes.io/component"] === "ceph-admin" && p.labels["storage.zcloud.io/storage"] === storage)?.name;
}

async function round(stack: Day2Stack, opts: Options, kubectl: Kubectl): Promise<StorageStatus[]> {
    const { model } = stack;
    const [cluster, answers, iscsi] = await Promise.all([readCluster(kubectl, model.namespace), collectInventories(model, deviceNodes(model), opts.ssh, opts.concurrency, false), readIscsi(model, opts)]);
    const nodes = new Map<string, NodeReport | { error: string }>(answers.map((a) => [a.node, "error" in a ? { error: a.error } : a.report]));
    const ceph = new Map<string, CephHealth | { error: string }>();
    const cephOsds = new Map<string, CephOsd[] | { error: string }>();
    for (const s of model.cephfs) {
        const pod = "error" in cluster ? undefined : adminPodOf(cluster, s.name);
        ceph.set(s.name, "error" in cluster ? { error: "cluster not reached" } : await readCephHealth(kubectl, model.namespace, pod));
        cephOsds.set(s.name, "error" in cluster ? { error: "cluster not reached" } : await readCephOsds(kubectl, model.namespace, pod));
    }
    return evaluateStatus({ model, cluster, nodes, ceph, cephOsds, iscsi });
}

function print(storages: StorageStatus[], json: boolean, watching: boolean): void {
    if (json) {
        console.log(jsonText({ storages }, watching ? undefined : 2));
        return;
    }
    if (watching) {
        console.log(`--- ${new Date().toISOString()}`);
    }
    console.log(renderStatus(storages).trimEnd());
    const code = exitCodeOf(storages);
    console.log(`\n${["healthy", "degraded or drifted", "unreachable"][code]} (exit ${code})`);
}

async function main(): Promise<number> {
    const opts = parseArgs(process.argv.slice(2));
    const stack = loadDay2Stack(opts.target);
    if (sshNodes(stack.model).length > 0) {
        const keyProblem = keySourceProblem(opts.ssh, process.env);
        if (keyProblem) {
            throw new Day2ConfigError(keyProblem);
        }
    }
    const kubectl = kubectlFor(stack.kubeContext, opts.ssh.connectTimeout);
    for (;;) {
        const storages = await round(stack, opts, kubectl);
        print(storages, opts.json, opts.watch !== undefined);
        if (opts.watch === undefined) {
            return exitCodeOf(storages);
        }
        process.exitCode = exitCodeOf(storages);
        await new Promise((r) => setTimeout(r, opts.watch! * 1000));
    }
}

runCli(main, usage);
