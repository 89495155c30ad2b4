import { containersOf, describe, PlannedResource, podSpecOf, SECRET_MARKER, str } from "../model";

export interface ImageRef {
    /** Everything before the tag and digest: [registry[:port]/]path. */
    repository: string;
    tag?: string;
    digest?: string;
}

const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,}$/;

/** Splits an image reference; a ':' only starts a tag after the last '/' (registry ports stay). */
export function parseImage(image: string): ImageRef {
    const at = image.indexOf("@");
    const digest = at >= 0 ? image.slice(at + 1) : undefined;
    const rest = at >= 0 ? image.slice(0, at) : image;
    const colon = rest.lastIndexOf(":");
    const tagged = colon > rest.lastIndexOf("/");
    return {
        repository: tagged ? rest.slice(0, colon) : rest,
        tag: tagged ? rest.slice(colon + 1) : undefined,
        digest,
    };
}

/** Why an image is not pinned, or undefined when it is (a valid digest, or a tag other than latest). */
export function unpinnedReason(image: string): string | undefined {
    const ref = parseImage(image);
    if (ref.digest !== undefined && DIGEST.test(ref.digest)) {
        return undefined;
    }
    if (ref.digest !== undefined) {
        return `has a malformed digest '@${ref.digest}'`;
    }
    if (ref.tag === undefined || ref.tag === "") {
        return "has no tag, so Kubernetes pulls ':latest'";
    }
    if (ref.tag.toLowerCase() === "latest") {
        return "is pinned to ':latest'";
    }
    return undefined;
}

/** storage-image-pinned: every container image carries a tag other than latest, or a digest. */
export function checkImagePinned(resource: PlannedResource): string[] {
    const messages: string[] = [];
    for (const c of containersOf(podSpecOf(resource))) {
        const image = str(c.spec.image);
        if (image === undefined || image === "" || image === SECRET_MARKER) {
            continue; // not known yet, or missing (the API server rejects that by itself)
        }
        const reason = unpinnedReason(image);
        if (reason === undefined) {
            continue;
        }
        const repo = parseImage(image).repository;
        messages.push(
            `${describe(resource)} ${c.role} '${c.name}' image '${image}' ${reason}: a moving tag lets nodes ` +
                "run different builds, and neither a rollback nor an air-gapped mirror can reproduce what ran. " +
                `Pin a release tag (${repo}:<version>) or a digest (${repo}@sha256:<digest>).`,
        );
    }
    return messages;
}
