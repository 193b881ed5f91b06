// The folder-by-folder walk shared by the gallery, collections and tracked sources: folder list with
// sizes, each changed folder's pages (bottom-anchored positions, early stop), metadata and texts of new
// items, wanted downloads, gaps, and on a sweep the removal of what vanished.
import { z } from "zod";
import type { DaClient } from "../../api/client.ts";
import { isApiError, isEndpointGone } from "../../api/errors.ts";
import { DEFAULT_OFFSET_CEILING, nextOffset } from "../../api/paginate.ts";
import type { Page, PageIterator } from "../../api/transport.ts";
import type { CollectionFolder, Deviation, GalleryFolder, Metadata } from "../../api/types.ts";
import type { DeviationTextInput } from "../../db/deviation.repository.ts";
import type { WantedDownload } from "../../db/download.repository.ts";
import type { FolderMemberInput } from "../../db/folder.repository.ts";
import { deviationType, distinctUsers, type FolderKind, type UpsertCounts } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext, SourceOutcome } from "../source.ts";

/** Metadata is fetched in batches of this many ids (the service's maximum without ext_*). */
const METADATA_BATCH = 50;
/** Queued texts are fetched once this many are pending (or at the end of a run). */
const TEXT_BATCH = 10;
/** A walk longer than this many pages gets a fresh token first. */
const LONG_WALK_PAGES = 3;
const PAGE_SIZE = 24;
/** ensureFreshToken again after this long in one run. */
const TOKEN_CHECK_EVERY_MS = 10 * 60_000;

// ---- state ------------------------------------------------------------------------------------------

const PlanEntrySchema = z.object({
  folderid: z.string(),
  name: z.string().nullable(),
  /** The folder's size from this run's folder list; positions count down from it. */
  size: z.number().nullable(),
  /** Stop at the first page that is already mirrored and unchanged. */
  early: z.boolean(),
});

const RunSchema = z.object({
  /** A sweep: every folder walked to its end, then what was not seen is marked removed. */
  full: z.boolean(),
  startedAt: z.string(),
  plan: z.array(PlanEntrySchema),
  index: z.number().int(),
  /** Where the current folder's next page starts, and how many items it has returned so far. */
  offset: z.number().int(),
  ordinal: z.number().int(),
  folderStartedAt: z.string().nullable(),
  truncated: z.boolean(),
  /** Ids new on the newest page: if no planned folder lists them, every folder is opened. */
  lookFor: z.array(z.string()),
});

const PendingTextSchema = z.object({ id: z.string(), excerpt: z.string().nullable() });

export const FolderStateSchema = z.object({
  /** Folder sizes as of the last walk that reached the folder's unchanged part or its end. */
  sizes: z.record(z.string(), z.number()),
  /**
   * Comma-joined ids of every deviation this source has listed, for finding those that vanished on a
   * sweep. Left out of per-page cursor writes (it is the one big field) and written back when the run
   * ends or fails; absent after a crash, which only skips vanished-detection until the next sweep.
   */
  known: z.string().optional(),
  /** Ids whose metadata / text is still to be fetched: committed with the page that found them. */
  pendingMetadata: z.array(z.string()),
  pendingTexts: z.array(PendingTextSchema),
  /** The unfinished run, resumed by the next one. */
  run: RunSchema.optional(),
});
export type FolderState = z.infer<typeof FolderStateSchema>;
type Run = z.infer<typeof RunSchema>;
type PlanEntry = z.infer<typeof PlanEntrySchema>;

export function emptyFolderState(): FolderState {
  return { sizes: {}, pendingMetadata: [], pendingTexts: [] };
}

/** The stored state, or a fresh one when there is none or it has another shape (an older version). */
export function parseFolderState(value: unknown): FolderState {
  const parsed = FolderStateSchema.safeParse(value);
  return parsed.success ? parsed.data : emptyFolderState();
}

/** The state as written in a cursor; `withKnown` false leaves out the big known-id list. */
export function folderStateJson(state: FolderState, withKnown: boolean): FolderState {
  const { known, ...rest } = state;
  return withKnown && known !== undefined ? { ...rest, known } : rest;
}

// ---- what differs between galleries and collections --------------------------------------------------

export type AnyFolder = GalleryFolder | CollectionFolder;

