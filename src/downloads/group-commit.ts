// Grouped durability for stored files: transfers that finish while earlier batches are being made durable go
// together — every file fsynced, renamed to its content address and every folder that gained a name fsynced
// (Archive.placeWritten; a bucket's upload is durable when it returns), then all their rows written by one
// statement (DownloadRepository.markDownloadsStored) — so a batch pays one round trip and one commit instead of one
// per file, and its fsyncs overlap. A waiter is answered only after its row committed. The order is the guarantee:
// no row ever points at bytes that a crash could lose. A crash (or a failure) between the placing and the commit
// leaves files at their content address with no row: the row is still wanted. An original (paid for from the weekly
// allowance) is listed, before its batch's files are placed, in one journal per batch in the archive's .partial folder,
// fsynced with its folder (placed-journal.ts) and removed after the commit: a process killed in between leaves it,
// and the next attempt, however much later, records the row from the placed file with no second /deviation/download
// (placed-originals.ts). Any other file's next attempt stores the same bytes at the same address and adopts them
// (Archive's dedupe); a file whose row never comes back is what `dvault verify` reports as orphaned
// (docs/RELIABILITY.md#grouped-durability).
//
// No timer: a file that finds fewer than maxInFlight batches under way starts one at once (a lone download waits for
// nothing, and a batch being committed never holds up the next file's fsync), and files that arrive while that many
// are under way form the next one, up to maxFiles. So files group when the store is the bottleneck (a slow disk's
// flushes, a busy database), and otherwise go as they come.
import type { DownloadRepository, HeldBefore, StoredFile as StoredRow } from "../db/download.repository.ts";
import type { Archive, StoredFile, WrittenFile } from "../storage/archive.ts";
import type { PlacedJournals } from "./placed-journal.ts";
import type { PlacedOriginal } from "./placed-originals.ts";

/** Files per batch at most: one transaction's worth of rows, and a bound on how long the last waiter waits. */
const DEFAULT_MAX_FILES = 32;
/**
 * Batches under way at once: as many as transfers run by default (DVAULT_DOWNLOAD_CONCURRENCY), so a file waits for
 * a batch only when the store is behind. Two were measured slower than a file at a time on a fast disk, whose
 * separate fsyncs the filesystem already overlaps (docs/PERFORMANCE.md#store-batch).
 */
const DEFAULT_MAX_IN_FLIGHT = 4;

export type GroupCommitOptions = {
  archive: Archive;
  repo: Pick<DownloadRepository, "markDownloadsStored">;
  /** 1 (with maxInFlight unbounded): every file on its own (fsync, rename, folder fsync, its own commit), as before grouping. */
  maxFiles?: number | undefined;
  /** Batches under way at once (default 4). */
  maxInFlight?: number | undefined;
  /** Where a batch's originals are listed before they are placed (placed-journal.ts); none when not given. */
  journal?: Pick<PlacedJournals, "keep" | "settle"> | undefined;
  /** Test-only: runs after a batch's files are durable and placed, before their rows commit (a throw = a crash there). */
  beforeRowsCommit?: ((files: readonly StoredFile[]) => Promise<void>) | undefined;
};

export type GroupStored = { stored: StoredFile; held: HeldBefore };

/** A batch's journal and what it lists, by the batch's files (undefined for a file not listed). */
type Journal = { name: string; records: readonly (PlacedOriginal | undefined)[] };

type Waiter = {
  written: WrittenFile;
  row: (stored: StoredFile) => StoredRow;
  placed: ((stored: StoredFile) => PlacedOriginal) | undefined;
  resolve: (done: GroupStored) => void;
  reject: (err: unknown) => void;
};

