// The comments source through the real runner against the simulator: every comment on the owner's
// deviations (replies nested deeper than one request returns included) mirrored field by field; a quiet
// re-run is one call; a new comment is picked up exactly, incrementally at the top and on a sweep below.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GroundTruth } from "../../src/simulator/server.ts";
import { commentsSource } from "../../src/sync/sources/comments.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

type Dev = GroundTruth["deviations"] extends ReadonlyMap<string, infer V> ? V : never;

let h: SyncHarness;
const deepChain: string[] = [];

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 200 } }, sources: [commentsSource] });
  // A reply chain nine deep: the first request (maxdepth 5) can't return all of it.
  const target = ownDeviations().find((d) => d.allowsComments) as Dev;
  const { access_token } = h.sim.issueUserToken();
  let parent: string | undefined;
  for (let depth = 0; depth < 9; depth++) {
    const body = new URLSearchParams({ body: `depth ${depth}`, ...(parent ? { commentid: parent } : {}) });
    const res = await fetch(`${h.sim.apiUrl}/comments/post/deviation/${target.deviationid}`, {
      method: "POST",
      headers: { authorization: `Bearer ${access_token}`, "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    const json = (await res.json()) as { commentid: string };
    parent = json.commentid;
    deepChain.push(parent);
  }
});
afterEach(async () => {
  await h?.close();
});

function runLater(opts: { full?: boolean } = {}) {
  return runSourceLater(h, "comments", opts);
}

/** The owner's live gallery deviations, newest first (the order of /gallery/all). */
function ownDeviations(): Dev[] {
  const t = h.sim.truth;
  const inGallery = new Set(t.galleryFolders.filter((f) => f.ownerId === t.ownerId).flatMap((f) => f.deviationIds));
  return [...t.deviations.values()]
    .filter((d) => d.authorId === t.ownerId && !d.isDeleted && inGallery.has(d.deviationid))
    .sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId);
}

function expectedComments() {
  const own = new Set(ownDeviations().map((d) => d.deviationid));
  return h.sim.truth.comments
    .filter((c) => c.target.kind === "deviation" && own.has(c.target.id))
    .map((c) => ({
      commentid: c.commentid,
      parentid: c.parentid,
      subject_id: c.target.id,
      author_userid: c.userId,
      posted_at: new Date(c.posted.replace("+0000", "Z")),
      body: c.hidden ? "" : c.body,
      hidden: c.hidden,
      removed_at: null,
    }))
    .sort((a, b) => a.commentid.localeCompare(b.commentid));
}

async function mirrored() {
  const { rows } = await h.pool.query(
    "SELECT commentid, parentid, subject_id, author_userid, posted_at, body, hidden, removed_at FROM comments WHERE subject_kind = 'deviation' ORDER BY commentid",
  );
  return rows;
}

describe(commentsSource.name, () => {
  it("mirrors every comment on the owner's deviations, deep replies included", async () => {
    const { result } = await runLater();
    expect(result.status).toBe("ok");
    const expected = expectedComments();
    expect(expected.length).toBeGreaterThan(100);
    expect(await mirrored()).toEqual(expected);
    const { rows } = await h.pool.query("SELECT commentid FROM comments WHERE commentid = ANY($1)", [deepChain]);
    expect(rows).toHaveLength(9);
    const { rows: authors } = await h.pool.query(
      "SELECT count(*)::int AS n FROM comments c LEFT JOIN users u ON u.userid = c.author_userid WHERE u.userid IS NULL",
    );
    expect(authors[0]?.n).toBe(0);
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.full).toBe(false);
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up a new comment on a recent deviation without a sweep", async () => {
    await runLater(); // mirrored before the changes
    const recent = ownDeviations()[1] as Dev;
    const added = h.sim.activity({ kind: "new_comment", deviationid: recent.deviationid, body: "Love the colours" }) as { commentid: string };
    const { result, calls, routes } = await runLater();
    expect(result.counters).toEqual({ new: 1, changed: 0, removed: 0 });
    // The first page of the "all" view (changed), that thread, the second page (unchanged: stop).
    expect(calls, routes.join("\n")).toBe(3);
    expect(await mirrored()).toEqual(expectedComments());
    const { rows } = await h.pool.query("SELECT body, subject_id FROM comments WHERE commentid = $1", [added.commentid]);
    expect(rows).toEqual([{ body: "Love the colours", subject_id: recent.deviationid }]);
  });

  it("picks up a new comment deep in the gallery on a full sweep, and changes nothing else", async () => {
    await runLater(); // mirrored before the changes
    const own = ownDeviations();
    const old = own[own.length - 2] as Dev;
    h.sim.activity({ kind: "new_comment", deviationid: old.deviationid, body: "Found this late" });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("ok");
    expect(result.counters).toEqual({ new: 1, changed: 0, removed: 0 });
    expect(await mirrored()).toEqual(expectedComments());
  });
});
