// The "stash" source: Sta.sh stacks and items through /stash/delta (cursor + offset). The service removed
// every stash listing in v20240701, so against the current service this degrades with the reason on its
// one probing call; the code path that mirrors the delta serves the legacy mode (and a service that
// brings it back).
import { z } from "zod";
import { isEndpointGone } from "../../api/errors.ts";
import type { StashMetadata } from "../../api/types.ts";
import type { StashEntryInput } from "../../db/stash.repository.ts";
import type { SourceContext, SourceDefinition, SourceOutcome } from "../source.ts";
import { DEFAULT_EVERY_MS } from "../source.ts";

/** docs/service-behaviour.md#stash-delta-shape: /stash/delta pages at most 120 entries. */
const DELTA_LIMIT = 120;
export const STASH_GONE_REASON = "stash listing removed by the service in v20240701 (404 Api endpoint not found.)";

const StashStateSchema = z.object({
  /** The delta cursor of the last complete walk: the next walk asks only for what changed since. */
  cursor: z.string().nullish(),
  /** A walk in progress: the cursor it pages with, the next offset, and the cursor its first page returned. */
  walk: z.object({ cursor: z.string().nullish(), offset: z.number().int().min(0), nextCursor: z.string().nullish() }).nullish(),
});
type StashState = z.infer<typeof StashStateSchema>;

function readState(cursor: unknown): StashState {
  const parsed = StashStateSchema.safeParse(cursor ?? {});
  return parsed.success ? parsed.data : {};
}

type DeltaEntry = {
  itemid?: string | null;
  stackid?: string | null;
  metadata?: StashMetadata | null;
  stash_metadata?: StashMetadata | null;
  position?: number | null;
};

/** Items (entries with an itemid) and stacks (the others), plus a minimal stack for every item's stackid. */
function splitEntries(entries: readonly DeltaEntry[]): { items: StashEntryInput[]; stacks: StashEntryInput[] } {
  const items: StashEntryInput[] = [];
  const stacks = new Map<string, StashEntryInput>();
  for (const e of entries) {
    const meta = e.metadata ?? e.stash_metadata ?? {};
    const itemid = e.itemid ?? meta.itemid ?? null;
    const stackid = e.stackid ?? meta.stackid ?? null;
    const entry: StashEntryInput = { ...meta, itemid, stackid, position: e.position ?? null };
    if (itemid) items.push(entry);
    else if (stackid) stacks.set(stackid, entry);
  }
  // The delta may carry items whose stack entry is on another page or absent (the simulator sends none):
  // a bare stack row keeps items joinable to their stack; a later stack entry fills in its metadata.
  for (const item of items) {
    if (item.stackid && !stacks.has(item.stackid)) stacks.set(item.stackid, { stackid: item.stackid });
  }
  return { items, stacks: [...stacks.values()] };
}

async function run(ctx: SourceContext): Promise<SourceOutcome> {
  const state = readState(ctx.state?.cursor);
  // A full sweep ignores the saved cursor: the first delta call without one returns everything.
  let walk = state.walk ?? { cursor: ctx.full ? null : (state.cursor ?? null), offset: 0, nextCursor: null };
  for (;;) {
    let page: Awaited<ReturnType<typeof ctx.client.call<"stash.delta">>>;
    try {
      page = await ctx.client.call("stash.delta", {
        ...(walk.cursor ? { cursor: walk.cursor } : {}),
        offset: walk.offset,
        limit: DELTA_LIMIT,
      });
    } catch (err) {
      if (isEndpointGone(err)) return { result: "degraded", unavailableReason: STASH_GONE_REASON };
      throw err;
    }
    if (page.reset && walk.cursor) {
      // The service asks to discard local state: start over without a cursor.
      ctx.log.info("stash delta asked for a reset; walking it from the start");
      walk = { cursor: null, offset: 0, nextCursor: null };
      continue;
    }
    const entries = page.entries ?? [];
    const nextCursor = walk.nextCursor ?? page.cursor ?? null;
    const nextOffset = page.next_offset ?? walk.offset + entries.length;
    const more = Boolean(page.has_more) && entries.length > 0 && nextOffset > walk.offset;
    const { items, stacks } = splitEntries(entries);
    const at = ctx.now();
    await ctx.transaction(async (repos) => {
      const s = await repos.stash.upsertStashStacks(ctx.account.id, stacks, at);
      const i = await repos.stash.upsertStashItems(ctx.account.id, items, at);
      ctx.counters.new += s.inserted + i.inserted;
      ctx.counters.changed += s.changed + i.changed;
      const next: StashState = more
        ? { cursor: state.cursor ?? null, walk: { cursor: walk.cursor ?? null, offset: nextOffset, nextCursor } }
        : { cursor: nextCursor, walk: null };
      await repos.syncState.saveSourceState(ctx.ref, { cursor: next });
    });
    ctx.checkpoint();
    if (!more) break;
    walk = { cursor: walk.cursor ?? null, offset: nextOffset, nextCursor };
  }
  return { result: "ok", completeSweep: ctx.full };
}

export const stashSource: SourceDefinition = {
  name: "stash",
  everyMs: DEFAULT_EVERY_MS.stash,
  needsUser: true,
  run,
};
