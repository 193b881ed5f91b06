import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeviationSchema } from "../../src/api/types.ts";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { FolderRepository } from "../../src/db/folder.repository.ts";
import { distinctUsers } from "../../src/db/mirror-rows.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { at, createMirrorDb, makeDeviation, makeMetadata, makeTombstone, uuid, type MirrorDb } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let deviations: DeviationRepository;
let users: UserRepository;
let folders: FolderRepository;

beforeAll(async () => {
  m = await createMirrorDb();
  deviations = new DeviationRepository(m.pool);
  users = new UserRepository(m.pool);
  folders = new FolderRepository(m.pool);
});
afterAll(async () => {
  await m?.drop();
});

/** Each test uses its own id range so tests stay independent on one database. */
function page(from: number, count: number, extra: Partial<Parameters<typeof makeDeviation>[0]> = {}) {
  return Array.from({ length: count }, (_, i) => makeDeviation({ n: from + i, ...extra }));
}

async function history(ids: string[]) {
  const { rows } = await m.pool.query<{ deviationid: string; field: string; old_value: unknown; new_value: unknown }>(
    "SELECT deviationid, field, old_value, new_value FROM deviation_history WHERE deviationid = ANY($1) ORDER BY deviationid, field",
    [ids],
  );
  return rows;
}

