// Hostile tier, issue 27 row 15: a feed token opens exactly the stored files (and their thumbnails) that its
// feeds have linked under it, and 404s every other. The mirror is made with SQL, bigger than a feed: 56
// arrivals by two artists (so 6 never reach the arrivals feed's 50), each with its original stored and some
// with a second stored file (a rendition kept beside it, which no feed links), and messages about a few old
// works. Each kind of token reads its feed over a real socket; then every stored file and thumbnail is asked
// for under it. Entries that leave the feed later keep their files open: a reader's cached entries still work.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FeedTokenRepository } from "../../src/db/feed-token.repository.ts";
import { type FeedScope, issueFeedToken } from "../../src/http/feeds/feed-token.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { type ArchivedFile, archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let dash: RunningDashboard;
let archiveDir: string;
let repo: FeedTokenRepository;
/** Every stored file: the originals (newest arrival first) and the renditions kept beside some of them. */
let originals: ArchivedFile[];
let renditions: ArchivedFile[];
/** The deviations the account's messages are about (old ones, far outside the arrivals feed). */
let subjects: string[];

const ARTISTS = ["scope-anna", "scope-bert"];

/** `n` arrivals by the artists in turn, `offsetMinutes` after a base time, each with its original stored. */
async function arrivals(n: number, from: number): Promise<ArchivedFile[]> {
  const { rows } = await h.pool.query<{ deviationid: string }>(
    `INSERT INTO deviations (deviationid, title, author_userid, type, published_at, first_seen_at, raw)
     SELECT 'scope-' || lpad(i::text, 4, '0'), 'Scope ' || i, ($3::text[])[1 + i % 2], 'image',
       timestamptz '2024-01-01' + i * interval '1 hour', timestamptz '2024-01-01' + i * interval '1 minute', '{}'
     FROM generate_series($1::int, $1::int + $2::int - 1) AS i
     RETURNING deviationid`,
    [from, n, ARTISTS],
  );
  const files: ArchivedFile[] = [];
  for (const r of rows) files.push(await archiveFile(h.pool, archiveDir, r.deviationid, artworkPng(Number(r.deviationid.slice(6)), 6, 4)));
  return files.reverse();
}

/**
 * A mirror of 56 arrivals by two artists, each original stored, three with a rendition beside it, and messages
 * about four works. Each describe below makes its own: the last adds arrivals that the first's counts leave out.
 */
async function setUp(): Promise<void> {
  archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-feed-scope-"));
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
  await h.pool.query("INSERT INTO users (userid, username) SELECT u, u FROM unnest($1::text[]) AS u", [ARTISTS]);
  // The harness's own deviation is none of this test's: out of the feeds' way.
  await h.pool.query("UPDATE deviations SET first_seen_at = timestamptz '2000-01-01'");
  originals = await arrivals(56, 1);
  // A second stored file beside three originals (a rendition kept while the quota was spent, then the original
  // stored): the feeds link the original only.
  renditions = [];
  for (const [i, f] of originals.slice(0, 3).entries()) {
    await h.pool.query(
      "UPDATE downloads SET kind = 'degraded', status = 'degraded', rendition = 'content', degraded_reason = 'Free download limit reached.' WHERE id = $1::bigint",
      [f.downloadId],
    );
    renditions.push(f);
    originals[i] = await archiveFile(h.pool, archiveDir, f.deviationid, artworkPng(9000 + i, 6, 4));
  }
  // Old works far outside the arrivals feed, and one with a rendition kept beside its original (the feed links the original).
  subjects = [...originals.slice(52, 55), originals[1]!].map((f) => f.deviationid);
  await h.pool.query(
    `INSERT INTO messages (account_id, messageid, box, type, subject_kind, subject_deviationid, html, raw, first_seen_at)
     SELECT $1, 'scope-msg-' || s.i, 'feed', 'fave', 'deviation', s.id, 'faved', '{}', timestamptz '2024-03-01' + s.i * interval '1 minute'
     FROM unnest($2::text[]) WITH ORDINALITY AS s(id, i)`,
    // Two messages about the first: one file linked twice in one feed.
    [h.account.id, [...subjects, subjects[0]]],
  );
  repo = new FeedTokenRepository(h.pool);
  dash = await startDashboard({ ...h.services, config: { ...h.services.config, archiveDir } }, { host: "127.0.0.1", port: 0 });
}

async function tearDown(): Promise<void> {
  await dash?.close();
  await h?.close();
  if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
}

let named = 0;
async function token(scope: FeedScope): Promise<string> {
  return (await issueFeedToken({ repo, key: Buffer.alloc(32, 7), name: `scope-${named++}`, scope, at: new Date() })).token;
}

