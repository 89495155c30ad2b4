import { closest, distance } from "fastest-levenshtein";

/** `; did you mean "hosts"?` when a known word is close enough to be the intended one. */
export function didYouMean(word: string, known: readonly string[]): string {
    if (known.length === 0) {
        return "";
    }
    const best = closest(word, known as string[]);
    const limit = Math.max(2, Math.floor(best.length / 3));
    return distance(word.toLowerCase(), best.toLowerCase()) <= limit ? `; did you mean "${best}"?` : "";
}