export type FolderSpec = {
  kind: FolderKind;
  /** Whose folders; `username` undefined means the authenticated user. */
  owner: { userid: string; username?: string | undefined };
  download: { priority: number; reason: string };
  listFolders(client: DaClient): PageIterator<AnyFolder>;
  upsertFolders(repos: SyncRepos, folders: readonly AnyFolder[], seenAt: Date, offset: number): Promise<UpsertCounts>;
  folderPages(client: DaClient, folderid: string, startOffset: number): PageIterator<Deviation>;
  /** The newest page of the "all" view: one call that catches edits at the top of the archive. */
  newestPage(client: DaClient): PageIterator<Deviation>;
};

export function gallerySpec(owner: FolderSpec["owner"], download: FolderSpec["download"]): FolderSpec {
  const username = owner.username;
  return {
    kind: "gallery",
    owner,
    download,
    listFolders: (client) => client.galleryFolders({ username, calculate_size: true, limit: 50 }),
    upsertFolders: (repos, folders, seenAt, offset) => repos.folders.upsertGalleryFolders(owner.userid, folders as GalleryFolder[], seenAt, offset),
    folderPages: (client, folderid, startOffset) =>
      client.galleryFolder(folderid, { username, mode: "newest", limit: PAGE_SIZE, startOffset }),
    newestPage: (client) => client.galleryAll({ username, limit: PAGE_SIZE }),
  };
}

export function collectionSpec(owner: FolderSpec["owner"], download: FolderSpec["download"]): FolderSpec {
  const username = owner.username;
  return {
    kind: "collection",
    owner,
    download,
    listFolders: (client) => client.collectionFolders({ username, calculate_size: true, limit: 50 }),
    upsertFolders: (repos, folders, seenAt, offset) =>
      repos.folders.upsertCollectionFolders(owner.userid, folders as CollectionFolder[], seenAt, offset),
    folderPages: (client, folderid, startOffset) => client.collectionFolder(folderid, { username, limit: PAGE_SIZE, startOffset }),
    newestPage: (client) => client.collectionsAll({ username, limit: PAGE_SIZE }),
  };
}

// ---- the walk ---------------------------------------------------------------------------------------

export type FolderSyncIO = {
  state: FolderState;
  /** Writes the source's whole cursor with this state in it (inside the caller's transaction). */
  save(repos: SyncRepos, state: FolderState, withKnown: boolean): Promise<void>;
};

export type FolderSyncOptions = {
  full: boolean;
  /** Check the newest page of the "all" view before deciding which folders to open. */
  newestCheck: boolean;
  /** Open every folder (with early stop) even where the size did not change. */
  forceAll?: boolean;
  /**
   * Skip the folder list when the newest check found nothing new (a tracked user whose profile counts
   * did not change): the quiet run costs the newest page only.
   */
  foldersOnlyIfNew?: boolean;
};

export type FolderSyncResult = {
  /** Every folder was walked to its end (a sweep; the first run is one). */
  sweep: boolean;
  truncated: boolean;
  /** Distinct live deviations listed in this run (complete only when `sweep`). */
  seen: number;
  /** Optional parts whose endpoint the service removed (the walk went on without them). */
  gone: string[];
};

/** Syncs one owner's folders of one kind; the state in `io` is updated in place and saved page by page. */
export async function syncFolders(ctx: SourceContext, spec: FolderSpec, io: FolderSyncIO, options: FolderSyncOptions): Promise<FolderSyncResult> {
  const walker = new FolderWalker(ctx, spec, io);
  try {
    return await walker.run(options);
  } catch (err) {
    await walker.saveAfterFailure();
    throw err;
  }
}

class FolderWalker {
  private readonly st: FolderState;
  private readonly known: Set<string> | undefined;
  private readonly seen = new Set<string>();
  private readonly queuedMetadata = new Set<string>();
  /** Every id this run has met on any page (folder listings and the newest check). */
  private readonly met = new Set<string>();
  private lastTokenCheck: number | undefined;

  private savedWithoutKnown = false;
  private readonly gone: string[] = [];
  private readonly initialJson: string;
  private readonly io: FolderSyncIO;

  constructor(
    private readonly ctx: SourceContext,
    private readonly spec: FolderSpec,
    io: FolderSyncIO,
  ) {
    this.io = {
      state: io.state,
      save: (repos, state, withKnown) => {
        if (!withKnown) this.savedWithoutKnown = true;
        return io.save(repos, state, withKnown);
      },
    };
    this.st = io.state;
    this.initialJson = JSON.stringify(folderStateJson(io.state, true));
    this.known = io.state.known !== undefined ? new Set(splitIds(io.state.known)) : undefined;
  }

