// The Atom feeds over real sockets, on a mirror synced from the simulator with files in the archive: each
// feed read by a real Atom parser, its links followed (the item page, the stored file's bytes, the
// thumbnail), a wrong and a revoked token refused, a foreign Host refused, ids that do not change between
// two reads, the pages that advertise their feed, and no token in any log line. Tokens are made and revoked
// through `dvault feeds` as a user would.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseFeed } from "@rowanmanning/feed-parser";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { FeedTokenRepository } from "../../src/db/feed-token.repository.ts";
import { freePort } from "../../src/free-port.ts";
import { issueFeedToken } from "../../src/http/feeds/feed-token.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { createLogger } from "../../src/log.ts";
import { type ArchivedFile, archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const DASHBOARD_TOKEN = "dash-token-0123456789abcdef";
const KEY = randomBytes(32);

let h: SyncHarness;
let archiveDir: string;
/** The dashboard behind its own token, with DVAULT_PUBLIC_URL naming it. */
let guarded: RunningDashboard;
/** A loopback dashboard without a token or a public URL: links take the address asked. */
let open: RunningDashboard;
let publicUrl: string;
let files: ArchivedFile[];
const logLines: string[] = [];
let reader: { token: string; urls: { arrivals: string; notifications: string; artist: string } };

let cliTarget: { redis: { url: string }; env: Record<string, string> };

function cli(args: string[]) {
  return runDvault(cliTarget, args).then((r) => {
    if (r.code !== 0) throw new Error(`dvault ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  });
}

beforeAll(async () => {
  archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-feeds-"));
  h = await createSyncHarness({ sim: { seed: 7, dataset: { deviations: 14, messages: 12, notes: 6, favourites: 3 } } });
  await h.runSource("gallery");
  await h.runSource("messages");
  await h.runSource("notes");
  const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE type = 'image' ORDER BY first_seen_at DESC LIMIT 3");
  files = [];
  for (const [i, r] of rows.entries()) files.push(await archiveFile(h.pool, archiveDir, r.deviationid, artworkPng(i + 1, 40, 30)));

  const port = await freePort();
  publicUrl = `http://localhost:${port}`;
  const log = createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } });
  const config = { ...h.services.config, archiveDir, secretKey: KEY };
  guarded = await startDashboard({ ...h.services, log, config: { ...config, publicUrl } }, { port, token: DASHBOARD_TOKEN });
  open = await startDashboard({ ...h.services, log, config }, { port: 0 });

  cliTarget = {
    redis: h.redis,
    env: {
      DATABASE_URL: h.db.url,
      DVAULT_REDIS_PREFIX: h.services.config.redisPrefix,
      DVAULT_SECRET_KEY: KEY.toString("hex"),
      DVAULT_PUBLIC_URL: publicUrl,
      DVAULT_ARCHIVE_DIR: archiveDir,
      LOG_LEVEL: "silent",
    },
  };
  reader = JSON.parse(await cli(["feeds", "create", "reader", "--json"]));
}, 60_000);
afterAll(async () => {
  await guarded?.close();
  await open?.close();
  await h?.close();
  if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
});

async function readFeed(url: string) {
  const res = await fetch(url);
  expect(res.status, url.replace(/dvf_[\w-]+/, "<token>")).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/atom+xml; charset=utf-8");
  const xml = await res.text();
  return { xml, feed: parseFeed(xml) };
}

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on("error", reject);
  });
}

