// Hostile tier, issue 27 row 4: the dashboard holds a burst. 200 parallel `GET /archive?page=N` on a 200 000-work
// mirror gave 185 HTTP 500 from the database pool's timeout; here a mirror of a few thousand works made with
// SQL, a pool of two connections and a limit of two requests per page at once: a burst over real sockets gets
// 200s and 503s with Retry-After, never a 500, and /metrics counts the 503s as busy, apart from errors. A pool
// held to its last connection answers 503 too. A deep page is read from the browser's index alone (EXPLAIN),
// and the pager's next link reads the page after a cursor, not past an offset. The 200 000-work run is
// test/faults/dashboard-load.faults.test.ts and bench/dashboard-load.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool } from "../../src/db/connect.ts";
import { recentItemsStatement } from "../../src/db/archive-browser.repository.ts";
import { decodeCursor } from "../../src/http/browse-cursor.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { fillLoadMirror } from "../helpers/dashboard-load-mirror.ts";
import { rawRequest } from "../helpers/dashboard-request.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const WORKS = 4000;
const LIMIT = 2;
const QUEUE = 6;
const BURST = 60;

let h: SyncHarness;
let dash: RunningDashboard;

/** A GET on its own connection, with its Retry-After. */
async function get(url: string): Promise<{ status: number; retryAfter: string | undefined; text: string }> {
  const a = await rawRequest(url);
  return { status: a.status, retryAfter: a.headers["retry-after"] as string | undefined, text: a.text };
}

/** The /archive answers the metrics page counts, busy and ok (0 before the first). */
function archiveAnswers(metrics: string): { busy: number; ok: number } {
  const count = (outcome: string) =>
    Number(new RegExp(`^dvault_http_answers_total\\{route="/archive",outcome="${outcome}"\\} (\\d+)$`, "m").exec(metrics)?.[1] ?? 0);
  return { busy: count("busy"), ok: count("ok") };
}

beforeAll(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } }, overrides: { poolSize: 2 } });
  await fillLoadMirror(h.pool, h.account.id, { works: WORKS });
  const config = { ...h.services.config, httpLoad: { concurrency: LIMIT, queue: QUEUE, queueWaitMs: 20_000 } };
  dash = await startDashboard({ ...h.services, config }, { host: "127.0.0.1", port: 0 });
}, 90_000);

afterAll(async () => {
  await dash?.close();
  await h?.close();
});

describe("the dashboard under a burst", () => {
  it(`answers ${BURST} parallel archive pages with 200s and 503s that say when to come back, never a 500`, async () => {
    // The dashboard's counters so far: the other tests' pages count too, whichever ran first.
    const before = archiveAnswers(await (await get(`${dash.url}/metrics`)).text);
    const pages = Array.from({ length: BURST }, (_, i) => 1 + ((i * 7) % Math.ceil(WORKS / 48)));
    const answers = await Promise.all(pages.map((p) => get(`${dash.url}/archive?page=${p}`)));
    const by = (status: number) => answers.filter((a) => a.status === status);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 503).map((a) => `${a.status} ${a.text.slice(0, 200)}`)).toEqual([]);
    // The first LIMIT run, QUEUE wait their turn; the rest are told to come back.
    expect(by(200).length).toBeGreaterThanOrEqual(LIMIT + QUEUE);
    expect(by(503).length).toBeGreaterThan(0);
    for (const busy of by(503)) {
      expect(Number(busy.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(busy.text).toMatch(/^dvault: the dashboard is busy \(.+\); try again in \d+ s\n$/);
    }
    for (const ok of by(200)) expect(ok.text).toContain(`data-total="${WORKS}"`);

    const metrics = await (await get(`${dash.url}/metrics`)).text;
    const after = archiveAnswers(metrics);
    expect(after.busy - before.busy).toBe(by(503).length);
    expect(after.ok - before.ok).toBe(by(200).length);
    expect(metrics).not.toMatch(/outcome="error"/);
  });

  it("answers 503 with Retry-After when the database pool has no connection to give, not a 500", async () => {
    const pool = createPgPool(h.db.url, 1, { connectionTimeoutMs: 200 });
    const held = await pool.connect();
    const starved = await startDashboard({ ...h.services, pool }, { host: "127.0.0.1", port: 0 });
    try {
      const res = await get(`${starved.url}/archive?page=3`);
      expect(res.status).toBe(503);
      expect(Number(res.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(res.text).toBe("dvault: the dashboard is busy (every database connection is in use); try again in 2 s\n");
      held.release();
      expect((await get(`${starved.url}/archive?page=3`)).status).toBe(200);
    } finally {
      await starved.close();
      await pool.end();
    }
  });

  it("reads a deep page from the browser's index alone, and the next page after a cursor", async () => {
    const deep = recentItemsStatement({ limit: 48, offset: WORKS - 100 });
    const { rows } = await h.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${deep.text}`, deep.values);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    // The page's LIMIT reads straight off the index: no sort of the works, no scan of the table.
    expect(plan).toMatch(/Limit [^\n]*\n\s*->\s+Index Only Scan using deviations_browse_idx on deviations/);

    // The pager's next link carries the cursor of the page's last item: the page after it, the same as by number.
    const page5 = await get(`${dash.url}/archive?page=5`);
    const next = /data-next="([^"]+)"/.exec(page5.text)?.[1]?.replace(/&amp;/g, "&");
    // One paging model: the next page is named by its cursor alone (it carries the position too).
    expect(next).toMatch(/^\/archive\?after=[\w-]+$/);
    const tiles = (text: string) => [...text.matchAll(/<a class="thumb" href="\/item\/([^"]+)"[^>]*data-pos="(\d+)"/g)].map((m) => `${m[1]}@${m[2]}`);
    const byCursor = tiles((await get(`${dash.url}${next}`)).text);
    expect(byCursor).toHaveLength(48);
    expect(byCursor).toEqual(tiles((await get(`${dash.url}/archive?page=6`)).text));
    const keyset = recentItemsStatement({ limit: 48, offset: 0, after: decodeCursor(new URL(next!, dash.url).searchParams.get("after") ?? undefined) });
    const keysetPlan = (await h.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${keyset.text}`, keyset.values)).rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(keysetPlan).toMatch(
      /Limit [^\n]*\n\s*->\s+Index Only Scan using deviations_browse_idx on deviations[^\n]*\n\s*Index Cond: \(\(COALESCE\(published_at[^\n]*<=/,
    );
  });
});
