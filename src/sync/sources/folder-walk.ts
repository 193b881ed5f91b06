// The folder-by-folder walk shared by the gallery, collections and tracked sources: folder list with
// sizes, each changed folder's pages (positions counted from the folder's end, early stop), metadata and
// texts of new items, wanted downloads, gaps, and on a sweep the "all" view as a second witness (a
// deviation need not sit in any folder: docs/service-behaviour.md#folders-optional) and the removal of
// what vanished; on an incremental run whose witnesses say something went, the freshness check (freshness.ts).
import { failureWords, isApiError, isEndpointGone } from "../../api/errors.ts";
import { DEFAULT_OFFSET_CEILING, nextOffset } from "../../api/paginate.ts";
import { type Page, readWhole } from "../../api/transport.ts";
import type { Deviation } from "../../api/types.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext } from "../source.ts";
import { FolderPageWriter } from "./folder-page-writer.ts";
import { closeFolder, estimatedPages, folderRefused, LONG_WALK_PAGES, memberPosition, passedMembersLeft, planFolders, type FolderEnd } from "./folder-plan.ts";
import {
  flattenFolders,
  folderStateJson,
  PAGE_SIZE,
  splitIds,
  type AnyFolder,
  type FolderSpec,
  type FolderState,
  type PlanEntry,
  type Run,
} from "./folder-spec.ts";
import type { FolderSyncIO, FolderSyncOptions, FolderSyncResult } from "./folder-walk-types.ts";
import { KnownWorks } from "./folder-settle.ts";
import { fullCheckReasons, leftTheTop } from "./freshness.ts";
import { flushPending } from "./pending-work.ts";