describe("feeds", () => {
  it("the arrivals feed is Atom whose links reach the item page, the stored file's bytes and the thumbnail", async () => {
    expect(reader.urls.arrivals).toBe(`${publicUrl}/feeds/${reader.token}/arrivals.atom`);
    const { xml, feed } = await readFeed(reader.urls.arrivals);
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations");
    expect(feed.title).toBe("dvault: new in the archive");
    expect(feed.items.length).toBe(Math.min(50, rows[0]!.n));
    expect(xml).toContain(`<link rel="self" href="${reader.urls.arrivals}" type="application/atom+xml"/>`);
    expect(feed.updated?.getTime()).toBe(feed.items[0]!.updated?.getTime());
    // Every link, in the entries' HTML too, is dvault's own: never one to the service or its CDN.
    const links = [...xml.matchAll(/(?:href|src|url)=(?:"|&quot;)([^"&]+)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(files.length * 3);
    expect(links.filter((l) => !l.startsWith(`${publicUrl}/`))).toEqual([]);

    for (const file of files) {
      const item = feed.items.find((i) => i.id === `tag:dvault,2026:deviation:${file.deviationid}`);
      expect(item, file.deviationid).toBeDefined();
      expect(item!.url).toBe(`${publicUrl}/item/${file.deviationid}`);
      // The item page is the dashboard's: it needs the dashboard token, which the feed token is not.
      expect((await fetch(item!.url!)).status).toBe(401);
      const page = await fetch(item!.url!, { headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` } });
      expect(page.status).toBe(200);
      const enclosure = item!.media.find((m) => m.mimeType === "image/png");
      expect(enclosure?.length).toBe(file.size);
      const got = await fetch(enclosure!.url);
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(await fs.readFile(file.absPath))).toBe(true);
      // The picture in the entry is the 1280 px thumbnail, media:thumbnail the 320 px tile.
      const thumb = (size: string) => `${publicUrl}/feeds/${reader.token}/thumb/${size}/${file.sha256}.webp`;
      expect(item!.content).toContain(`<img src="${thumb("m")}"`);
      expect(xml).toContain(`<media:thumbnail url="${thumb("s")}"/>`);
      for (const size of ["s", "m"]) {
        const pic = await fetch(thumb(size));
        expect(pic.status).toBe(200);
        expect(pic.headers.get("content-type")).toBe("image/webp");
      }
    }
  });

  it("an artist's feed holds their work only; the notifications feed the messages and received notes", async () => {
    const artist = await readFeed(reader.urls.artist.replace("USERNAME", h.account.username));
    const own = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations WHERE author_userid = $1", [h.account.userId]);
    expect(own.rows[0]!.n).toBeGreaterThan(0);
    expect(artist.feed.items.length).toBe(Math.min(50, own.rows[0]!.n));
    expect(new Set(artist.feed.items.map((i) => i.authors[0]?.name))).toEqual(new Set([h.account.username]));
    expect((await fetch(reader.urls.artist.replace("USERNAME", "nobody-by-this-name"))).status).toBe(404);

    const { feed } = await readFeed(reader.urls.notifications);
    const counts = await h.pool.query<{ n: number }>(
      "SELECT (SELECT count(*) FROM messages)::int + (SELECT count(*) FROM notes WHERE sent IS NOT TRUE)::int AS n",
    );
    expect(counts.rows[0]!.n).toBeGreaterThan(0);
    expect(feed.items.length).toBe(Math.min(50, counts.rows[0]!.n));
    expect(feed.items.some((i) => i.id?.startsWith("tag:dvault,2026:note:"))).toBe(true);
    expect(feed.items.some((i) => i.id?.startsWith("tag:dvault,2026:message:"))).toBe(true);
  });

  it("gives every entry the same id and time on a second read", async () => {
    const shape = async (url: string) => (await readFeed(url)).feed.items.map((i) => `${i.id} ${i.updated?.toISOString()}`);
    for (const url of [reader.urls.arrivals, reader.urls.notifications]) {
      const first = await shape(url);
      expect(new Set(first).size).toBe(first.length);
      expect(await shape(url)).toEqual(first);
    }
  });

  it("refuses a wrong token, a revoked one and a foreign Host; the dashboard token does not open a feed", async () => {
    const wrong = `${publicUrl}/feeds/dvf_${randomBytes(32).toString("base64url")}/arrivals.atom`;
    expect((await fetch(wrong)).status).toBe(404);
    expect((await fetch(`${publicUrl}/feeds/${DASHBOARD_TOKEN}/arrivals.atom`)).status).toBe(404);
    expect((await fetch(`${publicUrl}/feeds/${reader.token}/nothing.atom`)).status).toBe(404);
    expect(await getWithHost(reader.urls.arrivals, "evil.example")).toBe(421);

    // Made here rather than through the CLI (beforeAll did that once): each run of the CLI costs seconds.
    const issued = await issueFeedToken({ repo: new FeedTokenRepository(h.pool), key: KEY, name: "gone", at: new Date() });
    const gone = { urls: { arrivals: `${publicUrl}/feeds/${issued.token}/arrivals.atom` } };
    expect((await fetch(gone.urls.arrivals)).status).toBe(200);
    await cli(["feeds", "revoke", "gone"]);
    expect((await fetch(gone.urls.arrivals)).status).toBe(404);
    expect((await fetch(gone.urls.arrivals.replace("arrivals.atom", `files/${files[0]!.downloadId}`))).status).toBe(404);
    expect((await fetch(reader.urls.arrivals)).status).toBe(200);
    const listed: Array<{ name: string; revokedAt: string | null; lastUsedAt: string | null }> = JSON.parse(await cli(["feeds", "list", "--json"]));
    expect(listed.map((t) => [t.name, t.revokedAt !== null, t.lastUsedAt !== null])).toEqual([
      ["reader", false, true],
      ["gone", true, true],
    ]);
  });

  it("each page with a feed advertises it, with the address asked when DVAULT_PUBLIC_URL is unset", async () => {
    const overview = await (await fetch(`${open.url}/`)).text();
    expect(overview).toContain(
      `<link rel="alternate" type="application/atom+xml" title="dvault: new in the archive" href="${open.url}/feeds/${reader.token}/arrivals.atom">`,
    );
    expect(overview).toContain(`href="${open.url}/feeds/${reader.token}/notifications.atom"`);
    const artistPage = await (await fetch(`${open.url}/archive?artist=${h.account.username}`)).text();
    expect(artistPage).toContain(`href="${open.url}/feeds/${reader.token}/artists/${h.account.username}.atom"`);
    const feedsPage = await fetch(`${publicUrl}/feeds`, { headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` } });
    expect(feedsPage.status).toBe(200);
    expect(await feedsPage.text()).toContain(reader.urls.notifications);
    expect((await fetch(`${publicUrl}/feeds`)).status).toBe(401);
  });

  it("a token for one feed opens that feed and its entries' files only", async () => {
    const repo = new FeedTokenRepository(h.pool);
    const at = new Date();
    const { rows } = await h.pool.query<{ userid: string; username: string; authored: number }>(
      `SELECT u.userid, u.username, (SELECT count(*)::int FROM deviations d WHERE d.author_userid = u.userid) AS authored
       FROM users u WHERE u.userid <> $1 ORDER BY u.username LIMIT 1`,
      [h.account.userId],
    );
    const other = rows[0]!;
    const own = await issueFeedToken({
      repo,
      key: KEY,
      name: "own-work",
      scope: { kind: "artist", userid: h.account.userId, username: h.account.username },
      at,
    });
    const theirs = await issueFeedToken({ repo, key: KEY, name: "their-work", scope: { kind: "artist", userid: other.userid, username: other.username }, at });
    const notes = await issueFeedToken({ repo, key: KEY, name: "inbox", scope: { kind: "notifications" }, at });
    onTestFinished(async () => {
      // Gone again: the other tests count the tokens, and the pages advertise the reader's.
      await h.pool.query("DELETE FROM feed_tokens WHERE name = ANY($1)", [["own-work", "their-work", "inbox"]]);
    });
    const url = (token: string, rest: string) => `${publicUrl}/feeds/${token}/${rest}`;
    const file = files[0]!;

    const ownFeed = await readFeed(url(own.token, `artists/${h.account.username.toUpperCase()}.atom`));
    expect(ownFeed.feed.items.length).toBeGreaterThan(0);
    expect((await fetch(url(own.token, "arrivals.atom"))).status).toBe(404);
    expect((await fetch(url(own.token, "notifications.atom"))).status).toBe(404);
    expect((await fetch(url(own.token, `artists/${other.username}.atom`))).status).toBe(404);
    expect((await fetch(url(own.token, `files/${file.downloadId}`))).status).toBe(200);
    expect((await fetch(url(own.token, `thumb/s/${file.sha256}.webp`))).status).toBe(200);

    expect((await readFeed(url(theirs.token, `artists/${other.username}.atom`))).feed.items.length).toBe(Math.min(50, other.authored));
    expect((await fetch(url(theirs.token, `files/${file.downloadId}`))).status).toBe(404);
    expect((await fetch(url(theirs.token, `thumb/s/${file.sha256}.webp`))).status).toBe(404);

    await readFeed(url(notes.token, "notifications.atom"));
    expect((await fetch(url(notes.token, "arrivals.atom"))).status).toBe(404);
    // The notifications' files are those of the deviations a message is about, no other.
    const subjects = await h.pool.query<{ deviationid: string }>(
      "SELECT DISTINCT m.subject_deviationid AS deviationid FROM messages m JOIN deviations d ON d.deviationid = m.subject_deviationid",
    );
    const isSubject = new Set(subjects.rows.map((r) => r.deviationid));
    expect(isSubject.size).toBeGreaterThan(0);
    const faved = await archiveFile(h.pool, archiveDir, subjects.rows[0]!.deviationid, artworkPng(99, 20, 20));
    // Stored after the feed was read: linked (and opened) once the feed has served it.
    expect((await fetch(url(notes.token, `files/${faved.downloadId}`))).status).toBe(404);
    await readFeed(url(notes.token, "notifications.atom"));
    expect((await fetch(url(notes.token, `files/${faved.downloadId}`))).status).toBe(200);
    const unrelated = files.find((f) => !isSubject.has(f.deviationid));
    expect(unrelated).toBeDefined();
    expect((await fetch(url(notes.token, `files/${unrelated!.downloadId}`))).status).toBe(404);
  });

  it("writes no feed token into any log line, nor into the database: only its SHA-256 is stored", async () => {
    // A token refused here, whichever test refused one before.
    expect((await fetch(`${publicUrl}/feeds/dvf_${randomBytes(32).toString("base64url")}/arrivals.atom`)).status).toBe(404);
    const refused = logLines.filter((l) => l.includes("feed token refused"));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((l) => l.includes("/feeds/[redacted]/"))).toBe(true);
    expect(logLines.filter((l) => /dvf_[\w-]{20}/.test(l) || l.includes(reader.token) || l.includes(DASHBOARD_TOKEN))).toEqual([]);
    const { rows } = await h.pool.query<{ row: string; sha256: Buffer }>("SELECT to_jsonb(t)::text AS row, token_sha256 AS sha256 FROM feed_tokens t");
    expect(rows.some((r) => r.sha256.equals(createHash("sha256").update(reader.token).digest()))).toBe(true);
    const secret = reader.token.slice("dvf_".length);
    expect(rows.filter((r) => r.row.includes(secret) || r.row.includes(Buffer.from(reader.token).toString("hex")))).toEqual([]);
  });
});
