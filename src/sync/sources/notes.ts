// The "notes" source: every note folder and its notes (offset paging, newest first). Between sweeps a
// folder is walked only when its count differs from the count recorded after its last walk, and only
// until a page is already mirrored and unchanged: a run with nothing new costs the one folder-list call.
// A full sweep walks every folder to the end and marks the notes no longer listed in it as removed. A folder gone
// from the list is marked removed at once, and a sweep marks the notes that went with it.
import { z } from "zod";
import type { Note, NoteFolder } from "../../api/types.ts";
import { distinctUsers, intOrNull } from "../../db/mirror-rows.ts";
import type { SourceContext, SourceDefinition, SourceOutcome } from "../source.ts";
import { DEFAULT_EVERY_MS } from "../source.ts";
import { readWhole } from "../../api/transport.ts";

/** /notes pages at most 24 notes in the current service (docs/service-behaviour.md#page-size-maxima). */
const NOTES_LIMIT = 24;
/** A run that may walk more than this many pages checks the token first. */
const LONG_WALK_PAGES = 3;

const NotesStateSchema = z.object({
  /** folderid → the folder's count when it was last walked (its newest notes mirrored). */
  folders: z.record(z.string(), z.number().nullable()).catch({}),
  /** An unfinished full sweep: when it started, the folders it has finished, and whether one of them was not read whole. */
  sweep: z.object({ startedAt: z.string(), done: z.array(z.string()), partial: z.boolean().optional() }).nullish(),
  /** The folder walk in progress and the offset it reached. */
  walk: z.object({ folderid: z.string(), offset: z.number().int().min(0) }).nullish(),
});
type NotesState = z.infer<typeof NotesStateSchema>;

function readState(cursor: unknown): NotesState {
  const parsed = NotesStateSchema.safeParse(cursor ?? {});
  return parsed.success ? parsed.data : { folders: {} };
}

function folderId(f: NoteFolder): string | undefined {
  return f.folderid ?? f.folder ?? undefined;
}

type FolderWalk = {
  ctx: SourceContext;
  folderid: string;
  /** Where to start (a resumed walk), 0 for the newest notes. */
  startOffset: number;
  /** Walk to the end (a sweep) instead of stopping at a page already mirrored. */
  whole: boolean;
  /** The state to save with each page; `walk` is set to the next offset. */
  state: NotesState;
};

/** Walks one folder; each page, its users and the resume offset commit together. True when it read every page and note it met. */
async function walkFolder({ ctx, folderid, startOffset, whole, state }: FolderWalk): Promise<boolean> {
  const pages = ctx.client.notes({ folder: folderid, limit: NOTES_LIMIT, startOffset });
  for await (const page of pages) {
    const notes: Note[] = page.items;
    const nextOffset = page.nextOffset ?? (page.offset ?? startOffset) + notes.length;
    const quiet = await ctx.transaction(async (repos) => {
      const at = ctx.now();
      await repos.users.upsertUsers(distinctUsers(notes.flatMap((n) => [n.user, ...(n.recipients ?? [])])), at);
      const counts = await repos.notes.upsertNotes(ctx.account.id, folderid, notes, at);
      ctx.counters.new += counts.inserted;
      ctx.counters.changed += counts.changed;
      await repos.syncState.saveSourceState(ctx.ref, { cursor: { ...state, walk: { folderid, offset: nextOffset } } });
      return counts.inserted === 0 && counts.changed === 0;
    });
    ctx.checkpoint();
    if (quiet && !whole) break;
  }
  return readWhole(pages);
}

async function run(ctx: SourceContext): Promise<SourceOutcome> {
  const state = readState(ctx.state?.cursor);
  const { results } = await ctx.client.noteFolders();
  const at = ctx.now();
  await ctx.repos.notes.upsertNoteFolders(ctx.account.id, results, at);

  const folders = results.flatMap((f) => {
    const id = folderId(f);
    return id ? [{ id, count: intOrNull(f.count) }] : [];
  });
  // The folder list is one whole answer: a folder it no longer names was removed upstream (an entry without an id,
  // or no folder at all, where Inbox and Sent always are, ends none).
  const listedWhole = folders.length > 0 && folders.length === results.length;
  const listed = new Set(folders.map((f) => f.id));
  if (listedWhole) await ctx.repos.notes.markNoteFoldersRemoved(ctx.account.id, [...listed], at);
  let sweep = ctx.full ? (state.sweep ?? { startedAt: ctx.startedAt.toISOString(), done: [] }) : null;
  const counts = { ...state.folders };
  const resume = state.walk ?? null;

  const toWalk = folders.filter(({ id, count }) => {
    if (sweep) return !sweep.done.includes(id);
    const unchanged = id in counts && counts[id] === count && count !== null;
    return !unchanged || resume?.folderid === id;
  });
  // Pages this run is likely to read: whole folders in a sweep (or never walked), else about the new notes.
  const pages = toWalk.reduce((n, { id, count }) => {
    const known = counts[id];
    const notes = sweep || known === undefined || known === null ? (count ?? NOTES_LIMIT) : Math.abs((count ?? 0) - known);
    return n + Math.ceil(notes / NOTES_LIMIT) + (sweep ? 0 : 1);
  }, 0);
  if (pages > LONG_WALK_PAGES) await ctx.ensureFreshToken();

  for (const { id, count } of toWalk) {
    const resumeOffset = resume?.folderid === id ? resume.offset : 0;
    const current: NotesState = { folders: counts, sweep, walk: null };
    // A sweep that skipped a page or note it could not read did not see the folder whole: it ends no note there.
    let readWhole = true;
    if (sweep) {
      readWhole = await walkFolder({ ctx, folderid: id, startOffset: resumeOffset, whole: true, state: current });
    } else {
      // A resumed walk goes on where it stopped, then the head is read for what arrived since.
      if (resumeOffset > 0) await walkFolder({ ctx, folderid: id, startOffset: resumeOffset, whole: false, state: current });
      await walkFolder({ ctx, folderid: id, startOffset: 0, whole: false, state: current });
    }

    counts[id] = count;
    const finished = sweep;
    sweep = finished ? { ...finished, done: [...finished.done, id], ...(readWhole ? {} : { partial: true }) } : null;
    const next: NotesState = { folders: counts, sweep, walk: null };
    await ctx.transaction(async (repos) => {
      if (finished && readWhole) ctx.counters.removed += await repos.notes.markMissingNotesRemoved(ctx.account.id, id, new Date(finished.startedAt), ctx.now());
      await repos.syncState.saveSourceState(ctx.ref, { cursor: next });
    });
  }

  // Folders that are gone from the list are forgotten (their notes moved or went with them). A sweep that read every
  // folder whole saw each note still there: one in none of them, seen by no walk since, went with its folder.
  if (sweep && !sweep.partial && listedWhole) {
    ctx.counters.removed += await ctx.repos.notes.markNotesOfUnlistedFoldersRemoved(ctx.account.id, [...listed], new Date(sweep.startedAt), ctx.now());
  }
  const kept = Object.fromEntries(Object.entries(counts).filter(([id]) => listed.has(id)));
  await ctx.repos.syncState.saveSourceState(ctx.ref, { cursor: { folders: kept, sweep: null, walk: null } satisfies NotesState });
  return { result: "ok", ...(sweep ? { completeSweep: true } : {}) };
}

export const notesSource: SourceDefinition = {
  name: "notes",
  everyMs: DEFAULT_EVERY_MS.notes,
  needsUser: true,
  run,
};