/** ensureFreshToken again after this long in one run. */
const TOKEN_CHECK_EVERY_MS = 10 * 60_000;

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
  /** Writes each page, and keeps what this run has seen. */
  private readonly pages: FolderPageWriter;
  private readonly seen: Set<string>;
  private lastTokenCheck: number | undefined;

  private savedWithoutKnown = false;
  private readonly gone: string[] = [];
  /** The source's known works and what this run settles about the ones that may be gone. */
  private readonly works: KnownWorks;
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
    this.pages = new FolderPageWriter(ctx, spec, io.state);
    this.seen = this.pages.seen;
    this.works = new KnownWorks(ctx, { ownerUserid: spec.owner.userid, state: io.state, seen: this.seen, known: this.known, removed: this.gone });
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
    let leftTop: string[] = [];
    if (!run && !options.full && hadHistory && options.newestCheck) {
      const newest = await this.checkNewest();
      if (newest === undefined) forceAll = true;
      else {
        lookFor = newest.fresh;
        leftTop = newest.left;
      }
      if (options.foldersOnlyIfNew && !forceAll && lookFor.length === 0 && leftTop.length === 0 && !st.unsettled?.length) {
        await this.flushPending(true);
        // A per-page write left the known ids out: put them back.
        if (this.savedWithoutKnown) await ctx.transaction((repos) => this.io.save(repos, st, true));
        return this.emptyResult();
      }
    }

    const folders = await this.listFolders();
    if (!run) {
      const full = options.full || !hadHistory;
      const profileCount = typeof options.profileCount === "number" ? options.profileCount : null;
      const fullCheck = { ...fullCheckReasons({ folders, sizes: st.sizes, profileCount, lastProfileCount: st.witnessCount }), profileCount };
      // A sweep asks about everything that left its listings: the count it saw is the one to compare with next.
      if (full && profileCount !== null) st.witnessCount = profileCount;
      run = {
        full,
        startedAt: ctx.startedAt.toISOString(),
        plan: planFolders(folders, st.sizes, { full, forceAll }),
        index: 0,
        offset: 0,
        ordinal: 0,
        folderStartedAt: null,
        truncated: false,
        lookFor,
        all: null,
        folderIssues: [],
        ...(full ? {} : { departed: leftTop, fullCheck }),
      };
      st.run = run;
    }

    const remainingPages = run.plan.slice(run.index).reduce((n, e) => n + estimatedPages(e), 0);
    if (remainingPages > LONG_WALK_PAGES) await this.freshToken();
    await this.walkPlan(run);
    // New at the top of the "all" view but in no folder that was opened: a folder of unknown size may
    // hold it, so open those too. With every size known, a new deviation in no changed folder is in none.
    if (run.lookFor.some((id) => !this.seen.has(id)) && folders.some((f) => typeof f.size !== "number")) {
      const planned = new Set(run.plan.map((e) => e.folderid));
      const rest = planFolders(folders, st.sizes, { full: false, forceAll: true }).filter((e) => !planned.has(e.folderid));
      run.plan.push(...rest);
      await this.walkPlan(run);
    }
    run.lookFor = [];

    const sweep = run.full;
    // The walk's own work first: asking about works that may be gone can meet a throttle, which ends the asking.
    await this.flushPending(options.keepPendingTail !== true);
    if (sweep) await this.finishSweep(run, resumed);
    else await this.works.afterIncremental(run);
    const result: FolderSyncResult = {
      ...this.emptyResult(),
      sweep,
      resumed,
      truncated: run.truncated,
      seen: this.seen.size,
      all: sweep ? (run.all ?? null) : null,
      folderIssues: run.folderIssues ?? [],
    };
    await this.finishRun(folders, sweep && !resumed);
    return result;
  }

  /** What a run that walked nothing reports. */
  private emptyResult(): FolderSyncResult {
    return {
      sweep: false,
      resumed: false,
      truncated: false,
      seen: 0,
      all: null,
      folderIssues: [],
      gone: this.gone,
      ...this.works.outcome(),
    };
  }

  private async walkPlan(run: Run): Promise<void> {
    while (run.index < run.plan.length) {
      const entry = run.plan[run.index] as PlanEntry;
      if (entry.all) await this.walkAll(run, entry);
      else await this.walkFolder(run, entry);
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
   * The newest pages of the "all" view, until one holds something already mirrored: edits at the top are
   * recorded here, and new deviations in no folder are found without opening any. Returns the ids found
   * new, which the folder walk then looks for, and the works of the earlier first page that left it
   * (freshness.ts); undefined when the view is gone.
   */
  private async checkNewest(): Promise<{ fresh: string[]; left: string[] } | undefined> {
    const fresh: string[] = [];
    let left: string[] = [];
    let first = true;
    try {
      for await (const page of this.spec.allPages(this.ctx.client, 0)) {
        const written = await this.ctx.transaction(async (repos) => {
          const result = await this.pages.write(repos, page.items, { witness: true });
          const top = first ? page.items.map((d) => d.deviationid) : undefined;
          if (top) left = leftTheTop(top, splitIds(this.st.top ?? ""), { fresh: result.fresh.length, ended: !page.hasMore });
          const topMoved = top !== undefined && top.join(",") !== this.st.top;
          if (top) this.st.top = top.join(",");
          if (result.touched || topMoved) await this.io.save(repos, this.st, false);
          return result;
        });
        first = false;
        this.ctx.checkpoint();
        await this.flushPending(false);
        fresh.push(...written.fresh);
        // A page with anything already known ends the check: older pages hold nothing new.
        if (written.fresh.length < (page.received ?? page.items.length) || page.items.length === 0) break;
      }
    } catch (err) {
      if (!isEndpointGone(err)) throw err;
      // Only a shortcut: without it, every folder is opened (with early stop).
      this.gone.push(err.operation);
      return undefined;
    }
    return { fresh, left };
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

  private async walkFolder(run: Run, entry: PlanEntry): Promise<void> {
    const { ctx, spec } = this;
    if (run.offset === 0 && run.ordinal === 0) run.folderStartedAt = ctx.now().toISOString();
    // An empty folder needs no call: its end is where it starts (members it had are removed from it).
    if (entry.size === 0 && run.offset === 0) {
      await ctx.transaction((repos) => this.endFolder(repos, run, entry, { complete: true, truncated: false, vanished: false }));
      return;
    }
    if (estimatedPages(entry) - Math.floor(run.ordinal / PAGE_SIZE) > LONG_WALK_PAGES) await this.freshToken();
    let done = false;
    const pages = spec.folderPages(ctx.client, entry.folderid, run.offset);
    // A page or entry skipped as unreadable is works the walk did not see: none of them left the folder for it.
    try {
      for await (const page of pages) {
        done = await this.folderPage(run, entry, page, readWhole(pages));
        ctx.checkpoint();
        await this.flushPending(false);
        if (done) break;
      }
    } catch (err) {
      if (!(await folderRefused(ctx, spec.owner, err))) throw err;
      // Deleted between the folder list and its walk (the sweep's folder check will mark it), or refused while the
      // list names it: either way its contents were not read, and the run says so.
      ctx.log.info({ folderid: entry.folderid }, "folder vanished during the walk");
      const said = isApiError(err) ? failureWords(err) : String(err);
      (run.folderIssues ??= []).push(`${spec.kind} folder "${entry.name ?? entry.folderid}" could not be walked (${said})`);
      await ctx.transaction((repos) => this.endFolder(repos, run, entry, { complete: false, truncated: false, vanished: true }));
      return;
    }
    // The listing ended without a last page we could recognise (e.g. it started past the ceiling).
    if (!done) {
      const truncated = run.offset >= DEFAULT_OFFSET_CEILING;
      await ctx.transaction((repos) => this.endFolder(repos, run, entry, { complete: !truncated && readWhole(pages), truncated, vanished: false }));
    }
  }

  /** One page of a folder, committed with the cursor. True when the folder's walk is over; `readWhole`: nothing skipped so far. */
  private async folderPage(run: Run, entry: PlanEntry, page: Page<Deviation>, readWhole: boolean): Promise<boolean> {
    const { ctx } = this;
    const items = page.items;
    const offset = page.offset ?? run.offset;
    const decision = nextOffset({ ...page, offset }, DEFAULT_OFFSET_CEILING);
    const members = items.map((d, k) => ({ deviationid: d.deviationid, position: memberPosition(entry.size, run.ordinal + k) }));
    return ctx.transaction(async (repos) => {
      const written = await this.pages.write(repos, items, { witness: true, folder: { folderid: entry.folderid, members } });
      const unchanged = !written.changed;
      run.ordinal += page.received ?? items.length;
      if (decision.next !== undefined && !(entry.early && unchanged)) {
        run.offset = decision.next;
        await this.io.save(repos, this.st, false);
        return false;
      }
      if (decision.next !== undefined) await passedMembersLeft(ctx, repos, { kind: this.spec.kind, run, entry, page: members });
      const truncated = decision.truncation !== undefined;
      if (decision.truncation?.reason === "offset_ceiling") run.ceiling = decision.truncation.atOffset;
      await this.endFolder(repos, run, entry, { complete: decision.next === undefined && !truncated && readWhole, truncated, vanished: false });
      return true;
    });
  }

  /** Closes a folder's walk inside the transaction of its last page (see closeFolder), then the next folder. */
  private async endFolder(repos: SyncRepos, run: Run, entry: PlanEntry, how: FolderEnd): Promise<void> {
    await closeFolder(this.ctx, repos, { kind: this.spec.kind, st: this.st, run, entry, how });
    this.nextEntry(run);
    await this.io.save(repos, this.st, false);
  }

  /** The "all" view to its end (or the ceiling): every deviation is recorded, filed in a folder or not. */
  private async walkAll(run: Run, entry: PlanEntry): Promise<void> {
    const { ctx, spec } = this;
    run.all ??= { listed: 0, complete: false };
    const all = run.all;
    if (run.offset === 0) all.listed = 0;
    let end: { complete: boolean } | undefined;
    try {
      const pages = spec.allPages(ctx.client, run.offset);
      for await (const page of pages) {
        const decision = nextOffset({ ...page, offset: page.offset ?? run.offset }, DEFAULT_OFFSET_CEILING);
        await ctx.transaction(async (repos) => {
          await this.pages.write(repos, page.items, { witness: true });
          // The first page, as the next run's newest check compares it (freshness.ts).
          if ((page.offset ?? run.offset) === 0) this.st.top = page.items.map((d) => d.deviationid).join(",");
          all.listed += page.items.filter((d) => d.is_deleted !== true).length;
          if (decision.next !== undefined) run.offset = decision.next;
          await this.io.save(repos, this.st, false);
        });
        ctx.checkpoint();
        await this.flushPending(false);
        if (decision.next === undefined) {
          if (decision.truncation?.reason === "offset_ceiling") {
            run.ceiling = decision.truncation.atOffset;
            run.truncated = true;
          }
          end = { complete: decision.truncation === undefined && pages.skipped.pages === 0 };
          break;
        }
      }
      end ??= { complete: pages.truncation === undefined && pages.skipped.pages === 0 };
    } catch (err) {
      if (!isEndpointGone(err)) throw err;
      // No "all" view to witness: the folders stand alone (the caller decides whether that degrades).
      this.gone.push(err.operation);
      run.all = null;
      end = undefined;
    }
    if (end) all.complete = end.complete;
    ctx.log.debug({ kind: spec.kind, entry: entry.folderid, listed: all.listed, complete: all.complete }, "all view walked");
    await ctx.transaction(async (repos) => {
      this.nextEntry(run);
      await this.io.save(repos, this.st, false);
    });
  }

  private nextEntry(run: Run): void {
    run.index += 1;
    run.offset = 0;
    run.ordinal = 0;
    run.folderStartedAt = null;
  }

  /** After every folder was walked: folders gone from the list, deviations gone from every listing. */
  private async finishSweep(run: Run, resumed: boolean): Promise<void> {
    const { ctx, spec } = this;
    await ctx.transaction((repos) => repos.folders.markMissingFoldersRemoved(spec.kind, spec.owner.userid, new Date(run.startedAt), ctx.now()));
    await this.works.afterSweep(run, resumed);
  }

  private async finishRun(folders: readonly AnyFolder[], replaceKnown: boolean): Promise<void> {
    const { st } = this;
    const current = new Set(folders.map((f) => f.folderid));
    for (const id of Object.keys(st.sizes)) if (!current.has(id)) delete st.sizes[id];
    const known = this.works.knownAfter(replaceKnown);
    delete st.run;
    if (known) st.known = known.join(",");
    else delete st.known;
    // A quiet run leaves the state as it found it: no write of the (large) known ids.
    if (!this.savedWithoutKnown && JSON.stringify(folderStateJson(st, true)) === this.initialJson) return;
    await this.ctx.transaction((repos) => this.io.save(repos, st, true));
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
