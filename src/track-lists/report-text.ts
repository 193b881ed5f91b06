// What `dvault track import` prints: one summary line, then what was skipped and what could not be resolved,
// each with where in the file it stood; the lists are in --json (the first LISTED_MAX of each kind).
import { shownInTerminal as shown } from "../text/controls.ts";
import { LISTED_MAX, type ImportReport } from "./import-list.ts";

/** Lines listed per part of the text report. */
const LISTED = 30;

export function formatImportReport(file: string, r: ImportReport): string {
  const verb = r.dryRun ? "would add" : "added";
  const lines = [
    `${shown(file)} (${r.format}): ${verb} ${r.counts.added}, skipped ${r.counts.skipped}, could not resolve ${r.counts.unresolved}${r.dryRun ? " (dry run: nothing changed)" : ""}`,
  ];
  part(lines, `${verb}`, r.added, r.counts.added, (a) => `${a.username}${accountNote(r, a.account)}`);
  part(lines, "skipped", r.skipped, r.counts.skipped, (s) => `${s.username}: ${s.reason} (${shown(s.where)})`);
  part(lines, "unresolved", r.unresolved, r.counts.unresolved, (u) => `${shown(u.where)}: ${shown(u.input)}: ${shown(u.reason)}`);
  if (!r.resolved && r.counts.added > 0) lines.push("  (names were not checked with the service: --resolve asks it and leaves out users it does not know)");
  return lines.join("\n");
}

function accountNote(r: ImportReport, account: string): string {
  const several = new Set(r.added.map((a) => a.account)).size > 1;
  return several ? ` (${account})` : "";
}

function part<T>(lines: string[], label: string, items: readonly T[], count: number, show: (item: T) => string): void {
  for (const item of items.slice(0, LISTED)) lines.push(`  ${label.padEnd(10)} ${show(item)}`);
  if (count <= LISTED) return;
  const json = count > LISTED_MAX ? `--json lists the first ${LISTED_MAX}` : "--json lists every one";
  lines.push(`  … and ${count - LISTED} more ${label} (${json})`);
}
