/**
 * `--version` of plan, discover and status: the package version, then everything this version
 * pins that a site fetches from outside (what an air-gapped site mirrors): every container image
 * the program deploys, by storage type, and the Pulumi packages, with the resource plugin each
 * makes `pulumi preview` download on its first run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { images } from "../components/images";

const projectRoot = path.resolve(__dirname, "..");

/** The storage type an image of components/images.ts serves, by its key's prefix. */
export function storageOfImage(key: string): string | undefined {
    const prefixes: Array<[string, string]> = [
        ["topolvm", "lvm"],
        ["nfs", "nfs"],
        ["ceph", "cephfs"],
        ["sanlock", "iscsi"],
    ];
    return prefixes.find(([p]) => key.startsWith(p))?.[1];
}

interface PackageJson {
    name: string;
    version: string;
    engines?: { node?: string };
    dependencies?: Record<string, string>;
    pulumi?: { resource?: boolean; name?: string; version?: string };
}

const readJson = (file: string): PackageJson => JSON.parse(fs.readFileSync(file, "utf8")) as PackageJson;

/** The installed package's `pulumi` field (a resource plugin's name and version), when it is installed. */
function installedPulumiField(dep: string, root: string): PackageJson["pulumi"] {
    const file = path.join(root, "node_modules", ...dep.split("/"), "package.json");
    return fs.existsSync(file) ? readJson(file).pulumi : undefined;
}

/** The lines `--version` prints (images with `imageRegistry` unset, as components/images.ts pins them). */
export function versionLines(root: string = projectRoot): string[] {
    const pkg = readJson(path.join(root, "package.json"));
    const byImage = new Map<string, Set<string>>();
    for (const [key, image] of Object.entries(images)) {
        const types = byImage.get(image) ?? new Set<string>();
        types.add(storageOfImage(key) ?? key);
        byImage.set(image, types);
    }
    const width = Math.max(...[...byImage.keys()].map((i) => i.length));
    const pulumiDeps = Object.entries(pkg.dependencies ?? {}).filter(([dep]) => dep.startsWith("@pulumi/"));
    return [
        `${pkg.name} ${pkg.version}`,
        `node ${pkg.engines?.node ?? "any"}`,
        "images (zcloud-storage:imageRegistry replaces the registry host, keeps path and tag):",
        ...[...byImage].map(([image, types]) => `  ${image.padEnd(width)}  ${[...types].join(", ")}`),
        "pulumi packages (pulumi preview downloads each resource plugin on its first run):",
        ...pulumiDeps.map(([dep, version]) => {
            const plugin = installedPulumiField(dep, root);
            return plugin?.resource && plugin.name ? `  ${dep} ${version}  plugin: resource ${plugin.name} v${plugin.version ?? version}` : `  ${dep} ${version}`;
        }),
    ];
}

export const versionText = (root?: string): string => versionLines(root).join("\n");