describe(DeviationRepository.name, () => {
  it("upserting a page twice inserts it once and then reports it unchanged", async () => {
    const devs = page(1, 24);
    await users.upsertUsers(distinctUsers(devs.map((d) => d.author)), at("2025-01-01T00:00:00Z"));
    expect(await deviations.upsertDeviations(devs, at("2025-01-01T00:00:00Z"))).toEqual({ inserted: 24, changed: 0, unchanged: 0, removed: 0 });
    expect(
      await deviations.upsertMetadata(
        devs.map((_d, i) => makeMetadata({ n: 1 + i })),
        at("2025-01-01T00:00:00Z"),
      ),
    ).toEqual({
      inserted: 24,
      changed: 0,
      unchanged: 0,
    });

    const again = page(1, 24, { token: "tok2" });
    expect(await deviations.upsertDeviations(again, at("2025-01-01T01:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 24, removed: 0 });
    expect(
      await deviations.upsertMetadata(
        again.map((_, i) => makeMetadata({ n: 1 + i, token: "tok2" })),
        at("2025-01-01T01:00:00Z"),
      ),
    ).toEqual({
      inserted: 0,
      changed: 0,
      unchanged: 24,
    });

    const { rows } = await m.pool.query(
      "SELECT count(*)::int AS n, count(DISTINCT deviationid)::int AS d, min(first_seen_at) AS first, max(last_seen_at) AS last FROM deviations WHERE deviationid = ANY($1)",
      [devs.map((d) => d.deviationid)],
    );
    expect(rows[0]).toMatchObject({ n: 24, d: 24, first: at("2025-01-01T00:00:00Z"), last: at("2025-01-01T01:00:00Z") });
    expect(await history(devs.map((d) => d.deviationid))).toEqual([]);
  });

  it("maps the typed columns from the service's shapes (epoch-seconds published_time, type, stats)", async () => {
    const image = makeDeviation({ n: 50, publishedTime: "1600102888", favourites: 7, comments: 3 });
    const journal = makeDeviation({ n: 51, kind: "journal" });
    const literature = makeDeviation({ n: 52, kind: "literature" });
    await deviations.upsertDeviations([image, journal, literature], at("2025-01-02T00:00:00Z"));
    const { rows } = await m.pool.query(
      "SELECT deviationid, type, published_at, stats_favourites, stats_comments, author_userid, download_filesize, is_deleted, removed_at FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid",
      [[uuid(50), uuid(51), uuid(52)]],
    );
    expect(rows).toEqual([
      expect.objectContaining({
        type: "image",
        published_at: new Date(1600102888 * 1000),
        stats_favourites: 7,
        stats_comments: 3,
        author_userid: uuid(1, "u"),
        download_filesize: "234567",
        is_deleted: false,
        removed_at: null,
      }),
      expect.objectContaining({ type: "journal" }),
      expect.objectContaining({ type: "literature" }),
    ]);
  });

  it("keeps one history row per edited field, none for re-signed URLs, counters or reordered tags", async () => {
    const t0 = at("2025-02-01T00:00:00Z");
    const t1 = at("2025-02-01T06:00:00Z");
    const ids = [100, 101, 102, 103, 104].map((n) => uuid(n));
    await deviations.upsertDeviations(page(100, 5), t0);
    await deviations.upsertMetadata(
      [100, 101, 102, 103, 104].map((n) => makeMetadata({ n, tags: ["a", "b", `t${n}`] })),
      t0,
    );

    const edited = [
      makeDeviation({ n: 100, title: "Work 100 (final)", token: "tok9" }),
      makeDeviation({ n: 101, token: "tok9" }),
      makeDeviation({ n: 102, token: "tok9" }),
      makeDeviation({ n: 103, token: "tok9" }),
      makeDeviation({ n: 104, token: "tok9", favourites: 999, comments: 50 }),
    ];
    expect(await deviations.upsertDeviations(edited, t1)).toEqual({ inserted: 0, changed: 1, unchanged: 4, removed: 0 });
    const metadata = [
      makeMetadata({ n: 100, tags: ["a", "b", "t100"], token: "tok9" }),
      makeMetadata({ n: 101, tags: ["a", "b", "t101"], description: "<p>Rewritten</p>", token: "tok9" }),
      makeMetadata({ n: 102, tags: ["a", "b", "t102", "new"], token: "tok9" }),
      makeMetadata({ n: 103, tags: ["t103", "b", "a"], token: "tok9" }),
      makeMetadata({ n: 104, tags: ["a", "b", "t104"], token: "tok9", views: 5000 }),
    ];
    expect(await deviations.upsertMetadata(metadata, t1)).toEqual({ inserted: 0, changed: 2, unchanged: 3 });

    const rows = await history(ids);
    expect(rows).toEqual([
      { deviationid: uuid(100), field: "title", old_value: "Work 100", new_value: "Work 100 (final)" },
      expect.objectContaining({ deviationid: uuid(101), field: "description", new_value: "<p>Rewritten</p>" }),
      { deviationid: uuid(102), field: "tags", old_value: ["a", "b", "t102"], new_value: ["a", "b", "new", "t102"] },
    ]);
    expect(String(rows[1]?.old_value).startsWith("<p>About 101")).toBe(true);

    // The raw JSON and the description follow the newest signature; counters wait for the next day.
    const { rows: d104 } = await m.pool.query(
      "SELECT d.stats_favourites, d.raw->'content'->>'src' AS src, m.description, m.stats->>'views' AS views FROM deviations d JOIN deviation_metadata m USING (deviationid) WHERE deviationid = $1",
      [uuid(104)],
    );
    expect(d104[0]).toMatchObject({ stats_favourites: 10, views: "100" });
    expect(d104[0].src).toContain("token=tok9");
    expect(d104[0].description).toContain("token=tok9");
    const { rows: titles } = await m.pool.query("SELECT title FROM deviations WHERE deviationid = $1", [uuid(100)]);
    expect(titles[0].title).toBe("Work 100 (final)");
  });

  it("samples counters at most once per UTC day", async () => {
    const id = uuid(150);
    await deviations.upsertDeviations([makeDeviation({ n: 150, favourites: 10 })], at("2025-03-01T01:00:00Z"));
    await deviations.upsertDeviations([makeDeviation({ n: 150, favourites: 12 })], at("2025-03-01T23:00:00Z"));
    const sameDay = await m.pool.query("SELECT stats_favourites, stats_sampled_at FROM deviations WHERE deviationid = $1", [id]);
    expect(sameDay.rows[0]).toEqual({ stats_favourites: 10, stats_sampled_at: at("2025-03-01T01:00:00Z") });
    await deviations.upsertDeviations([makeDeviation({ n: 150, favourites: 15 })], at("2025-03-02T00:30:00Z"));
    const nextDay = await m.pool.query("SELECT stats_favourites, stats_sampled_at FROM deviations WHERE deviationid = $1", [id]);
    expect(nextDay.rows[0]).toEqual({ stats_favourites: 15, stats_sampled_at: at("2025-03-02T00:30:00Z") });
  });

  it("an is_deleted tombstone keeps the archived values and marks the row removed as 'deleted'", async () => {
    const id = uuid(200);
    await deviations.upsertDeviations([makeDeviation({ n: 200, title: "Kept forever" })], at("2025-04-01T00:00:00Z"));
    await deviations.upsertMetadata([makeMetadata({ n: 200 })], at("2025-04-01T00:00:00Z"));
    expect(await deviations.upsertDeviations([makeTombstone(200)], at("2025-04-02T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 0,
      unchanged: 0,
      removed: 1,
    });
    // Seen deleted again later: nothing new, and the first removal time stays.
    expect(await deviations.upsertDeviations([makeTombstone(200)], at("2025-04-03T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 0,
      unchanged: 1,
      removed: 0,
    });
    const { rows } = await m.pool.query(
      "SELECT title, url, type, author_userid, published_at, is_deleted, removed_at, removed_reason, raw->>'title' AS raw_title, raw->>'is_deleted' AS raw_deleted FROM deviations WHERE deviationid = $1",
      [id],
    );
    expect(rows[0]).toMatchObject({
      title: "Kept forever",
      type: "image",
      author_userid: uuid(1, "u"),
      is_deleted: true,
      removed_at: at("2025-04-02T00:00:00Z"),
      removed_reason: "deleted",
      raw_title: "Kept forever",
      raw_deleted: "true",
    });
    expect(rows[0].url).toContain("work-200");
    expect(await history([id])).toEqual([]);
    const meta = await m.pool.query("SELECT description FROM deviation_metadata WHERE deviationid = $1", [id]);
    expect(meta.rows[0].description).toContain("About 200");
  });

  it("a tombstone for a deviation never seen is archived as removed", async () => {
    expect(await deviations.upsertDeviations([makeTombstone(210)], at("2025-04-02T00:00:00Z"))).toEqual({
      inserted: 1,
      changed: 0,
      unchanged: 0,
      removed: 0,
    });
    const { rows } = await m.pool.query("SELECT title, type, removed_reason FROM deviations WHERE deviationid = $1", [uuid(210)]);
    expect(rows[0]).toEqual({ title: null, type: null, removed_reason: "deleted" });
  });

  it("markDeviationsGone keeps the first removal with the service's answer, removes the memberships, and a later sighting brings the deviation back", async () => {
    await deviations.upsertDeviations(page(220, 3), at("2025-04-01T00:00:00Z"));
    await folders.upsertFolderMembership("gallery", uuid(220, "g"), [{ deviationid: uuid(222), position: -1 }], at("2025-04-01T00:00:00Z"));
    const refused = { status: 400, error: "invalid_request", error_code: 2, error_description: "Deviation not found." };
    const stub = { status: 200, is_deleted: true };
    expect(
      await deviations.markDeviationsGone(
        [
          { deviationid: uuid(220), reason: "unavailable", answer: refused },
          { deviationid: uuid(221), reason: "deleted", answer: stub },
          { deviationid: uuid(222), reason: "deleted", answer: { ...refused, error_code: 0 } },
        ],
        at("2025-04-05T00:00:00Z"),
      ),
    ).toBe(3);
    expect(await deviations.markDeviationsGone([{ deviationid: uuid(220), reason: "deleted", answer: stub }], at("2025-04-06T00:00:00Z"))).toBe(0);
    expect(await deviations.upsertDeviations([makeDeviation({ n: 221 })], at("2025-04-07T00:00:00Z"))).toMatchObject({ changed: 1 });
    const { rows } = await m.pool.query(
      "SELECT deviationid, removed_at, removed_reason::text AS removed_reason, removed_answer, is_deleted FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid",
      [[uuid(220), uuid(221), uuid(222)]],
    );
    expect(rows).toEqual([
      { deviationid: uuid(220), removed_at: at("2025-04-05T00:00:00Z"), removed_reason: "unavailable", removed_answer: refused, is_deleted: false },
      { deviationid: uuid(221), removed_at: null, removed_reason: null, removed_answer: null, is_deleted: false },
      {
        deviationid: uuid(222),
        removed_at: at("2025-04-05T00:00:00Z"),
        removed_reason: "deleted",
        removed_answer: { ...refused, error_code: 0 },
        is_deleted: true,
      },
    ]);
    const member = await m.pool.query("SELECT removed_at, removed_reason::text AS removed_reason FROM folder_members WHERE deviationid = $1", [uuid(222)]);
    expect(member.rows).toEqual([{ removed_at: at("2025-04-05T00:00:00Z"), removed_reason: "deleted" }]);
  });

  it("records texts: an empty answer is recorded as empty and never replaces a body", async () => {
    await deviations.upsertDeviations([makeDeviation({ n: 300, kind: "journal" })], at("2025-05-01T00:00:00Z"));
    const id = uuid(300);
    const read = async () =>
      (await m.pool.query("SELECT html, excerpt, is_empty, body_fetched_at, last_empty_at FROM deviation_texts WHERE deviationid = $1", [id])).rows[0];

    expect(await deviations.upsertTexts([{ deviationid: id, content: { html: "  " }, excerpt: "The opening" }], at("2025-05-01T00:00:00Z"))).toMatchObject({
      inserted: 1,
    });
    expect(await read()).toEqual({ html: null, excerpt: "The opening", is_empty: true, body_fetched_at: null, last_empty_at: at("2025-05-01T00:00:00Z") });

    expect(
      await deviations.upsertTexts([{ deviationid: id, content: { html: "<p>The opening and the rest</p>", css: "p{}" } }], at("2025-05-02T00:00:00Z")),
    ).toMatchObject({ changed: 1 });
    expect(await deviations.upsertTexts([{ deviationid: id, content: { html: "" } }], at("2025-05-03T00:00:00Z"))).toMatchObject({ unchanged: 1 });
    expect(await read()).toEqual({
      html: "<p>The opening and the rest</p>",
      excerpt: "The opening",
      is_empty: false,
      body_fetched_at: at("2025-05-02T00:00:00Z"),
      last_empty_at: at("2025-05-03T00:00:00Z"),
    });
  });

  it("survives what real pages contain: repeated items, NUL characters, absent optional fields", async () => {
    const repeated = [makeDeviation({ n: 600, title: "First copy" }), makeDeviation({ n: 600, title: "Second\u0000copy" })];
    expect(await deviations.upsertDeviations(repeated, at("2025-05-01T00:00:00Z"))).toMatchObject({ inserted: 1 });
    const bare = DeviationSchema.parse({ deviationid: uuid(601), is_deleted: false });
    expect(await deviations.upsertDeviations([bare], at("2025-05-01T00:00:00Z"))).toMatchObject({ inserted: 1 });
    const { rows } = await m.pool.query("SELECT deviationid, title, type, removed_at FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid", [
      [uuid(600), uuid(601)],
    ]);
    expect(rows).toEqual([
      { deviationid: uuid(600), title: "Second\uFFFDcopy", type: "image", removed_at: null },
      { deviationid: uuid(601), title: null, type: "other", removed_at: null },
    ]);
  });

  it("keeps a page whose published_time lies past year 9999 or before year 1, without that date", async () => {
    // Epoch seconds a Date takes but PostgreSQL's ISO input does not: year 10000 and year 0 (1 BC).
    const far = [makeDeviation({ n: 610, publishedTime: "253402300800" }), makeDeviation({ n: 611, publishedTime: "-62135596801" })];
    const near = makeDeviation({ n: 612, publishedTime: "253402300799" });
    expect(await deviations.upsertDeviations([...far, near], at("2025-05-01T00:00:00Z"))).toMatchObject({ inserted: 3 });
    const { rows } = await m.pool.query("SELECT deviationid, published_at FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid", [
      [uuid(610), uuid(611), uuid(612)],
    ]);
    expect(rows).toEqual([
      { deviationid: uuid(610), published_at: null },
      { deviationid: uuid(611), published_at: null },
      { deviationid: uuid(612), published_at: new Date("9999-12-31T23:59:59Z") },
    ]);
  });

  it("metadata for a deviation not mirrored yet is refused by the foreign key", async () => {
    await expect(deviations.upsertMetadata([makeMetadata({ n: 999 })], at("2025-05-01T00:00:00Z"))).rejects.toThrow(/foreign key/);
  });
});

describe(FolderRepository.name, () => {
  it("one deviation in 3 gallery folders and 2 collections is one deviations row and 5 membership rows", async () => {
    const t = at("2025-06-01T00:00:00Z");
    const dev = makeDeviation({ n: 400 });
    await deviations.upsertDeviations([dev], t);
    await folders.upsertGalleryFolders(
      uuid(1, "u"),
      [
        { folderid: uuid(1, "g"), parent: null, name: "Featured", subfolders: [{ folderid: uuid(3, "g"), parent: null, name: "Sketches" }] },
        { folderid: uuid(2, "g"), parent: null, name: "Paintings" },
      ],
      t,
    );
    await folders.upsertCollectionFolders(
      uuid(1, "u"),
      [
        { folderid: uuid(1, "c"), name: "Favourites" },
        { folderid: uuid(2, "c"), name: "Landscapes" },
      ],
      t,
    );
    for (const g of [1, 2, 3]) {
      expect(await folders.upsertFolderMembership("gallery", uuid(g, "g"), [{ deviationid: dev.deviationid, position: g }], t)).toMatchObject({ inserted: 1 });
    }
    for (const c of [1, 2]) {
      expect(await folders.upsertFolderMembership("collection", uuid(c, "c"), [{ deviationid: dev.deviationid, position: 0 }], t)).toMatchObject({
        inserted: 1,
      });
    }
    await deviations.upsertDeviations([dev], t);
    const counts = await m.pool.query(
      "SELECT (SELECT count(*) FROM deviations WHERE deviationid = $1)::int AS deviations, (SELECT count(*) FROM folder_members WHERE deviationid = $1)::int AS members",
      [dev.deviationid],
    );
    expect(counts.rows[0]).toEqual({ deviations: 1, members: 5 });
    const tree = await m.pool.query("SELECT folderid, parent_folderid, position FROM gallery_folders WHERE folderid = $1", [uuid(3, "g")]);
    expect(tree.rows[0]).toEqual({ folderid: uuid(3, "g"), parent_folderid: uuid(1, "g"), position: 0 });
  });

  it("markMissingMembersRemoved removes what a full sweep no longer found; a returning member is a change", async () => {
    const folderid = uuid(10, "g");
    const devs = page(500, 5);
    await deviations.upsertDeviations(devs, at("2025-07-01T00:00:00Z"));
    await folders.upsertFolderMembership(
      "gallery",
      folderid,
      devs.map((d, i) => ({ deviationid: d.deviationid, position: i })),
      at("2025-07-01T00:00:00Z"),
    );

    const sweepStartedAt = at("2025-07-08T00:00:00Z");
    const kept = devs.slice(0, 3);
    expect(
      await folders.upsertFolderMembership(
        "gallery",
        folderid,
        kept.map((d, i) => ({ deviationid: d.deviationid, position: i })),
        at("2025-07-08T00:00:05Z"),
      ),
    ).toEqual({ inserted: 0, changed: 0, unchanged: 3 });
    expect((await folders.markMissingMembersRemoved("gallery", folderid, sweepStartedAt, at("2025-07-08T00:01:00Z"))).sort()).toEqual(
      devs
        .filter((d) => !kept.includes(d))
        .map((d) => d.deviationid)
        .sort(),
    );
    expect(await folders.markMissingMembersRemoved("gallery", folderid, sweepStartedAt, at("2025-07-08T00:02:00Z"))).toEqual([]);

    const { rows } = await m.pool.query(
      "SELECT deviationid, removed_at, removed_reason FROM folder_members WHERE folderid = $1 AND removed_at IS NOT NULL ORDER BY deviationid",
      [folderid],
    );
    expect(rows).toEqual(
      devs.slice(3).map((d) => ({ deviationid: d.deviationid, removed_at: at("2025-07-08T00:01:00Z"), removed_reason: "gone_from_listing" })),
    );
    // The deviations themselves are untouched: leaving a folder is not vanishing upstream.
    const live = await m.pool.query("SELECT count(*)::int AS n FROM deviations WHERE deviationid = ANY($1) AND removed_at IS NULL", [
      devs.map((d) => d.deviationid),
    ]);
    expect(live.rows[0].n).toBe(5);

    const back = devs[4]!;
    expect(await folders.upsertFolderMembership("gallery", folderid, [{ deviationid: back.deviationid, position: 3 }], at("2025-07-09T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 1,
      unchanged: 0,
    });
  });

  it("reports reordered members and renamed folders as changed, and removes folders gone from the list", async () => {
    const owner = uuid(77, "u");
    const t0 = at("2025-08-01T00:00:00Z");
    await folders.upsertCollectionFolders(
      owner,
      [
        { folderid: uuid(70, "c"), name: "A" },
        { folderid: uuid(71, "c"), name: "B" },
      ],
      t0,
    );
    expect(await folders.upsertCollectionFolders(owner, [{ folderid: uuid(70, "c"), name: "A2" }], at("2025-08-02T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 1,
      unchanged: 0,
    });
    expect(await folders.markMissingFoldersRemoved("collection", owner, at("2025-08-02T00:00:00Z"))).toBe(1);
    const { rows } = await m.pool.query("SELECT folderid, name, removed_reason FROM collection_folders WHERE owner_userid = $1 ORDER BY folderid", [owner]);
    expect(rows).toEqual([
      { folderid: uuid(70, "c"), name: "A2", removed_reason: null },
      { folderid: uuid(71, "c"), name: "B", removed_reason: "gone_from_listing" },
    ]);
  });
});
