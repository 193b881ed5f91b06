// The digest says when archived works went upstream (issue 26): one of the account's own works found deleted,
// another refused without being said deleted, each with whether the archive keeps it; and nothing for a work
// dvault never saw live.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectDigest } from "../../src/digest/collect.ts";
import { renderDigest } from "../../src/digest/render.ts";
import type { DigestData } from "../../src/digest/types.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createSyncHarness, runSourceLater, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let data: DigestData;
let deleted: { id: string; title: string };
let unavailable: { id: string; title: string };

beforeAll(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 60, galleryFolders: 2 } }, sources: [gallerySource] });
  await runSourceLater(h, "gallery");
  const start = h.sim.clock.now();
  const own = h.sim.truth.galleryFolders
    .filter((f) => f.ownerId === h.sim.truth.ownerId)
    .flatMap((f) => f.deviationIds)
    .map((id) => h.sim.truth.deviations.get(id))
    .filter((d) => d !== undefined && !d.isDeleted && d.kind === "image");
  const [a, b] = own;
  deleted = { id: a?.deviationid as string, title: a?.title as string };
  unavailable = { id: b?.deviationid as string, title: b?.title as string };
  h.sim.activity({ kind: "delete_deviation", deviationid: deleted.id, lookup: { kind: "refusal", errorCode: 0 } });
  h.sim.activity({ kind: "delete_deviation", deviationid: unavailable.id, lookup: { kind: "refusal", errorCode: 2 } });
  // The first's original is in the archive; the second's is not.
  const stored = await h.pool.query(
    "UPDATE downloads SET status = 'done', path = 'originals/x.jpg', sha256 = $2, done_at = now() WHERE deviationid = $1 AND kind = 'original'",
    [deleted.id, "a".repeat(64)],
  );
  expect(stored.rowCount).toBe(1);
  const run = await runSourceLater(h, "gallery");
  expect(run.result.counters.removed).toBe(2);
  const now = new Date(h.sim.clock.now().getTime() + 1000);
  data = await collectDigest({ db: h.pool, window: { start, end: now }, now, archiveDir: "/tmp" });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe("the digest's changes", () => {
  it("lists the account's works found gone upstream, each with the service's reading", () => {
    const works = data.changes.filter((c) => c.kind === "work_removed");
    expect(works.map((c) => [c.deviation?.deviationid, c.reason, c.relation, c.deviation?.archived]).sort()).toEqual(
      [
        [deleted.id, "deleted", "own", "original"],
        [unavailable.id, "unavailable", "own", null],
      ].sort(),
    );
  });

  it("says so in words, and whether the archive keeps the work", () => {
    const { text, html } = renderDigest(data, { timezone: "UTC" });
    expect(text).toContain(`“${deleted.title}”, one of your works, was deleted on DeviantArt. [your archive keeps it]`);
    expect(text).toContain(
      `“${unavailable.title}”, one of your works, is no longer available on DeviantArt (refused without being said deleted). [not archived]`,
    );
    expect(html).toContain("one of your works, was deleted on DeviantArt.");
  });
});
