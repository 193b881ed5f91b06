// The stash source through the real runner: against the current service (listing endpoints removed) it
// degrades with the reason and never fails; against the legacy service it mirrors /stash/delta.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { STASH_GONE_REASON, stashSource } from "../../src/sync/sources/stash.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

/** Submits a file to Sta.sh the way a browser or uploader would (multipart), as the account's owner. */
async function submit(h: SyncHarness, fields: { title: string; stack: string; tags?: string[]; artist_comments?: string }) {
  const form = new FormData();
  form.set("title", fields.title);
  form.set("stack", fields.stack);
  if (fields.artist_comments) form.set("artist_comments", fields.artist_comments);
  for (const tag of fields.tags ?? []) form.append("tags[]", tag);
  form.set("file", new Blob([Buffer.from(`bytes of ${fields.title}`)], { type: "image/png" }), `${fields.title}.png`);
  const token = h.sim.issueUserToken().access_token;
  const res = await fetch(`${h.sim.apiUrl}/stash/submit`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  expect(res.status).toBe(200);
  return (await res.json()) as { itemid: number; stackid: number };
}

type ItemRow = {
  itemid: string;
  stackid: string | null;
  title: string | null;
  artist_comments: string | null;
  tags: string[] | null;
  creation_time: Date | null;
};

async function mirroredItems(h: SyncHarness): Promise<ItemRow[]> {
  const { rows } = await h.pool.query<ItemRow>(
    "SELECT itemid, stackid, title, artist_comments, tags, creation_time FROM stash_items WHERE account_id = $1 ORDER BY itemid",
    [h.account.id],
  );
  return rows;
}

function expectedItems(h: SyncHarness): ItemRow[] {
  return h.sim.truth.stash
    .filter((i) => i.publishedDeviationId === null)
    .map((i) => ({
      itemid: i.itemid,
      stackid: i.stackid,
      title: i.title,
      artist_comments: i.artistComments,
      tags: [...i.tags],
      creation_time: new Date(i.creationTime * 1000),
    }))
    .sort((a, b) => a.itemid.localeCompare(b.itemid));
}

describe("stash source against the current service", () => {
  let h: SyncHarness;
  beforeAll(async () => {
    h = await createSyncHarness({ sources: [stashSource] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("degrades with the reason on one call and records it, run after run", async () => {
    for (let run = 0; run < 2; run++) {
      h.sim.clock.advance(60_000);
      const seq = h.lastSeq();
      const result = await h.runSource("stash");
      const calls = h.apiCallsSince(seq);
      expect(result.status).toBe("degraded");
      expect(result.reason).toBe(STASH_GONE_REASON);
      expect(calls).toBeLessThanOrEqual(2);
    }
    const { rows } = await h.pool.query("SELECT last_result, unavailable_reason, last_error FROM sync_sources WHERE account_id = $1 AND source = 'stash'", [
      h.account.id,
    ]);
    expect(rows).toEqual([{ last_result: "degraded", unavailable_reason: STASH_GONE_REASON, last_error: null }]);
  });
});

describe("stash source against the legacy service", () => {
  // A fresh account with three submitted items per test: the second test adds an item, and the first counts them.
  let h: SyncHarness;
  beforeEach(async () => {
    h = await createSyncHarness({ sim: { mode: "legacy" }, sources: [stashSource] });
    await submit(h, { title: "Sketch A", stack: "Sketches", tags: ["wip"], artist_comments: "first" });
    await submit(h, { title: "Sketch B", stack: "Sketches" });
    await submit(h, { title: "Cover", stack: "Covers", tags: ["book", "cover"] });
  });
  afterEach(async () => {
    await h?.close();
  });

  it("mirrors every stash item and its stack from /stash/delta", async () => {
    h.sim.clock.advance(60_000);
    const result = await h.runSource("stash");

    expect(result.status).toBe("ok");
    expect(await mirroredItems(h)).toEqual(expectedItems(h));
    const { rows: stacks } = await h.pool.query<{ stackid: string }>("SELECT stackid FROM stash_stacks WHERE account_id = $1 ORDER BY stackid", [h.account.id]);
    expect(stacks.map((s) => s.stackid)).toEqual([...new Set(h.sim.truth.stash.map((i) => i.stackid))].sort());
    expect(result.counters).toEqual({ new: 5, changed: 0, removed: 0 });
  });

  it("costs at most 2 API calls when nothing changed, and picks up a new item", async () => {
    h.sim.clock.advance(60_000);
    expect((await h.runSource("stash")).status).toBe("ok");
    h.sim.clock.advance(60_000);
    const seq = h.lastSeq();
    let result = await h.runSource("stash");
    expect(h.apiCallsSince(seq)).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });

    await submit(h, { title: "Sketch C", stack: "Sketches" });
    h.sim.clock.advance(60_000);
    result = await h.runSource("stash");
    expect(result.counters).toEqual({ new: 1, changed: 0, removed: 0 });
    expect(await mirroredItems(h)).toEqual(expectedItems(h));
  });
});