  async run(options: FolderSyncOptions): Promise<FolderSyncResult> {
    const { ctx, st } = this;
    const hadHistory = Object.keys(st.sizes).length > 0 || st.known !== undefined;
    let run = st.run && !(options.full && !st.run.full) ? st.run : undefined;
    const resumed = run !== undefined;
    // A crashed run may have left fetched pages whose metadata is still owed.
    await this.flushPending(true);

    let lookFor: string[] = [];
    let forceAll = options.forceAll ?? false;
    if (!run && !options.full && hadHistory && options.newestCheck) {
      const fresh = await this.checkNewest();
      if (fresh === undefined) forceAll = true;
      else lookFor = fresh;
      if (options.foldersOnlyIfNew && !forceAll && lookFor.length === 0) {
        await this.flushPending(true);
        // A per-page write left the known ids out: put them back.
        if (this.savedWithoutKnown) await ctx.transaction((repos) => this.io.save(repos, st, true));
        return { sweep: false, truncated: false, seen: 0, gone: this.gone };
      }
    }

    const folders = await this.listFolders();
    if (!run) {
      const full = options.full || !hadHistory;
      run = {
        full,
        startedAt: ctx.startedAt.toISOString(),
        plan: this.plan(folders, { full, forceAll }),
        index: 0,
        offset: 0,
        ordinal: 0,
        folderStartedAt: null,
        truncated: false,
        lookFor,
      };
      st.run = run;
    }

    const remainingPages = run.plan.slice(run.index).reduce((n, e) => n + estimatedPages(e), 0);
    if (remainingPages > LONG_WALK_PAGES) await this.freshToken();
    await this.walkPlan(run);
    // New at the top of the "all" view but in no folder whose size changed: open the others too.
    if (run.lookFor.some((id) => !this.seen.has(id))) {
      const planned = new Set(run.plan.map((e) => e.folderid));
      const rest = this.plan(folders, { full: false, forceAll: true }).filter((e) => !planned.has(e.folderid));
      run.plan.push(...rest);
      run.lookFor = [];
      await this.walkPlan(run);
    }

    const sweep = run.full;
    if (sweep) await this.finishSweep(run, resumed);
    await this.flushPending(true);
    const truncated = run.truncated;
    await this.finishRun(folders, sweep && !resumed);
    return { sweep, truncated, seen: this.seen.size, gone: this.gone };
  }

  private async walkPlan(run: Run): Promise<void> {
    while (run.index < run.plan.length) {
      const entry = run.plan[run.index] as PlanEntry;
      await this.walkFolder(run, entry);
    }
  }

  /** After an error: keep the resume point and the known ids (a per-page write left them out). */
  async saveAfterFailure(): Promise<void> {
    if (!this.savedWithoutKnown || this.st.known === undefined) return;
    try {
      await this.ctx.transaction((repos) => this.io.save(repos, this.st, true));
    } catch (err) {
      this.ctx.log.warn({ err }, "could not save the sync state after a failure");
    }
  }

  // ---- steps -----------------------------------------------------------------------------------------

  /**
   * The newest page of the "all" view: title edits at the top are recorded right here. Returns the ids
   * it found new, which the folder walk must then come across; undefined when the view is gone.
   */
  private async checkNewest(): Promise<string[] | undefined> {
    try {
      return await this.newestPage();
    } catch (err) {
      if (!isEndpointGone(err)) throw err;
      // Only a shortcut: without it, every folder is opened (with early stop).
      this.gone.push(err.operation);
      return undefined;
    }
  }

  private async newestPage(): Promise<string[]> {
    for await (const page of this.spec.newestPage(this.ctx.client)) {
      const written = await this.ctx.transaction(async (repos) => {
        const result = await this.writePage(repos, page.items);
        if (result.touched) await this.io.save(repos, this.st, false);
        return result;
      });
      this.ctx.checkpoint();
      await this.flushPending(false);
      return written.fresh;
    }
    return [];
  }

  /** Every page of the folder list, upserted; the folders flattened (subfolders included) in order. */
  private async listFolders(): Promise<AnyFolder[]> {
    const byId = new Map<string, AnyFolder>();
    for await (const page of this.spec.listFolders(this.ctx.client)) {
      await this.ctx.transaction((repos) => this.spec.upsertFolders(repos, page.items, this.ctx.now(), page.offset ?? 0));
      for (const folder of flattenFolders(page.items)) if (!byId.has(folder.folderid)) byId.set(folder.folderid, folder);
    }
    return [...byId.values()];
  }

