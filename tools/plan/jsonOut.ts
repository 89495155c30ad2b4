import { once } from "events";
import { Writable } from "stream";

/** Output is written in chunks of about this size, waiting for the stream to drain. */
const chunkChars = 1 << 20;

/** JSON.stringify(value, null, 2) as it reads nested `depth` levels deep. */
function nested(value: unknown, depth: number): string {
    return JSON.stringify(value, null, 2).replace(/\n/g, `\n${"  ".repeat(depth)}`);
}

/**
 * Writes `{ <key>: [items...], <other keys>... }` exactly as JSON.stringify(doc, null, 2) would,
 * one list item at a time: a plan of 5000 nodes is hundreds of MB of JSON, more than one string
 * may hold. Items are taken out of the list as they are written, so their memory can go.
 */
export async function writeJsonStreaming(out: Writable, listKey: string, list: unknown[], rest: Record<string, unknown>): Promise<void> {
    let buffer = "";
    const emit = async (text: string) => {
        buffer += text;
        if (buffer.length >= chunkChars) {
            const chunk = buffer;
            buffer = "";
            if (!out.write(chunk)) {
                await once(out, "drain");
            }
        }
    };
    await emit(`{\n  ${JSON.stringify(listKey)}: ${list.length === 0 ? "[]" : "["}`);
    for (let i = 0; i < list.length; i++) {
        await emit(`${i === 0 ? "" : ","}\n    ${nested(list[i], 2)}`);
        list[i] = undefined;
    }
    await emit(list.length === 0 ? "" : "\n  ]");
    for (const [key, value] of Object.entries(rest)) {
        if (value !== undefined) {
            await emit(`,\n  ${JSON.stringify(key)}: ${nested(value, 1)}`);
        }
    }
    await emit("\n}\n");
    if (!out.write(buffer)) {
        await once(out, "drain");
    }
}
