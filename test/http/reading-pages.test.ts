// The reading pages over HTTP (test/helpers/reading-fixture.ts, 450 extra notes and messages): lists walked to their
// end through the keyset cursor of each page's "next" link (every row once, none skipped where times tie), the same
// address giving the same page again, a cursor dvault did not write refused in one line, and a 404 page for ids the
// archive does not hold.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kysely } from "../../src/db/kysely.ts";
import { LIST_STATEMENTS, NOTE_THREAD, STATUS_IN_FEED } from "../../src/db/reading.repository.ts";
import { MESSAGES_PAGE_SIZE } from "../../src/http/pages/reading.ts";
import { createReadingFixture, IDS, type ReadingFixture } from "../helpers/reading-fixture.ts";

const BULK = 450;
let f: ReadingFixture;
let dir: string;

const get = async (p: string) => {
  const res = await fetch(`${f.dash.url}${p}`, { redirect: "manual" });
  return { status: res.status, body: await res.text(), location: res.headers.get("location") };
};
const decode = (s: string) => s.replaceAll("&amp;", "&");
const nextOf = (body: string) => {
  const m = /<a href="([^"]+)" rel="next">/.exec(body);
  return m ? decode(m[1]!) : undefined;
};
/** The ids of a list page's rows, in order. */
const rowIds = (body: string, prefix: string) =>
  [...body.matchAll(new RegExp(`<li data-jk[^>]*>[^]*?href="/${prefix}/([^"/]+)"`, "g"))].map((m) => decodeURIComponent(m[1]!));