  private plan(folders: readonly AnyFolder[], { full, forceAll }: { full: boolean; forceAll: boolean }): PlanEntry[] {
    const plan: PlanEntry[] = [];
    for (const f of folders) {
      const size = typeof f.size === "number" ? f.size : null;
      const entry = { folderid: f.folderid, name: f.name ?? null, size };
      const last = this.st.sizes[f.folderid];
      if (full || last === undefined) plan.push({ ...entry, early: false });
      else if (forceAll || size === null || last !== size) plan.push({ ...entry, early: true });
    }
    return plan;
  }

  private async walkFolder(run: Run, entry: PlanEntry): Promise<void> {
    const { ctx, spec } = this;
    if (run.offset === 0 && run.ordinal === 0) run.folderStartedAt = ctx.now().toISOString();
    if (estimatedPages(entry) - Math.floor(run.ordinal / PAGE_SIZE) > LONG_WALK_PAGES) await this.freshToken();
    let done = false;
    try {
      for await (const page of spec.folderPages(ctx.client, entry.folderid, run.offset)) {
        done = await this.folderPage(run, entry, page);
        ctx.checkpoint();
        await this.flushPending(false);
        if (done) break;
      }
    } catch (err) {
      if (!isFolderNotFound(err)) throw err;
      // Deleted between the folder list and its walk: the sweep's folder check will mark it.
      ctx.log.info({ folderid: entry.folderid }, "folder vanished during the walk");
      await ctx.transaction((repos) => this.endFolder(repos, run, entry, { complete: false, truncated: false, vanished: true }));
      return;
    }
    // The listing ended without a last page we could recognise (e.g. it started past the ceiling).
    if (!done) {
      const truncated = run.offset >= DEFAULT_OFFSET_CEILING;
      await ctx.transaction((repos) => this.endFolder(repos, run, entry, { complete: !truncated, truncated, vanished: false }));
    }
  }

  /** One page of a folder, committed with the cursor. True when the folder's walk is over. */
  private async folderPage(run: Run, entry: PlanEntry, page: Page<Deviation>): Promise<boolean> {
    const { ctx, spec } = this;
    const items = page.items;
    const offset = page.offset ?? run.offset;
    const decision = nextOffset({ items, hasMore: page.hasMore, offset, nextOffset: page.nextOffset }, DEFAULT_OFFSET_CEILING);
    const members = items.map((d, k) => ({
      deviationid: d.deviationid,
      // Counted from the folder's end, so a new deviation at the top does not renumber the folder.
      position: entry.size !== null ? entry.size - 1 - (run.ordinal + k) : run.ordinal + k,
    }));
    return ctx.transaction(async (repos) => {
      const written = await this.writePage(repos, items, { folderid: entry.folderid, members });
      const unchanged = !written.changed;
      run.ordinal += items.length;
      if (decision.next !== undefined && !(entry.early && unchanged)) {
        run.offset = decision.next;
        await this.io.save(repos, this.st, false);
        return false;
      }
      const truncated = decision.truncation !== undefined;
      await this.endFolder(repos, run, entry, { complete: decision.next === undefined && !truncated, truncated, vanished: false });
      return true;
    });
  }

  /** Closes a folder's walk inside the transaction of its last page: size, gap, removals, next folder. */
  private async endFolder(
    repos: SyncRepos,
    run: Run,
    entry: PlanEntry,
    how: { complete: boolean; truncated: boolean; vanished: boolean },
  ): Promise<void> {
    const { ctx, spec } = this;
    const mirrored = run.ordinal;
    if (!how.vanished && entry.size !== null) this.st.sizes[entry.folderid] = entry.size;
    if (how.truncated) {
      run.truncated = true;
      const expected = entry.size;
      await repos.syncState.recordGap(
        ctx.ref,
        entry.folderid,
        {
          expected,
          mirrored,
          reason:
            `offset ceiling: the service stops paging at offset ${DEFAULT_OFFSET_CEILING}; ` +
            `${expected === null ? "some" : Math.max(0, expected - mirrored)} of ${expected ?? "?"} deviations in ${spec.kind} folder "${entry.name ?? entry.folderid}" are unreachable`,
        },
        ctx.now(),
      );
    } else if (how.complete && entry.size !== null && mirrored !== entry.size) {
      await repos.syncState.recordGap(
        ctx.ref,
        entry.folderid,
        {
          expected: entry.size,
          mirrored,
          reason: `count mismatch: ${spec.kind} folder "${entry.name ?? entry.folderid}" says ${entry.size} deviations, its listing returned ${mirrored} (hidden, private or deleted items)`,
        },
        ctx.now(),
      );
    } else if (how.complete && ctx.state?.gaps[entry.folderid]) {
      await repos.syncState.clearGap(ctx.ref, entry.folderid, ctx.now());
    }
    // A folder walked to its end: members not seen since its walk began have left it.
    if (how.complete && run.folderStartedAt) {
      await repos.folders.markMissingMembersRemoved(spec.kind, entry.folderid, new Date(run.folderStartedAt), ctx.now());
    }
    run.index += 1;
    run.offset = 0;
    run.ordinal = 0;
    run.folderStartedAt = null;
    await this.io.save(repos, this.st, false);
  }

