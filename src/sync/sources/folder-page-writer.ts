// Writing one page of deviations during the folder walk (folder-walk.ts), whichever listing it came from
// (a folder, the "all" view, the newest check): authors, deviations, folder members and wanted downloads
// upserted, metadata and texts queued, and what the run has seen and met so far kept.
import type { Deviation } from "../../api/types.ts";
import type { FolderMemberInput } from "../../db/folder.repository.ts";
import { distinctUsers } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext } from "../source.ts";
import type { FolderSpec, FolderState } from "./folder-spec.ts";
import { markWanted } from "./pending-work.ts";

export type PageWritten = {
  /** Anything on the page was new, edited, moved or removed. */
  changed: boolean;
  /** The source's state gained pending metadata or texts (it must be saved with the page). */
  touched: boolean;
  /** Live deviations new to the mirror, in listing order. */
  fresh: string[];
};

export class FolderPageWriter {
  /** Live deviations listed in this run by a witness (a folder or the "all" view). */
  readonly seen = new Set<string>();
  private readonly queuedMetadata = new Set<string>();
  /** Every id this run has met on any page (folder listings and the "all" view). */
  private readonly met = new Set<string>();

  constructor(
    private readonly ctx: SourceContext,
    private readonly spec: FolderSpec,
    private readonly st: FolderState,
  ) {}

  /**
   * Upserts authors, deviations, the folder's members (when `folder` is given) and wanted downloads of
   * a page, and queues metadata and texts of what is new or changed (metadata of everything on a sweep).
   * `witness`: the page is a complete listing of its part (a folder, the "all" view), so what it shows is
   * seen. `changed`: anything on the page was new, edited, moved or removed.
   */
  async write(
    repos: SyncRepos,
    items: readonly Deviation[],
    { witness, folder }: { witness: boolean; folder?: { folderid: string; members: FolderMemberInput[] } },
  ): Promise<PageWritten> {
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
    if (witness) for (const d of live) this.seen.add(d.deviationid);
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
}
