// The dashboard's search ranks a bounded set (issue 32): the newest `bound` hits, never a common word's million, and
// says when more match. The bound is made small here so a few rows go past it; a note two accounts hold is one hit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { searchPage as searchPageHtml } from "../../src/http/pages/search.ts";
import { searchPage } from "../../src/search/search.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
  await t.pool.query("INSERT INTO accounts (name, updated_at) VALUES ('one', now()), ('two', now())");
  await t.pool.query("INSERT INTO users (userid, username, raw) VALUES ('bu-1', 'Keeper', '{}')");
  // Six works about lighthouses, a month apart; the oldest says it three times, so it would rank first of all.
  await t.pool.query(
    `INSERT INTO deviations (deviationid, title, author_userid, published_at, raw)
     SELECT 'b' || i, CASE WHEN i = 1 THEN 'Lighthouse lighthouse lighthouse' ELSE 'A lighthouse, study ' || i END, 'bu-1',
       timestamptz '2024-01-01' + i * interval '30 days', '{}'::jsonb
     FROM generate_series(1, 6) i`,
  );
  // One note both accounts archived (a conversation between them), newer than every work.
  await t.pool.query(
    `INSERT INTO notes (account_id, noteid, ts, subject, body, raw) SELECT a.id, 'shared-note', '2025-06-01', 'The lighthouse', 'See you at the lighthouse', '{}'
     FROM accounts a`,
  );
});
afterAll(async () => {
  await t?.drop();
});

const search = (bound?: number, offset = 0) => searchPage(t.pool, { text: "lighthouse", limit: 10, offset, archiveDir: "/archive", bound });

describe("search with a bound", () => {
  it("ranks only the newest hits and says that more match", async () => {
    const page = await search(3);
    expect(page).toMatchObject({ total: 3, more: true });
    // The note (newest) and the two newest works, best first; the oldest work, the best match of all, is past the bound.
    expect(page.hits.map((h) => h.id).sort()).toEqual(["b5", "b6", "shared-note"]);
    expect(page.hits.map((h) => h.id)).not.toContain("b1");
    const html = searchPageHtml({ query: "lighthouse", ...page, page: 1, pageSize: 10, files: new Map() });
    expect(html).toContain("1–3 of more than 3 results for “lighthouse”, ranked among the newest 3");
    expect(html).toContain('data-more="true"');
  });

  it("counts every hit, one per note however many accounts hold it, when they fit in the bound", async () => {
    const page = await search(7);
    expect(page).toMatchObject({ total: 7, more: false });
    expect(page.hits[0]?.id).toBe("b1");
    expect(page.hits.filter((h) => h.id === "shared-note")).toHaveLength(1);
    const html = searchPageHtml({ query: "lighthouse", ...page, page: 1, pageSize: 10, files: new Map() });
    expect(html).toContain("1–7 of 7 results for “lighthouse”");
    expect(html).not.toContain("more than");
  });

  it("says there are more on a page past the bound's last", async () => {
    const page = await search(3, 20);
    expect(page).toMatchObject({ hits: [], total: 3, more: true });
    const html = searchPageHtml({ query: "lighthouse", ...page, page: 3, pageSize: 10, files: new Map() });
    expect(html).toContain("More than 3 results for “lighthouse”; this page is past the last");
  });

  it("ranks every hit without a bound (dvault search)", async () => {
    const page = await search(undefined);
    expect(page).toMatchObject({ total: 7, more: false });
    expect(page.hits[0]?.id).toBe("b1");
  });
});