  /** After every folder was walked: folders gone from the list, deviations gone from every listing. */
  private async finishSweep(run: Run, resumed: boolean): Promise<void> {
    const { ctx, spec } = this;
    await ctx.transaction((repos) => repos.folders.markMissingFoldersRemoved(spec.kind, spec.owner.userid, new Date(run.startedAt), ctx.now()));
    if (resumed || !this.known) {
      ctx.log.info({ kind: spec.kind }, "sweep resumed after an interruption: vanished deviations are checked at the next sweep");
      return;
    }
    const vanished = [...this.known].filter((id) => !this.seen.has(id));
    if (vanished.length === 0) return;
    const alive = await resolveVanished(ctx, vanished, { ownerUserid: spec.owner.userid });
    // Still there but unlisted: beyond an offset ceiling they may come back; otherwise forget them.
    if (run.truncated) for (const id of alive) this.seen.add(id);
  }

  private async finishRun(folders: readonly AnyFolder[], replaceKnown: boolean): Promise<void> {
    const { st } = this;
    const current = new Set(folders.map((f) => f.folderid));
    for (const id of Object.keys(st.sizes)) if (!current.has(id)) delete st.sizes[id];
    const known = replaceKnown ? this.seen : this.known ? new Set([...this.known, ...this.seen]) : undefined;
    delete st.run;
    if (known) st.known = [...known].sort().join(",");
    else delete st.known;
    // A quiet run leaves the state as it found it: no write of the (large) known ids.
    if (!this.savedWithoutKnown && JSON.stringify(folderStateJson(st, true)) === this.initialJson) return;
    await this.ctx.transaction((repos) => this.io.save(repos, st, true));
  }

  // ---- pages of deviations ---------------------------------------------------------------------------

  /**
   * Upserts authors, deviations, the folder's members (when `members` is given) and wanted downloads of
   * a page, and queues metadata and texts of what is new or changed (metadata of everything on a sweep).
   * `changed`: anything on the page was new, edited, moved or removed.
   */
  private async writePage(repos: SyncRepos, items: readonly Deviation[], folder?: { folderid: string; members: FolderMemberInput[] }) {
    const { ctx, st } = this;
    const now = ctx.now();
    await repos.users.upsertUsers(distinctUsers(items.map((d) => d.author)), now);
    const devs = await repos.deviations.upsertDeviations(items, now);
    const m = folder
      ? await repos.folders.upsertFolderMembership(this.spec.kind, folder.folderid, folder.members, now)
      : { inserted: 0, changed: 0, unchanged: 0 };
    ctx.counters.new += devs.inserted;
    ctx.counters.changed += devs.changed;
    ctx.counters.removed += devs.removed;
    const live = items.filter((d) => d.is_deleted !== true);
    // New rows come first in newest-first listings: of the items this run had not met yet, the first
    // `inserted` are the new ones (what the newest check asks the folder walk to find).
    const unmet = items.filter((d) => !this.met.has(d.deviationid));
    const fresh = (devs.inserted >= unmet.length ? unmet : unmet.slice(0, devs.inserted)).filter((d) => d.is_deleted !== true);
    for (const d of items) this.met.add(d.deviationid);
    // `seen` counts folder listings only: what a sweep compares with the known ids.
    if (folder) for (const d of live) this.seen.add(d.deviationid);
    const newTexts = await markWanted(repos, live, this.spec.download, now);
    const changed = devs.inserted > 0 || devs.changed > 0 || devs.removed > 0 || m.inserted > 0 || m.changed > 0;
    const sweep = st.run?.full === true;
    let touched = false;
    // Metadata of the whole page: it rides in the same batch of 50.
    const queue = sweep || changed ? live : [];
    for (const d of queue) {
      if (this.queuedMetadata.has(d.deviationid)) continue;
      this.queuedMetadata.add(d.deviationid);
      st.pendingMetadata.push(d.deviationid);
      touched = true;
    }
    for (const d of newTexts) {
      st.pendingTexts.push({ id: d.deviationid, excerpt: d.excerpt ?? d.text_content?.excerpt ?? null });
      touched = true;
    }
    return { changed, touched, fresh: fresh.map((d) => d.deviationid) };
  }