/** Reads a feed under the token; the download ids and thumbnail hashes its document links. */
async function read(tokenValue: string, feed: string): Promise<{ files: Set<string>; thumbs: Set<string> }> {
  const res = await fetch(`${dash.url}/feeds/${tokenValue}/${feed}`);
  expect(res.status, feed).toBe(200);
  const xml = await res.text();
  const under = `/feeds/${tokenValue}/`;
  return {
    files: new Set([...xml.matchAll(new RegExp(`${under}files/(\\d+)`, "g"))].map((m) => m[1]!)),
    thumbs: new Set([...xml.matchAll(new RegExp(`${under}thumb/[sm]/([0-9a-f]{64})\\.webp`, "g"))].map((m) => m[1]!)),
  };
}

/** Which stored files and thumbnails the token opens, asked one by one over the socket. */
async function opened(tokenValue: string): Promise<{ files: string[]; thumbs: string[] }> {
  const all = [...originals, ...renditions];
  const status = async (rest: string) => (await fetch(`${dash.url}/feeds/${tokenValue}/${rest}`)).status;
  const files = await Promise.all(all.map(async (f) => ({ f, file: await status(`files/${f.downloadId}`), thumb: await status(`thumb/s/${f.sha256}.webp`) })));
  for (const { file, thumb } of files) {
    expect([200, 404]).toContain(file);
    expect([200, 404]).toContain(thumb);
  }
  return {
    files: ids(files.filter((r) => r.file === 200).map((r) => r.f)),
    thumbs: hashes(files.filter((r) => r.thumb === 200).map((r) => r.f)),
  };
}

const ids = (files: ArchivedFile[]) => [...new Set(files.map((f) => f.downloadId))].sort();
const hashes = (files: ArchivedFile[]) => [...new Set(files.map((f) => f.sha256))].sort();

describe("feed token scope", () => {
  beforeAll(setUp, 60_000);
  afterAll(tearDown);

  it("an arrivals token opens the 50 originals its feed links, not the 6 older ones nor a rendition beside one", async () => {
    const t = await token({ kind: "arrivals" });
    expect(await opened(t), "before the feed is read").toEqual({ files: [], thumbs: [] });
    const linked = await read(t, "arrivals.atom");
    const newest = originals.slice(0, 50);
    expect([...linked.files].sort()).toEqual(ids(newest));
    expect(await opened(t)).toEqual({ files: ids(newest), thumbs: hashes(newest) });
  });

  it("an artist's token opens that artist's linked originals only", async () => {
    const t = await token({ kind: "artist", userid: ARTISTS[0]!, username: ARTISTS[0]! });
    await read(t, `artists/${ARTISTS[0]}.atom`);
    const theirs = originals.filter((f) => Number(f.deviationid.slice(6)) % 2 === 0);
    expect(theirs).toHaveLength(28);
    expect(await opened(t)).toEqual({ files: ids(theirs), thumbs: hashes(theirs) });
  });

  it("a notifications token opens the files of the works its messages are about, and nothing else", async () => {
    const t = await token({ kind: "notifications" });
    const linked = await read(t, "notifications.atom");
    const about = originals.filter((f) => subjects.includes(f.deviationid));
    expect(about).toHaveLength(4);
    expect([...linked.files].sort()).toEqual(ids(about));
    expect(await opened(t)).toEqual({ files: ids(about), thumbs: hashes(about) });
  });

  it("a revoked token opens nothing it was linked", async () => {
    const t = await token({ kind: "arrivals" });
    await read(t, "arrivals.atom");
    await repo.revokeFeedToken(`scope-${named - 1}`, new Date());
    expect(await opened(t)).toEqual({ files: [], thumbs: [] });
  });
});

describe("feed token scope as the feed moves on", () => {
  beforeAll(setUp, 60_000);
  afterAll(tearDown);

  it("a token of every feed opens what the feeds it read linked; entries that left the feed keep their files", async () => {
    const t = await token({ kind: "all" });
    await read(t, "notifications.atom");
    await read(t, "arrivals.atom");
    const before = [...originals.slice(0, 50), ...originals.filter((f) => subjects.includes(f.deviationid))];
    expect(await opened(t)).toEqual({ files: ids(before), thumbs: hashes(before) });

    // Ten newer arrivals push ten entries out of the feed: a reader holds them still, and their links still open.
    const newer = await arrivals(10, 200);
    const linked = await read(t, "arrivals.atom");
    expect([...linked.files].sort()).toEqual(ids([...newer, ...originals.slice(0, 40)]));
    originals = [...newer, ...originals];
    expect(await opened(t)).toEqual({ files: ids([...newer, ...before]), thumbs: hashes([...newer, ...before]) });
  });
});