export class GroupCommit {
  private pending: Waiter[] = [];
  private inFlight = 0;
  private readonly maxFiles: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: GroupCommitOptions) {
    this.maxFiles = Math.max(1, options.maxFiles ?? DEFAULT_MAX_FILES);
    this.maxInFlight = Math.max(1, options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
  }

  /**
   * Makes `written` durable, places it and commits the row `row` builds for it, with whatever else is waiting.
   * Resolves once the row is committed; rejects when the file could not be placed (the partial file stays) or
   * its row could not be written (the file stays at its address, for the next attempt to adopt). `placed`, for an
   * original, builds what the batch's journal keeps of it (from where it is placed) until its row is committed.
   */
  store(written: WrittenFile, row: (stored: StoredFile) => StoredRow, placed?: (stored: StoredFile) => PlacedOriginal): Promise<GroupStored> {
    return new Promise<GroupStored>((resolve, reject) => {
      this.pending.push({ written, row, placed, resolve, reject });
      this.pump();
    });
  }

  /** Starts batches of what is waiting while fewer than maxInFlight are under way. */
  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
      this.inFlight++;
      void this.flush(this.pending.splice(0, this.maxFiles)).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** One batch: never throws, every waiter settled. */
  private async flush(batch: Waiter[]): Promise<void> {
    // Its originals are journalled at the addresses they are about to take, before any is placed: a process killed
    // once one is placed leaves its line, whenever that is.
    let journal = await this.keepJournal(() => batch.map((w) => w.placed?.(this.options.archive.addressOf(w.written))));
    const placed = await this.options.archive
      .placeWritten(batch.map((w) => w.written))
      .catch((err: unknown) => batch.map(() => ({ status: "rejected" as const, reason: err })));
    const ready: { waiter: Waiter; stored: StoredFile; row: StoredRow }[] = [];
    for (const [i, waiter] of batch.entries()) {
      const p = placed[i];
      if (p?.status !== "fulfilled") {
        waiter.reject(p?.reason);
        continue;
      }
      try {
        ready.push({ waiter, stored: p.value, row: waiter.row(p.value) });
      } catch (err) {
        waiter.reject(err);
      }
    }
    try {
      journal = await this.rekeepWherePlaced(journal, ready);
      if (ready.length === 0) return;
      await this.options.beforeRowsCommit?.(ready.map((r) => r.stored));
      const held = await this.commitRows(ready.map((r) => r.row));
      if (journal) this.options.journal?.settle(journal.name, journal.records.filter((r, i) => r !== undefined && !isHeld(held[i])) as PlacedOriginal[]);
      ready.forEach(({ waiter, stored }, i) => {
        const h = held[i];
        if (isHeld(h)) waiter.resolve({ stored, held: h });
        else waiter.reject(h ?? new Error("no answer for a stored row"));
      });
    } catch (err) {
      for (const { waiter } of ready) waiter.reject(err);
    }
  }

  /**
   * The records `build` makes (an original's, or undefined) listed in one journal, durable; undefined when none is
   * listed. A journal that cannot be made or written leaves the batch as it was before journals (a crash before the
   * commit then costs those originals again), rather than failing files that can be placed.
   */
  private async keepJournal(build: () => readonly (PlacedOriginal | undefined)[]): Promise<Journal | undefined> {
    const { journal } = this.options;
    if (!journal) return undefined;
    try {
      const records = build();
      const listed = records.filter((r) => r !== undefined);
      return listed.length === 0 ? undefined : { name: await journal.keep(listed), records };
    } catch {
      return undefined;
    }
  }

  /**
   * The journal of the batch's placed files, by their place in `ready`: the one written before the placing when each
   * took the address it listed; else (one was not placed, or its bytes were stored already under another extension)
   * a new one of where they are, and the first removed.
   */
  private async rekeepWherePlaced(journal: Journal | undefined, ready: readonly { waiter: Waiter; stored: StoredFile }[]): Promise<Journal | undefined> {
    if (!journal) return undefined;
    const records = ready.map(({ waiter, stored }) => waiter.placed?.(stored));
    const listed = journal.records.filter((r) => r !== undefined);
    const same = records.filter((r) => r !== undefined);
    if (same.length === listed.length && same.every((r, i) => r.deviationid === listed[i]?.deviationid && r.row.path === listed[i]?.row.path)) {
      return { name: journal.name, records };
    }
    // A new journal that cannot be written leaves the first as it is, for the partial sweep (partial-sweep.ts).
    const again = same.length > 0 ? await this.keepJournal(() => records) : undefined;
    if (again || same.length === 0) this.options.journal?.settle(journal.name, []);
    return again;
  }

  /**
   * The batch's rows in one statement; when it fails, each row on its own, so one bad row fails only its own file.
   * A failure may come after the server committed (the connection lost at the commit): the rows are then written
   * again, which the statement recognises and counts once (markStored, src/db/download-files.ts). A lone file's row
   * is tried again too: otherwise a file stored and committed would be recorded as a failed attempt, and fetched again.
   */
  private async commitRows(rows: StoredRow[]): Promise<(HeldBefore | Error)[]> {
    const { repo } = this.options;
    try {
      return await repo.markDownloadsStored(rows);
    } catch {
      return Promise.all(
        rows.map((row) =>
          repo.markDownloadsStored([row]).then(
            (r) => r[0] ?? new Error("no answer for a stored row"),
            (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
          ),
        ),
      );
    }
  }
}

function isHeld(h: HeldBefore | Error | undefined): h is HeldBefore {
  return h !== undefined && !(h instanceof Error);
}
