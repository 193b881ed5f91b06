// Work a page leaves for later, shared by the folder walks and profile posts: the metadata of new or
// changed deviations (batches of 50, docs/service-behaviour.md#metadata-batch), the text of journals and
// literature, and the downloads a deviation is wanted for. Queued work commits with the page that queued it.
import type { DaClient } from "../../api/client.ts";
import { isMissing, isPermanent } from "../../api/errors.ts";
import type { Deviation, Metadata } from "../../api/types.ts";
import type { DeviationTextInput } from "../../db/deviation.repository.ts";
import type { WantedDownload } from "../../db/download.repository.ts";
import { deviationType } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext } from "../source.ts";

/** Metadata is fetched in batches of this many ids (the service's maximum without ext_*). */
const METADATA_BATCH = 50;
/** Queued texts are fetched once this many are pending (or at the end of a run). */
const TEXT_BATCH = 10;

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

/**
 * /deviation/content for one deviation; undefined when the service has none to give: the deviation is
 * gone, not a text, the endpoint removed, or its answer unreadable twice (recorded). The excerpt stays.
 */
export async function fetchText(client: DaClient, deviationid: string) {
  try {
    return await client.deviationContent(deviationid);
  } catch (err) {
    if (isMissing(err) || isPermanent(err)) return undefined;
    throw err;
  }
}
