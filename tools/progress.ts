/**
 * Progress of a long run (a plan in pieces, discover across many nodes) on stderr, only when
 * stderr is a terminal: stdout, and stderr in a pipe or a CI log, stay exactly as they were.
 */
export type Progress = (done: number, total: number) => void;

interface Terminal {
    isTTY?: boolean;
    write(text: string): unknown;
}

/**
 * `what: done/total` rewritten in place at most once a second, and the last count with a line
 * end; undefined when `stream` is not a terminal. `now` is for tests.
 */
export function terminalProgress(what: string, stream: Terminal = process.stderr, now: () => number = Date.now): Progress | undefined {
    if (!stream.isTTY) {
        return undefined;
    }
    let last: number | undefined;
    return (done, total) => {
        const t = now();
        if (done < total && last !== undefined && t - last < 1000) {
            return;
        }
        last = t;
        stream.write(`\r${what}: ${done}/${total}${done >= total ? "\n" : ""}`);
    };
}
