/** Left-aligned text columns for the people-facing output of the day-2 tools. */
export function renderTable(header: string[], rows: string[][], indent = "  "): string {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (cells: string[]) =>
        indent +
        cells
            .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
            .join("  ")
            .trimEnd();
    return [line(header), ...rows.map(line)].join("\n");
}
