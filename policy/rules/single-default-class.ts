import { dig, Finding, listText, obj, PlannedResource, str } from "../model";

export const STORAGE_CLASS_TYPE = "kubernetes:storage.k8s.io/v1:StorageClass";
const DEFAULT_ANNOTATIONS = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/** storage-single-default-class: at most one StorageClass is marked default. */
export function checkSingleDefaultClass(resources: PlannedResource[]): Finding[] {
    const defaults = resources.filter((r) => {
        if (r.type !== STORAGE_CLASS_TYPE) {
            return false;
        }
        const annotations = obj(dig(r.props, "metadata", "annotations")) ?? {};
        return DEFAULT_ANNOTATIONS.some((a) => str(annotations[a]) === "true");
    });
    if (defaults.length < 2) {
        return [];
    }
    const names = defaults.map((r) => `'${str(dig(r.props, "metadata", "name")) ?? r.name}'`);
    return [
        {
            urn: defaults[defaults.length - 1].urn,
            message:
                `StorageClasses ${listText(names)} are ${defaults.length === 2 ? "both" : "all"} marked default: a PersistentVolumeClaim without ` +
                "storageClassName then gets the newest of them, so where a volume lands depends on creation order. " +
                "Keep `default: true` on one storage only in the stack config.",
        },
    ];
}