  private flushPending(all: boolean): Promise<void> {
    return flushPending(this.ctx, this.st, (repos) => this.io.save(repos, this.st, false), all);
  }

  /** Before a long walk (and again every few minutes of one): a token that will not expire mid-walk. */
  private async freshToken(): Promise<void> {
    const now = this.ctx.now().getTime();
    if (this.lastTokenCheck !== undefined && now - this.lastTokenCheck < TOKEN_CHECK_EVERY_MS) return;
    await this.ctx.ensureFreshToken();
    this.lastTokenCheck = now;
  }
}

/** Pages a planned folder walk will likely take: an early-stopping one usually ends after one or two. */
function estimatedPages(entry: PlanEntry): number {
  const full = Math.ceil((entry.size ?? PAGE_SIZE) / PAGE_SIZE);
  return entry.early ? Math.min(2, full) : full;
}

// ---- helpers shared with the other sources ------------------------------------------------------------

/** The source's outcome: degraded (with the reason) when an optional part's endpoint is gone. */
export function outcomeOf(result: FolderSyncResult): SourceOutcome {
  if (result.gone.length === 0) return { result: "ok", completeSweep: result.sweep };
  return { result: "degraded", unavailableReason: `${result.gone.join(", ")} removed by the service (404 Api endpoint not found.)`, completeSweep: result.sweep };
}

export type PendingWork = { pendingMetadata: string[]; pendingTexts: Array<{ id: string; excerpt: string | null }> };

/**
 * Fetches queued metadata (full batches of 50, or everything when `all`) and the queued texts, and
 * commits each batch with the cursor (`save`), so a crash never loses what a committed page queued.
 */
export async function flushPending(ctx: SourceContext, st: PendingWork, save: (repos: SyncRepos) => Promise<void>, all: boolean): Promise<void> {
  while (st.pendingMetadata.length >= METADATA_BATCH || (all && st.pendingMetadata.length > 0)) {
    const ids = st.pendingMetadata.slice(0, METADATA_BATCH);
    const metadata: Metadata[] = [];
    for await (const batch of ctx.client.deviationMetadata(ids)) metadata.push(...batch.metadata);
    const counts = await ctx.transaction(async (repos) => {
      const result = await repos.deviations.upsertMetadata(metadata, ctx.now());
      st.pendingMetadata = st.pendingMetadata.slice(ids.length);
      await save(repos);
      return result;
    });
    ctx.counters.changed += counts.changed;
    ctx.checkpoint();
  }
  // Texts cost a call each either way; gathering a few per transaction saves cursor writes.
  if (st.pendingTexts.length === 0 || (!all && st.pendingTexts.length < TEXT_BATCH)) return;
  const texts: DeviationTextInput[] = [];
  for (const t of st.pendingTexts) {
    const content = await fetchText(ctx.client, t.id);
    if (content !== undefined) texts.push({ deviationid: t.id, content, excerpt: t.excerpt });
  }
  const counts = await ctx.transaction(async (repos) => {
    const result = await repos.deviations.upsertTexts(texts, ctx.now());
    st.pendingTexts = [];
    await save(repos);
    return result;
  });
  ctx.counters.changed += counts.changed;
  ctx.checkpoint();
}

/** The folders of a folder-list page and, depth first, their subfolders. */
export function flattenFolders(folders: readonly AnyFolder[]): AnyFolder[] {
  return folders.flatMap((f) => {
    const subfolders = "subfolders" in f && Array.isArray(f.subfolders) ? (f.subfolders as GalleryFolder[]) : [];
    return [f, ...flattenFolders(subfolders)];
  });
}

