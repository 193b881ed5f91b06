// The journal of a batch's placed originals (src/downloads/group-commit.ts): one file in the archive's .partial folder,
// a line per original the batch placed (what src/downloads/placed-originals.ts keeps of it: deviation, account, the row,
// never a signed URL), fsynced with its folder before the batch's files are placed (at the addresses they take) and
// removed after its rows commit. A process killed between the placing and the commit (SIGKILL, power lost, the OOM
// killer), however early, leaves it behind, and the next attempt at
// one of its originals, however much later, records the row from the placed file instead of paying for it again
// (PlacedOriginals.recall). One file and one fsync per batch, not per file (docs/RELIABILITY.md#grouped-durability).
// Its lines are kept as text here; placed-originals.ts checks each against its schema before trusting it.
import { randomBytes } from "node:crypto";
import type { Archive } from "../storage/archive.ts";

/** A journal's name in .partial/: never a partial original's, a written partial file's or a note's (storage/layout.ts). */
const JOURNAL_NAME = /^placed-batch-[0-9a-f]{16}\.jsonl$/;

export function isPlacedJournal(name: string): boolean {
  return JOURNAL_NAME.test(name);
}

/** The deviation a journal's line is about, undefined when the line is not one. */
export function journalLineDeviation(line: string): string | undefined {
  try {
    const id = (JSON.parse(line) as { deviationid?: unknown }).deviationid;
    return typeof id === "string" && id.length > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** A journal's text: one line per entry (JSON lines). */
function linesOf(entries: readonly string[]): string {
  return `${entries.join("\n")}\n`;
}

export class PlacedJournals {
  constructor(private readonly archive: Pick<Archive, "keepJournal" | "readJournals" | "replaceJournal">) {}

  /** Writes one journal of `records` (fsynced, its folder too) and returns its name, for settle(). */
  async keep(records: readonly object[]): Promise<string> {
    const name = `placed-batch-${randomBytes(8).toString("hex")}.jsonl`;
    await this.archive.keepJournal(name, linesOf(records.map((r) => JSON.stringify(r))));
    return name;
  }

  /**
   * The batch's commit is over: the journal keeps only `remaining` (the records whose row was not written), and goes
   * when none is left. Not fsynced: a crash that undoes it leaves records whose rows are written, which recall()
   * checks against the file and the next sweep removes (src/downloads/partial-sweep.ts); so does a failure here, which
   * must not fail rows already committed.
   */
  settle(name: string, remaining: readonly object[]): void {
    try {
      this.rewrite(
        name,
        remaining.map((r) => JSON.stringify(r)),
      );
    } catch {
      // Left as it was: see above.
    }
  }

  /** The journal `name` holding only `lines` now, or gone when none is left (not fsynced: see settle). */
  private rewrite(name: string, lines: readonly string[]): void {
    this.archive.replaceJournal(name, lines.length > 0 ? linesOf(lines) : undefined);
  }

  /** The lines about `deviationid` in every journal of the partial folder. */
  find(deviationid: string): string[] {
    return this.archive
      .readJournals(isPlacedJournal)
      .flatMap((j) => j.text.split("\n"))
      .filter((line) => journalLineDeviation(line) === deviationid);
  }

  /** Its row is written, or its file gone: its lines leave every journal, and a journal left empty goes. */
  drop(deviationid: string): void {
    for (const { name, text } of this.archive.readJournals(isPlacedJournal)) {
      const lines = text.split("\n").filter((line) => line.length > 0);
      const left = lines.filter((line) => journalLineDeviation(line) !== deviationid);
      if (left.length < lines.length) this.rewrite(name, left);
    }
  }
}
