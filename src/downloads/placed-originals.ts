// Originals placed in the archive whose row could not be written (the database refusing writes, away, or failing the
// commit): what the row needs, kept until it is written, so that no later attempt — minutes or days later, in this
// process or another — calls /deviation/download again for bytes already paid for and placed. The paid answer
// (paid-downloads.ts) does not cover this: it is kept 5 minutes, inside its signed URL's life, and a refusal can last
// hours. Kept in three places, each for a case the others miss: this process's memory (whatever else fails), a note on
// the archive folder's own disk (a restarted process; writable when the database is not, which on
// DVAULT_ENGINE=postgres is also the coordination store), and the coordination store without expiry (another host
// with no shared disk, on DVAULT_ENGINE=redis). Nothing here holds a signed URL (docs/RELIABILITY.md#grouped-durability).
import { z } from "zod";
import type { Coordinator } from "../coord/coordinator.ts";
import type { Archive } from "../storage/archive.ts";
import { errCode, originalRelPath } from "../storage/layout.ts";
import { PlacedJournals } from "./placed-journal.ts";

/** The row as the attempt that placed the file built it, less its id and time, which the row that takes it gives. */
const PlacedOriginalSchema = z
  .object({
    deviationid: z.string().min(1),
    accountId: z.number().int(),
    placedAt: z.string(),
    row: z.object({
      status: z.literal("done"),
      rendition: z.literal("original"),
      path: z.string().min(1),
      size: z.number().int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      mime: z.string().nullable(),
      width: z.number().nullable().optional(),
      height: z.number().nullable().optional(),
      etag: z.string().nullable().optional(),
      sourceFilename: z.string().nullable().optional(),
      sourceSize: z.number().nullable().optional(),
      isPartial: z.boolean().optional(),
      partialReason: z.string().nullable().optional(),
      bytes: z.number().nonnegative(),
      note: z.string().nullable().optional(),
    }),
  })
  // Read back from a disk or a store: its path is the content address of its sha256, never anywhere else.
  .refine((p) => new RegExp(`^${originalRelPath(p.row.sha256, "").replaceAll(".", "\\.")}[a-z0-9]{1,10}$`).test(p.row.path));
export type PlacedOriginal = z.infer<typeof PlacedOriginalSchema>;

/** Where the coordination store keeps them: one key per deviation under this prefix. */
export function placedOriginalsPrefix(prefix: string): string {
  return `${prefix}:downloads:placed:`;
}

/** The transfer key download-file.ts names an original's partial file with; the disk note sits beside it. */
function transferKey(deviationid: string): string {
  return `${deviationid}-original`;
}

/** This process's copies, by key: what carries the note when both the disk and the store refuse it. */
const heldHere = new Map<string, string>();

function parse(raw: string | undefined, deviationid: string): PlacedOriginal | undefined {
  if (raw === undefined) return undefined;
  try {
    const found = PlacedOriginalSchema.safeParse(JSON.parse(raw));
    return found.success && found.data.deviationid === deviationid ? found.data : undefined;
  } catch {
    return undefined;
  }
}

export class PlacedOriginals {
  constructor(
    private readonly coord: Coordinator,
    private readonly prefix: string,
    private readonly archive: Archive,
  ) {}

  private key(deviationid: string): string {
    return `${placedOriginalsPrefix(this.prefix)}${deviationid}`;
  }

  /**
   * Keeps `row` for the original of `deviationid`, placed at row.path. Each place is tried on its own: a store that
   * refuses too (it is the database on DVAULT_ENGINE=postgres) or a disk that does leaves the others.
   */
  async keep(placed: PlacedOriginal): Promise<void> {
    const raw = JSON.stringify(placed);
    heldHere.set(this.key(placed.deviationid), raw);
    await Promise.allSettled([this.archive.keepPlacedNote(transferKey(placed.deviationid), raw), this.coord.put(this.key(placed.deviationid), raw)]);
  }

  /**
   * The placed original of `deviationid` whose row is still to be written, when its file is still at its address
   * with its sha256 and size; undefined when none was kept, or its file is gone or changed (the note is then dropped:
   * the attempt fetches the file as it would have).
   */
  async recall(deviationid: string): Promise<PlacedOriginal | undefined> {
    const placed =
      parse(heldHere.get(this.key(deviationid)), deviationid) ??
      parse(this.archive.readPlacedNote(transferKey(deviationid)), deviationid) ??
      // A batch's journal left by a process killed before its rows committed (group-commit.ts).
      new PlacedJournals(this.archive)
        .find(deviationid)
        .map((line) => parse(line, deviationid))
        .find((p) => p !== undefined) ??
      parse(await this.coord.get(this.key(deviationid)), deviationid);
    if (!placed) return undefined;
    if (await this.stillThere(placed)) return placed;
    await this.forget(deviationid);
    return undefined;
  }

  private async stillThere(placed: PlacedOriginal): Promise<boolean> {
    try {
      const got = await this.archive.hashFile(placed.row.path);
      return got.sha256 === placed.row.sha256 && got.size === placed.row.size;
    } catch (err) {
      if (errCode(err) === "ENOENT") return false;
      throw err;
    }
  }

  /**
   * Removes from the coordination store the placed originals kept at least `minAgeMs` before `now` whose row
   * `settled` says is stored or given up, or gone: a row that was in fact committed (its answer lost) never comes back
   * for its key, which has no expiry (partial-sweep.ts, at a downloads host's start). Each is removed only as it was
   * read: one kept again meanwhile stays. A younger one may be an attempt's on its way; one not read as a placed
   * original is left as found. How many went.
   */
  async sweepSettledKeys({ settled, now, minAgeMs }: { settled: (deviationid: string) => Promise<boolean>; now: number; minAgeMs: number }): Promise<number> {
    const head = placedOriginalsPrefix(this.prefix);
    let removed = 0;
    for (const key of await this.coord.keysStartingWith(head)) {
      const deviationid = key.slice(head.length);
      const raw = await this.coord.get(key);
      const placed = parse(raw, deviationid);
      if (!placed || raw === undefined || now - Date.parse(placed.placedAt) < minAgeMs || !(await settled(deviationid))) continue;
      if (await this.coord.removeIfEquals(key, raw)) removed++;
    }
    return removed;
  }

  /** Its row is written (or its file is gone): forgotten everywhere. */
  async forget(deviationid: string): Promise<void> {
    heldHere.delete(this.key(deviationid));
    this.archive.dropPlacedNote(transferKey(deviationid));
    new PlacedJournals(this.archive).drop(deviationid);
    await this.coord.remove(this.key(deviationid));
  }
}