export function needsText(d: Deviation): boolean {
  const type = deviationType(d);
  return type === "journal" || type === "literature";
}

/** The file a deviation is wanted for: its text (journals, literature) or its original (the rest, when there is one). */
export function wantedDownload(d: Deviation, download: { priority: number; reason: string }): WantedDownload[] {
  if (d.is_deleted === true) return [];
  if (needsText(d)) return [{ deviationid: d.deviationid, kind: "text", priority: download.priority, reason: download.reason }];
  const hasFile = d.is_downloadable === true || Boolean(d.content) || (d.videos?.length ?? 0) > 0;
  return hasFile ? [{ deviationid: d.deviationid, kind: "original", priority: download.priority, reason: download.reason }] : [];
}

/**
 * Marks the page's files wanted and returns the journals and literature whose text row is new: their
 * text is still to be fetched. The row and the queued fetch commit together, so an existing row means
 * some source (this one earlier, the gallery for a profile post) already took care of it. One statement
 * per text item, as the row count is all the repository answers.
 */
export async function markWanted(
  repos: SyncRepos,
  items: readonly Deviation[],
  download: { priority: number; reason: string },
  at: Date,
): Promise<Deviation[]> {
  const wanted = items.flatMap((d) => wantedDownload(d, download));
  await repos.downloads.markDownloadsWanted(
    wanted.filter((w) => w.kind !== "text"),
    at,
  );
  const newTexts: Deviation[] = [];
  for (const d of items) {
    const text = wanted.find((w) => w.deviationid === d.deviationid && w.kind === "text");
    if (text && (await repos.downloads.markDownloadsWanted([text], at)) > 0) newTexts.push(d);
  }
  return newTexts;
}

/** /deviation/content for one deviation; undefined when the service no longer has it. */
export async function fetchText(client: DaClient, deviationid: string) {
  try {
    return await client.deviationContent(deviationid);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/** The service says the thing asked for does not exist (404, "... not found.", error_code 0 on a lookup). */
export function isMissing(err: unknown): boolean {
  if (!isApiError(err)) return false;
  if (err.kind === "not_found") return true;
  return err.kind === "client" && /not found|unsupported deviation type/i.test(err.errorDescription ?? "");
}

function isFolderNotFound(err: unknown): boolean {
  return isApiError(err) && err.kind === "client" && /folder not found/i.test(err.errorDescription ?? "");
}

export function splitIds(joined: string): string[] {
  return joined === "" ? [] : joined.split(",");
}

/**
 * Deviations that left every listing: each is asked for once. Deleted (or unknown) ones are marked
 * removed ('deleted'); one whose author's profile answers "User not found." marks that author deactivated
 * (and, in the same statement, their deviations). Returns the ids that still exist.
 */
export async function resolveVanished(ctx: SourceContext, ids: readonly string[], options: { ownerUserid: string }): Promise<string[]> {
  const deleted: string[] = [];
  const alive: string[] = [];
  const authors = new Map<string, string>();
  for (const id of ids) {
    let d: Deviation;
    try {
      d = await ctx.client.deviation(id);
    } catch (err) {
      if (!isMissing(err)) throw err;
      deleted.push(id);
      continue;
    }
    if (d.is_deleted === true) {
      deleted.push(id);
      continue;
    }
    alive.push(id);
    const author = d.author;
    if (author?.userid && author.userid !== options.ownerUserid && author.userid !== ctx.account.userId) authors.set(author.userid, author.username);
  }
  const deactivated: string[] = [];
  for (const [userid, username] of authors) {
    if (await userIsGone(ctx.client, username)) deactivated.push(userid);
  }
  await ctx.transaction(async (repos) => {
    ctx.counters.removed += await repos.deviations.markDeviationsRemoved(deleted, "deleted", ctx.now());
    for (const userid of deactivated) {
      const marked = await repos.users.markUserDeactivated(userid, ctx.now());
      ctx.counters.removed += marked.deviations;
    }
  });
  ctx.log.info({ vanished: ids.length, deleted: deleted.length, deactivatedAuthors: deactivated.length }, "resolved deviations gone from every listing");
  return alive;
}

/** True when the user's profile answers "User not found." (deactivated, suspended or deleted). */
export async function userIsGone(client: DaClient, username: string): Promise<boolean> {
  try {
    await client.profile(username);
    return false;
  } catch (err) {
    if (isApiError(err) && err.kind === "not_found") return true;
    throw err;
  }
}
