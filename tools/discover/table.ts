import { printable } from "../../components/config/printable";

/**
 * Left-aligned text columns for the people-facing output of the day-2 tools. Cells hold what
 * nodes report: each is printed with its control characters escaped (one line, nothing a terminal acts on).
 */
export function renderTable(header: string[], rawRows: string[][], indent = "  "): string {
    const rows = rawRows.map((r) => r.map(printable));
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (cells: string[]) =>
        indent +
        cells
            .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
            .join("  ")
            .trimEnd();
    return [line(header), ...rows.map(line)].join("\n");
}
