// The archive grid counts a filter's works only up to a bound (issue 32): past it the page says "more than N" and its
// date scrubber offers the archive's months without counts, never a count it did not make. The bound is made small
// here; the whole archive is always counted exactly, from its maintained counters.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArchiveBrowserRepository } from "../../src/db/archive-browser.repository.ts";
import { archivePage } from "../../src/http/pages/archive.ts";
import { countLine } from "../../src/http/pages/layout.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
  // Five pictures and two texts, a month apart.
  await t.pool.query(
    `INSERT INTO deviations (deviationid, title, type, published_at, raw)
     SELECT 'cb' || i, 'Work ' || i, (CASE WHEN i <= 5 THEN 'image' ELSE 'literature' END)::deviation_type,
       timestamptz '2024-01-15' + i * interval '31 days', '{}'::jsonb
     FROM generate_series(1, 7) i`,
  );
});
afterAll(async () => {
  await t?.drop();
});

const emptyChoices = { artists: [], galleries: [], collections: [] };

describe("the grid's bounded count", () => {
  it("counts a filter up to the bound, and answers nothing past it", async () => {
    const repo = new ArchiveBrowserRepository(t.pool);
    expect(await repo.boundedMonthCounts({ type: "image" }, 3)).toBeUndefined();
    expect(await repo.boundedMonthCounts({ type: "image" }, 5)).toHaveLength(5);
    expect(await repo.boundedMonthCounts({ type: "literature" }, 3)).toEqual([
      { month: "2024-08", items: 1 },
      { month: "2024-07", items: 1 },
    ]);
    // The whole archive is never bounded: its counters say 7.
    const whole = await repo.boundedMonthCounts({}, 3);
    expect(whole?.reduce((n, m) => n + m.items, 0)).toBe(7);
  });

  it("says 'more than' the bound on the page, and shows the months without counts", async () => {
    const months = (await new ArchiveBrowserRepository(t.pool).monthCounts({})).slice(0, 2);
    const page = archivePage({
      filter: { type: "image", archived: false, notFull: false },
      choices: emptyChoices,
      months,
      monthsCounted: false,
      items: [],
      page: 1,
      pageSize: 48,
      total: 3,
      more: true,
    });
    expect(page).toContain("More than 3 items match these filters; this page is past the last.");
    expect(page).not.toContain("2024-08: 1 item");
    expect(page).toContain('title="2024-08"');
    // A page with items: its count line, which app.js keeps when it appends the next page.
    expect(String(countLine(49, 96, 10_000, true))).toBe(
      '<p class="count" data-from="49" data-to="96" data-total="10000" data-more="1">49–96 of more than 10\u00a0000</p>',
    );
  });
});
