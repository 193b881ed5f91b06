// Partial files whose transfer will never resume here. With several download hosts and no shared disk, a host
// killed mid-file leaves its partial file behind while another host stores the file from scratch; nothing on
// the first host would ever resume it (docs/RELIABILITY.md#work-held-by-a-dead-process). At a downloads host's
// start, a partial original is removed once its row is stored or given up (done, not_downloadable) or gone,
// and only when it is old enough that no transfer of this folder can still be writing it. A partial file of a
// row still wanted stays: it is what a resume needs. A batch's journal of placed originals (placed-journal.ts) left by
// a process killed before its rows committed goes by the same rule once old: when every row it lists is stored or given
// up, or gone (one still wanted keeps it: its next attempt records the row from it). So does a placed original's note
// (`<deviationid>-original.part.placed.json`, placed-originals.ts) whose row was in fact committed, its answer lost:
// nothing asks for it again; and, by the time written in it, its key in the coordination store, which has no expiry.
// A sweep rather than an expiry for the key: a refusal may outlast any expiry (a read-only database waits for a
// person), and on DVAULT_ENGINE=redis with no shared disk the key is another host's only copy, which an expiry would
// drop blindly and a second paid /deviation/download replace.
// A partial file written whole and then renamed (Archive.storeBytes's `bytes-`: a journal's or a literature's HTML;
// Archive.adoptFile's `adopt-`: a file an import copies or hard-links in; the local blob store's `blob-`: a thumbnail, a readable index, an object `dvault storage migrate` copies), and the
// temp file an object is copied through (`migrate-`, `copy-`: src/storage/migrate-store.ts, blob-transfer.ts), is never
// resumed: a process killed between its write and its removal leaves it. The next start (a worker's, a `--once` run's)
// removes it once its writer, named in it, is proven dead (src/queue/holder.ts's writerHere), or once it is old
// enough that no write can still be under way, unless its writer still runs on this host.
import fs from "node:fs/promises";
import path from "node:path";
import type { DownloadRepository } from "../db/download.repository.ts";
import type { Logger } from "../log.ts";
import { writerHere } from "../queue/holder.ts";
import { isPlacedJournal, journalLineDeviation } from "./placed-journal.ts";
import type { PlacedOriginals } from "./placed-originals.ts";
import type { Archive } from "../storage/archive.ts";
import {
  isWrittenPartial,
  ORIGINALS_DIR,
  PARTIAL_DIR,
  preflightProbeWriter,
  resolveInside,
  type WrittenPartialKind,
  writtenPartialWriter,
} from "../storage/layout.ts";

/** A partial original's name: `<deviationid>-original.part` (download-file.ts names the transfer). */
const PARTIAL_ORIGINAL = /^([A-Za-z0-9][A-Za-z0-9._-]*)-original\.part$/;
/** A placed original's note beside it (local-disk.ts writePlacedNote), or one a crash left before its rename. */
const PLACED_NOTE = /^([A-Za-z0-9][A-Za-z0-9._-]*)-original\.part\.placed\.json(\.tmp)?$/;
const DEFAULT_MIN_AGE_MS = 60 * 60_000;
const FINISHED = new Set(["done", "not_downloadable"]);

export type PartialSweep = { removed: number; bytes: number };

/**
 * The partial folder, checked to stay inside the root as every write is: a link planted at .partial would have a
 * sweep list and remove the files of another folder that happen to bear a partial file's name. Throws
 * OutsideArchiveError then (layout.ts), which the sweeps' callers log.
 */
function partialDir(root: string): string {
  return resolveInside(root, PARTIAL_DIR);
}

export async function sweepStrandedPartials(args: {
  archive: Archive;
  repo: Pick<DownloadRepository, "findDownloadTarget">;
  now: number;
  minAgeMs?: number;
}): Promise<PartialSweep> {
  const dir = partialDir(args.archive.root);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const result: PartialSweep = { removed: 0, bytes: 0 };
  for (const name of names) {
    const journal = isPlacedJournal(name.replace(/\.tmp$/, ""));
    const partialOf = PARTIAL_ORIGINAL.exec(name)?.[1];
    const deviationid = partialOf ?? PLACED_NOTE.exec(name)?.[1];
    if (!deviationid && !journal) continue;
    const st = await fs.lstat(path.join(dir, name)).catch(() => undefined);
    if (!st?.isFile() || args.now - st.mtimeMs < (args.minAgeMs ?? DEFAULT_MIN_AGE_MS)) continue;
    const listed = deviationid ? [deviationid] : await journalDeviations(path.join(dir, name));
    if (!(await allFinished(args.repo, listed))) continue;
    if (partialOf) await args.archive.discardPartial(`${partialOf}-original`);
    // A journal or a note: a file of its own.
    else await fs.rm(path.join(dir, name), { force: true });
    result.removed++;
    result.bytes += st.size;
  }
  return result;
}

/** The deviations a journal lists (none for a line that is not one). */
async function journalDeviations(file: string): Promise<string[]> {
  const text = await fs.readFile(file, "utf8").catch(() => "");
  return text.split("\n").flatMap((line) => journalLineDeviation(line) ?? []);
}

