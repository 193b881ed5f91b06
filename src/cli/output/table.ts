// Tables for the terminal: columns padded to their widest cell, then coloured, so escape codes never
// count towards a width. Without colour (not a terminal, NO_COLOR) the text is the same, byte for byte.
import type { Colors } from "./terminal.ts";

export type Paint = (text: string, row: number, column: number) => string;

export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], options: { colors?: Colors; paint?: Paint } = {}): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[], paint: (text: string, column: number) => string) =>
    cells
      .map((c, i) => {
        const padded = i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0);
        // Only the text is painted: the padding stays outside the escape codes.
        return c ? paint(c, i) + padded.slice(c.length) : padded;
      })
      .join("  ")
      .trimEnd();
  const bold = options.colors?.bold ?? ((s: string) => s);
  const out = [line(header, (c) => bold(c))];
  for (const [r, row] of rows.entries()) out.push(line(row, (c, i) => options.paint?.(c, r, i) ?? c));
  return out.join("\n");
}

/** A result word in the colour of what it means: green done, yellow partly, red failed; dim for nothing to do. */
export function paintOutcome(colors: Colors, word: string): string {
  if (/^(ok|done|completed)\b/i.test(word)) return colors.green(word);
  if (/^(failed|error|stopped)\b/i.test(word)) return colors.red(word);
  if (/^(degraded|incomplete|deferred|partial|retrying|interrupted|busy)\b/i.test(word)) return colors.yellow(word);
  if (/^(skipped|not_downloadable)\b/i.test(word)) return colors.dim(word);
  return word;
}