describe("reading pages over HTTP", () => {
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-reading-http-"));
    f = await createReadingFixture(dir, { sync: false, bulk: BULK });
  });
  afterAll(async () => {
    await f?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("walks the messages page by page through the cursor: every message or stack once, 200 a page, the same address the same page", async () => {
    // A stack once, as its newest message.
    const { rows } = await f.h.pool.query<{ messageid: string }>(
      `SELECT messageid FROM messages m WHERE stackid IS NULL OR messageid = (SELECT s.messageid FROM messages s WHERE s.stackid = m.stackid ORDER BY s.ts DESC, s.messageid DESC LIMIT 1)
       ORDER BY ts DESC, messageid DESC`,
    );
    expect(rows.map((r) => r.messageid)).toContain("rf-stacked-3");
    expect(rows.map((r) => r.messageid)).not.toContain("rf-stacked-2");
    const seen: string[] = [];
    let url: string | undefined = "/messages";
    const pages: string[] = [];
    while (url) {
      const page = await get(url);
      expect(page.status).toBe(200);
      const ids = rowIds(page.body, "messages");
      expect(ids.length).toBeLessThanOrEqual(MESSAGES_PAGE_SIZE);
      seen.push(...ids);
      pages.push(url);
      url = nextOf(page.body);
    }
    expect(seen).toEqual(rows.map((r) => r.messageid));
    expect(pages.length).toBe(Math.ceil(rows.length / MESSAGES_PAGE_SIZE));
    // A deep page again (Back, reload): the same rows, and a link back to the newest.
    const deep = pages[2]!;
    const [a, b] = [await get(deep), await get(deep)];
    expect(rowIds(b.body, "messages")).toEqual(rowIds(a.body, "messages"));
    expect(a.body).toContain('href="/messages" rel="first"');
  });

  it("walks notes whose times tie (two a minute) without skipping or repeating one, within a filter", async () => {
    const { rows } = await f.h.pool.query<{ noteid: string }>(
      "SELECT noteid FROM notes WHERE NOT coalesce(sent, false) ORDER BY coalesce(ts, '-infinity') DESC, noteid DESC",
    );
    const seen: string[] = [];
    let url: string | undefined = "/notes?flag=received";
    while (url) {
      const page = await get(url);
      expect(page.status).toBe(200);
      seen.push(...rowIds(page.body, "notes"));
      url = nextOf(page.body);
      if (url) expect(url).toContain("flag=received");
    }
    expect(seen).toEqual(rows.map((r) => r.noteid));
  });

  it("reads a deep page along its index after the cursor: no sort of the whole table", async () => {
    // The statements the repository runs, compiled as it compiles them: their text and their bound values.
    const db = kysely(f.h.pool);
    const at = { key: "2020-01-01T03:00:00.000Z", id: "bulk-x" };
    const plans = {
      messages: LIST_STATEMENTS.messages(undefined, at, 201).compile(db),
      notes: LIST_STATEMENTS.notes({}, at, 51).compile(db),
      watch: LIST_STATEMENTS.watch(at, 31).compile(db),
    };
    for (const [name, statement] of Object.entries(plans)) {
      // A few hundred rows would be sorted as fast: the planner is asked whether the index can give the order at all.
      const client = await f.h.pool.connect();
      await client.query("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${statement.sql}`, [...statement.parameters]);
      await client.query("RESET ALL");
      client.release();
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan, name).toMatch(/Index Scan using (messages|notes|feed_items)_reading_idx/);
      expect(plan, name).not.toMatch(/Sort/);
    }
    // Lookups by a page's id: a status the feed carried but the statuses table lacks (once per such status on a
    // /watch page), and a note's thread (the account's notes of the same subject; the table's statistics say the
    // account has hundreds, all from one sender).
    await f.h.pool.query("ANALYZE notes");
    for (const [statement, index] of [
      [STATUS_IN_FEED("some-id").compile(db), "feed_items_statusid_idx"],
      [NOTE_THREAD("some-id").compile(db), "notes_thread_idx"],
    ] as const) {
      const client = await f.h.pool.connect();
      await client.query("SET enable_seqscan = off");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${statement.sql}`, [...statement.parameters]);
      await client.query("RESET ALL");
      client.release();
      expect(rows.map((r) => r["QUERY PLAN"]).join("\n"), index).toMatch(new RegExp(`Index (Only )?Scan (using|on) ${index}`));
    }
  });

  it("walks the artists by name through the cursor, names differing only in case included", async () => {
    const seen: string[] = [];
    let url: string | undefined = "/artists";
    let pages = 0;
    while (url) {
      const page = await get(url);
      seen.push(...rowIds(page.body, "artists"));
      url = nextOf(page.body);
      pages += 1;
    }
    expect(pages).toBeGreaterThan(1);
    const bulk = seen.filter((u) => /^bulk\d{4}$/i.test(u));
    expect(bulk).toHaveLength(150);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("filters messages by kind (?kind=)", async () => {
    const page = await get("/messages?kind=mentions");
    expect(rowIds(page.body, "messages")).toEqual(["rf-msg-hostile"]);
  });

  it("refuses a cursor it did not write, in one line, and answers 404 for ids the archive does not hold", async () => {
    const bad = await get("/messages?after=not-a-cursor");
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("start again from /messages");
    // Shaped like dvault's cursor, with a time PostgreSQL would refuse: the same 400, not a 500.
    const forged = Buffer.from(JSON.stringify(["2024-13-45T25:61:61.000Z", "x"])).toString("base64url");
    for (const p of ["/notes", "/messages", "/watch", `/artists/${encodeURIComponent(f.owner.username)}`]) {
      const res = await get(`${p}?after=${forged}`);
      expect(res.status, p).toBe(400);
      expect(res.body, p).toContain(`start again from ${p}`);
    }
    for (const p of ["/notes/nope", "/messages/nope", "/messages/stack/nope", "/statuses/nope", "/read/nope", "/artists/nobody-here", "/comments/nope"]) {
      const res = await get(p);
      expect(res.status, p).toBe(404);
      expect(res.body, p).toContain("Not in the archive");
    }
  });

  it("sends a comment to the page of what it was written on, at the comment", async () => {
    expect((await get("/comments/rf-c-3")).location).toBe("/read/rf-journal-0001#c-rf-c-3");
    expect((await get("/comments/rf-c-5")).location).toBe("/statuses/rf-status-0001#c-rf-c-5");
  });

  it("says when an artist's lists and a stack hold more than the page shows: the 101st work not archived, the 21st status, the 201st message", async () => {
    const db = f.h.pool;
    const userid = "rf-prolific";
    await db.query(`INSERT INTO users (userid, username) VALUES ($1, 'Prolific')`, [userid]);
    const add = async (works: number, statuses: number) => {
      await db.query(
        `INSERT INTO deviations (deviationid, title, author_userid, type, tier_access, published_at, raw)
         SELECT 'rf-pro-d-' || i, 'locked ' || i, $1, 'image', 'locked', timestamptz '2024-01-01' + i * interval '1 hour', '{}' FROM generate_series(1, $2::int) i
         ON CONFLICT DO NOTHING`,
        [userid, works],
      );
      await db.query(
        `INSERT INTO statuses (statusid, author_userid, body, posted_at, raw)
         SELECT 'rf-pro-s-' || i, $1, '<p>status ' || i || '</p>', timestamptz '2024-01-01' + i * interval '1 hour', '{}' FROM generate_series(1, $2::int) i
         ON CONFLICT DO NOTHING`,
        [userid, statuses],
      );
    };
    await add(100, 20);
    let page = (await get("/artists/Prolific")).body;
    expect(page).toContain("locked 100");
    expect(page).not.toContain("more follow");
    expect(page).not.toContain("older ones are archived too");
    await add(101, 21);
    page = (await get("/artists/Prolific")).body;
    expect(page).toContain("The newest 100 are listed, and more follow.");
    expect(page).toContain('href="/archive?artist=Prolific&amp;notfull=1"');
    expect(page).not.toContain("locked 1<"); // the oldest is the one left out
    expect(page).toContain("The newest 20 are shown; older ones are archived too");

    const acct = (await db.query<{ id: number }>("SELECT id FROM accounts ORDER BY id LIMIT 1")).rows[0]!.id;
    const stack = async (n: number) =>
      db.query(
        `INSERT INTO messages (account_id, messageid, box, type, ts, stackid, html, raw)
         SELECT $1, 'rf-pro-m-' || i, 'feed', 'watch', timestamptz '2024-01-01' + i * interval '1 minute', 'rf-pro-stack', '<p>m</p>', '{}' FROM generate_series(1, $2::int) i
         ON CONFLICT DO NOTHING`,
        [acct, n],
      );
    await stack(MESSAGES_PAGE_SIZE);
    expect((await get("/messages/stack/rf-pro-stack")).body).toContain(`${MESSAGES_PAGE_SIZE} messages archived in this stack`);
    await stack(MESSAGES_PAGE_SIZE + 1);
    const whole = (await get("/messages/stack/rf-pro-stack")).body;
    expect(whole).toContain(`The newest ${MESSAGES_PAGE_SIZE} of more than ${MESSAGES_PAGE_SIZE} messages archived in this stack`);
    expect(rowIds(whole, "messages")).toHaveLength(MESSAGES_PAGE_SIZE);
  });

  it("answers a thumbnail its storage cannot read with a 503 that says so, not the 404 of a picture not archived", async () => {
    const thumbs = path.join(dir, "thumbnails");
    const aside = `${thumbs}-aside`;
    const had = await fs.stat(thumbs).then(
      () => true,
      () => false,
    );
    if (had) await fs.rename(thumbs, aside);
    // A file where the thumbnails' folder goes: every read and write under it fails (ENOTDIR), as a failed disk or bucket would.
    await fs.writeFile(thumbs, "not a folder");
    try {
      const res = await fetch(`${f.dash.url}/thumb/s/${f.artSha}.webp`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain("storage not answering");
      const absent = await fetch(`${f.dash.url}/thumb/s/${"0".repeat(64)}.webp`);
      expect(absent.status).toBe(404);
      expect(await absent.text()).toContain("not archived");
    } finally {
      await fs.rm(thumbs, { force: true });
      if (had) await fs.rename(aside, thumbs);
    }
  });

  it("answers a stored file its storage cannot read with a 503 that says it is not lost, not dvault's 500", async () => {
    const { rows } = await f.h.pool.query<{ id: string }>(`SELECT id::text FROM downloads WHERE deviationid = $1 AND status = 'done' LIMIT 1`, [IDS.art]);
    const id = rows[0]!.id;
    expect((await fetch(`${f.dash.url}/files/${id}`)).status).toBe(200);
    const originals = path.join(dir, "originals");
    await fs.rename(originals, `${originals}-aside`);
    await fs.writeFile(originals, "not a folder");
    try {
      const res = await fetch(`${f.dash.url}/files/${id}`);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe("the archive's storage did not answer for this file (ENOTDIR); it is not lost: try again once the storage answers\n");
    } finally {
      await fs.rm(originals, { force: true });
      await fs.rename(`${originals}-aside`, originals);
    }
  });

  it("shows a thread longer than a page a page at a time: its total, every comment once in order, a comment's link at its page", async () => {
    // 1 234 comments on a status of this test's own: times that tie, some undated (last), replies across pages.
    const statusid = "rf-status-long";
    await f.h.pool.query(`INSERT INTO statuses (statusid, author_userid, body, posted_at, raw) VALUES ($1, $2, '<p>Long thread.</p>', now(), '{}')`, [
      statusid,
      f.owner.userid,
    ]);
    const n = 1234;
    const ids = Array.from({ length: n }, (_, i) => `rf-long-${String(i).padStart(4, "0")}`);
    const at = (i: number) => (i >= n - 7 ? null : new Date(Date.UTC(2024, 0, 1) + Math.floor(i / 2) * 60_000).toISOString());
    await f.h.pool.query(
      `INSERT INTO comments (commentid, parentid, subject_kind, subject_id, author_userid, posted_at, body, raw)
       SELECT id, CASE WHEN i % 10 = 9 THEN ($2::text[])[(i - 8)::int] END, 'status', $3, $4, at, '<p>c' || i || '</p>', '{}'
       FROM unnest($2::text[], $1::timestamptz[]) WITH ORDINALITY AS u(id, at, i)`,
      [ids.map((_, i) => at(i)), ids, statusid, f.owner.userid],
    );
    const order = ids; // the ids sort as their times do, the undated ones last
    const seen: string[] = [];
    let url: string | undefined = `/statuses/${statusid}`;
    let pages = 0;
    while (url) {
      const page = await get(url);
      expect(page.status).toBe(200);
      expect(page.body).toContain(`of ${n.toLocaleString("en")} archived`);
      seen.push(...[...page.body.matchAll(/<li id="c-(rf-long-\d{4})"/g)].map((m) => m[1]!));
      const next = /<a href="([^"]+)" data-comments-next>/.exec(page.body);
      url = next ? decode(next[1]!) : undefined;
      pages += 1;
    }
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual(order);
    expect(seen.filter((id, i) => seen.indexOf(id) !== i)).toEqual([]);

    // A comment deep in the thread opens the page that holds it; one on the first page, the page alone.
    for (const id of [ids[1000]!, ids[n - 1]!]) {
      const location = (await get(`/comments/${id}`)).location!;
      expect(location).toMatch(/[?]comments_from=/);
      expect((await get(location.replace(/#.*/, ""))).body).toContain(`<li id="c-${id}"`);
    }
    expect((await get(`/comments/${ids[3]}`)).location).toBe(`/statuses/${statusid}#c-${ids[3]}`);

    // A cursor dvault did not write: the oldest comments, said in one line, not a 500.
    const forged = await get(`/statuses/${statusid}?comments_from=bm9wZQ`);
    expect(forged.status).toBe(200);
    expect(forged.body).toContain("is not one dvault wrote: the oldest comments are shown");
    expect(forged.body).toContain(`<li id="c-${ids[0]}"`);
  });
});