/** Whether the original of every one of `deviationids` is stored or given up, or has no row. */
async function allFinished(repo: Pick<DownloadRepository, "findDownloadTarget">, deviationids: readonly string[]): Promise<boolean> {
  for (const id of deviationids) {
    const row = await repo.findDownloadTarget(id, "original");
    if (row && !FINISHED.has(row.status)) return false;
  }
  return true;
}

const WRITTEN_KINDS: readonly WrittenPartialKind[] = ["bytes", "adopt", "blob", "migrate", "copy"];

/**
 * Removes the written partial files of `kinds` (all by default) whose writer is proven dead, or which are older than
 * `minAgeMs`; only the archive's root is read, so a process with no Archive passes `{ root }`. With all kinds, the
 * preflight's probe files (src/storage/preflight.ts) too, in .partial/ and at the top of originals/, by the same rule.
 */
export async function sweepWrittenPartials(args: {
  archive: Pick<Archive, "root">;
  now: number;
  minAgeMs?: number;
  kinds?: readonly WrittenPartialKind[];
}): Promise<PartialSweep> {
  const kinds = args.kinds ?? WRITTEN_KINDS;
  const probes = args.kinds === undefined;
  const result: PartialSweep = { removed: 0, bytes: 0 };
  const inPartial = (name: string) => {
    const kind = kinds.find((k) => isWrittenPartial(k, name));
    return kind ? { writer: writtenPartialWriter(kind, name) } : probes ? preflightProbeWriter(name) : undefined;
  };
  await sweepNamed(partialDir(args.archive.root), inPartial, args, result);
  // Checked as .partial is: a link planted at originals/ is refused, not listed.
  if (probes) await sweepNamed(resolveInside(args.archive.root, ORIGINALS_DIR), preflightProbeWriter, args, result);
  return result;
}

/** Removes the files of `dir` that `named` takes whose writer (if any) is proven dead, or which are old. */
async function sweepNamed(
  dir: string,
  named: (name: string) => { writer: string | undefined } | undefined,
  args: { now: number; minAgeMs?: number },
  result: PartialSweep,
): Promise<void> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const match = named(name);
    if (!match) continue;
    const file = path.join(dir, name);
    const st = await fs.lstat(file).catch(() => undefined);
    if (!st?.isFile()) continue;
    const old = args.now - st.mtimeMs >= (args.minAgeMs ?? DEFAULT_MIN_AGE_MS);
    // Its writer proven dead here, or old and its writer not known to run here: a writer running on this host keeps its
    // file however old (a long copy may still need it); another host's, or an unnamed one, goes by age alone.
    const writer = match.writer === undefined ? "elsewhere" : writerHere(match.writer);
    if (writer !== "dead" && !(old && writer === "elsewhere")) continue;
    // A writer still alive that renames it first leaves nothing here to remove (force).
    await fs.rm(file, { force: true });
    result.removed++;
    result.bytes += st.size;
  }
}

/**
 * A worker's start: the written partial files whatever its roles (a maintenance host makes thumbnails, a digest host
 * too), and a downloads host's (given `repo`) stranded partial originals; a failure is logged and only leaves files for
 * the next start.
 */
export async function sweepPartialsAtStart(args: {
  archive: Archive;
  repo?: Pick<DownloadRepository, "findDownloadTarget"> | undefined;
  /** The placed originals kept in the coordination store, swept with the repository (a downloads host's start). */
  placed?: Pick<PlacedOriginals, "sweepSettledKeys"> | undefined;
  now: number;
  log: Logger;
}): Promise<void> {
  const { archive, repo, placed, now, log } = args;
  if (repo)
    await sweepStrandedPartials({ archive, repo, now }).then(
      (swept) => swept.removed > 0 && log.info(swept, "removed partial files of downloads stored or given up meanwhile"),
      (err: unknown) => sweepFailed(log, err),
    );
  if (repo && placed)
    await placed.sweepSettledKeys({ settled: (id) => allFinished(repo, [id]), now, minAgeMs: DEFAULT_MIN_AGE_MS }).then(
      (removed) => removed > 0 && log.info({ removed }, "forgot the placed originals the store kept for downloads stored or given up meanwhile"),
      (err: unknown) => log.warn({ err }, "could not sweep the placed originals the store keeps; trying again at the next start"),
    );
  await sweepWrittenAtStart(archive, log);
}

/**
 * A start's sweep of the written partial files (the worker's, a `download --once` run's, a `thumbnails --once` run's),
 * by the real clock whatever the services' clock says, since the files' times are the filesystem's; a failure is
 * logged and only leaves files for the next start.
 */
export async function sweepWrittenAtStart(archive: Pick<Archive, "root">, log: Logger): Promise<void> {
  await sweepWrittenPartials({ archive, now: Date.now() }).then(
    (swept) => swept.removed > 0 && log.info(swept, "removed partial files of dead processes' writes"),
    (err: unknown) => sweepFailed(log, err),
  );
}

function sweepFailed(log: Logger, err: unknown): void {
  log.warn({ err }, "could not sweep the partial files; trying again at the next start");
}
