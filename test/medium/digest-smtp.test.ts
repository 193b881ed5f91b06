// The digest end to end: an initial sync of the simulator (the baseline), a day of activity synced by the
// real sources, then the cron tick's job collects, renders and delivers through a real SMTP server. The
// received message is read back: subject counts, both parts, grouped faves, comments with their text,
// watchers, mentions, unread notes, new deviations with thumbnails, changes, health, and a `<script>`
// title shown as text. Its pictures are the archive's own thumbnails as inline parts, and the file channel's
// copy still shows them after the service's signed CDN URLs have expired.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { DigestScheduler } from "../../src/digest/schedule.ts";
import { fileDeliverer } from "../../src/digest/deliver/file.ts";
import { runDigest } from "../../src/digest/run-digest.ts";
import { Archive } from "../../src/storage/archive.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { createLogger } from "../../src/log.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { createServices, type Services } from "../../src/services.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { testConfig } from "../helpers/config.ts";
import { startTestSmtp, type ReceivedMail, type TestSmtp } from "../helpers/digest-mail.ts";
import { makeImage } from "../helpers/image-fixtures.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const HOUR = 3_600_000;
const TICK = new Date("2026-11-03T08:00:00Z");
const EVIL_TITLE = `<script>alert("pwned")</script> Night Market`;
const log = createLogger({ level: "silent" });

describe("digest over SMTP", () => {
  let h: SyncHarness;
  let smtp: TestSmtp;
  let services: Services;
  let producer: Producer;
  let host: WorkerHost<WorkerContext>;
  let archiveDir: string;
  let mail: ReceivedMail;
  const picked = {} as {
    faved: { deviationid: string; title: string };
    commented: { deviationid: string; title: string };
    fans: string[];
    commenter: string;
    replier: string;
    mentioner: string;
    noteSender: string;
    watcher: string;
    artist: string;
    deactivated: string;
    removedFavourite: { deviationid: string; title: string };
  };

  beforeAll(async () => {
    h = await createSyncHarness({
      sim: {
        mode: "legacy",
        dataset: {
          deviations: 24,
          galleryFolders: 3,
          collectionFolders: 2,
          favourites: 10,
          notes: 6,
          noteFolders: 1,
          messages: 20,
          feedItems: 6,
          watchers: 10,
          friends: 8,
          trackedUsers: 3,
          trackedUserDeviations: 5,
          statuses: 2,
        },
      },
    });
    smtp = await startTestSmtp();
    archiveDir = await mkdtemp(path.join(os.tmpdir(), "dvault-digest-archive-"));

    // The initial full sync: everything it brings in is the baseline, not news.
    for (const source of ["profile", "collections", "messages", "notes", "watch_feed"] as const) {
      const r = await h.runSource(source, { full: true });
      expect(r.status, `${source}: ${r.reason ?? ""}`).not.toBe("skipped");
    }
    await new DigestRepository(h.pool).recordBaselines(h.sim.clock.now());

    // A day of activity.
    const data = h.sim.truth;
    const owner = data.users.get(data.ownerId)!;
    const mine = [...data.galleryFolders.filter((f) => f.ownerId === owner.userid).flatMap((f) => f.deviationIds)]
      .map((id) => data.deviations.get(id)!)
      .filter((d) => !d.isDeleted && !d.isMature);
    const watched = owner.friends.map((f) => data.users.get(f.userid)!).filter((u) => !u.isDeactivated);
    const trackedArtist = watched.find((u) => data.galleryFolders.some((g) => g.ownerId === u.userid))!;
    const others = [...data.users.values()].filter((u) => u.userid !== owner.userid && !u.isDeactivated && u.type !== "group");
    const toDeactivate = watched.find((u) => u.userid !== trackedArtist.userid)!;
    const people = others.filter((u) => u.userid !== toDeactivate.userid);
    expect(people.length).toBeGreaterThanOrEqual(13);
    picked.faved = { deviationid: mine[0]!.deviationid, title: mine[0]!.title };
    picked.commented = { deviationid: mine[1]!.deviationid, title: mine[1]!.title };
    picked.fans = people.slice(0, 12).map((u) => u.username);
    picked.commenter = people[0]!.username;
    picked.replier = people[1]!.username;
    picked.mentioner = people[2]!.username;
    picked.noteSender = people[3]!.username;
    picked.artist = trackedArtist.username;
    picked.deactivated = toDeactivate.username;
    const newWatcher = others.find((u) => !owner.watcherIds.includes(u.userid) && u.userid !== toDeactivate.userid)!;
    picked.watcher = newWatcher.username;
    const favourite = data.collectionFolders[0]!.deviationIds.map((id) => data.deviations.get(id)!).find(
      (d) => !d.isDeleted && d.authorId !== toDeactivate.userid,
    )!;
    picked.removedFavourite = { deviationid: favourite.deviationid, title: favourite.title };

    h.sim.clock.advance(HOUR);
    for (const fan of picked.fans) h.sim.activity({ kind: "new_message", type: "fave", from: fan, deviationid: picked.faved.deviationid });
    h.sim.activity({
      kind: "new_message",
      type: "comment",
      from: picked.commenter,
      deviationid: picked.commented.deviationid,
      body: "Love the colours &amp; the <b>light</b>!",
    });
    h.sim.clock.advance(HOUR);
    h.sim.activity({
      kind: "new_message",
      type: "reply",
      from: picked.replier,
      deviationid: picked.commented.deviationid,
      body: "Agreed, the sky is <i>great</i>",
    });
    h.sim.activity({
      kind: "new_message",
      type: "mention.comment",
      from: picked.mentioner,
      deviationid: picked.faved.deviationid,
      body: "@SimArtist you should see this",
    });
    h.sim.activity({ kind: "new_watcher", username: picked.watcher });
    h.sim.activity({ kind: "new_message", type: "watch", from: picked.watcher });
    h.sim.activity({
      kind: "new_note",
      from: picked.noteSender,
      subject: "Commission <request>",
      body: "<p>Hi! Are you open for commissions &amp; prints?</p>",
    });
    h.sim.activity({ kind: "add_deviation", username: picked.artist, title: EVIL_TITLE, deviationKind: "image", isMature: false });
    h.sim.activity({ kind: "add_deviation", username: picked.artist, title: "Harbour at dawn", deviationKind: "image", isMature: false });
    h.sim.activity({ kind: "deactivate_user", username: picked.deactivated });
    h.sim.activity({ kind: "delete_deviation", deviationid: picked.removedFavourite.deviationid });
    h.sim.clock.advance(HOUR);
    for (const source of ["messages", "notes", "watch_feed"] as const) await h.runSource(source);
    for (const source of ["profile", "collections"] as const) await h.runSource(source, { full: true });

    // The health section's material: another account needing re-authorization, a failing source, a deferred
    // download, and one new deviation archived.
    await h.pool.query(
      "INSERT INTO accounts (name, username, updated_at, state, state_reason) VALUES ('studio', 'studio', now(), 'needs_reauth', 'the service rejected its refresh token (The refresh_token is invalid.)')",
    );
    await new SyncStateRepository(h.pool).saveSourceState(
      { accountId: h.account.id, source: "stash" },
      { lastResult: "failed", lastError: "HTTP 503 from /stash/delta after 5 attempts", lastRunAt: h.sim.clock.now() },
    );
    await h.pool.query("INSERT INTO downloads (deviationid, kind, status) VALUES ($1, 'original', 'deferred_quota')", [picked.commented.deviationid]);
    // Two deviations whose files are in the archive: the digest shows the archive's thumbnails of them.
    const archive = new Archive({ root: archiveDir, minFreeBytes: 0 });
    const harbourFile = await archive.storeBytes({ bytes: await makeImage("jpg", 1600, 1000, 7), ext: "jpg" });
    const favedFile = await archive.storeBytes({ bytes: await makeImage("png", 800, 1200, 8), ext: "png" });
    await h.pool.query(
      "INSERT INTO downloads (deviationid, kind, status, path, sha256, done_at) SELECT deviationid, 'original', 'done', $1, $2, now() FROM deviations WHERE title = 'Harbour at dawn'",
      [harbourFile.relPath, harbourFile.sha256],
    );
    await h.pool.query("INSERT INTO downloads (deviationid, kind, status, path, sha256, done_at) VALUES ($1, 'original', 'done', $2, $3, now())", [
      picked.faved.deviationid,
      favedFile.relPath,
      favedFile.sha256,
    ]);

    const config = testConfig({
      DATABASE_URL: h.db.url,
      DVAULT_REDIS_PREFIX: h.redis.prefix,
      DVAULT_ARCHIVE_DIR: archiveDir,
      DVAULT_DIGEST_CHANNELS: "smtp",
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(smtp.port),
      DVAULT_SMTP_FROM: "dvault <dvault@example.org>",
      DVAULT_SMTP_TO: "me@example.org",
    });
    services = await createServices({ config, log, overrides: { now: () => h.sim.clock.now().getTime(), secretKey: h.secretKey } });
    producer = new Producer([...JOB_DEFINITIONS], services.queues);
    host = new WorkerHost<WorkerContext>({
      entries: checkCatalogue<WorkerContext>(JOBS),
      backend: services.queues,
      log,
      queues: ["digest"],
      makeContext: (base) => ({ ...base, services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} }),
    });
    host.start();

    // The cron's tick (called with its time rather than waited for).
    const repo = new DigestRepository(services.pool);
    const scheduler = new DigestScheduler({
      config: config.digest,
      enqueue: (p) => producer.enqueue("digest.send", p),
      lastWindowEnd: (c) => repo.lastWindowEnd(c),
      log,
    });
    await scheduler.tick(new Date(TICK.getTime() + 350));
    await scheduler.stop();
    [mail] = (await smtp.waitFor(1)) as [ReceivedMail];
    await waitForDigestStatus(services, "sent");
  }, 180_000);

  afterAll(async () => {
    await host?.close();
    await producer?.close();
    await services?.close();
    await smtp?.close();
    await h?.close();
    if (archiveDir) await rm(archiveDir, { recursive: true, force: true });
  });

  it("arrives once, to the configured address, with a stable Message-ID for its (channel, window)", async () => {
    expect(smtp.received).toHaveLength(1);
    expect(mail.to).toEqual(["me@example.org"]);
    expect(mail.from).toContain("dvault@example.org");
    expect(mail.messageId).toBe("<dvault-digest-smtp-20261102T080000Z-20261103T080000Z@example.org>");
    expect(mail.headers.get("x-dvault-idempotency-key")).toBe("dvault-digest-smtp-20261102T080000Z-20261103T080000Z");
    // The SMTP channel's digests (the file channel's test below adds its own, whichever runs first): one.
    const rows = (await new DigestRepository(h.pool).listDigests(5)).filter((d) => d.channel === "smtp");
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({ channel: "smtp", status: "sent", attempts: 1, trigger: "cron", messageId: mail.messageId, subject: mail.subject });
    expect(row?.windowStart.toISOString()).toBe("2026-11-02T08:00:00.000Z");
    expect(row?.windowEnd.toISOString()).toBe(TICK.toISOString());
    expect(await new DigestRepository(h.pool).lastWindowEnd("smtp")).toEqual(TICK);
  });

  it("has a subject with the counts, and both an HTML and a plain-text part", () => {
    expect(mail.subject).toBe(
      "dvault digest 3 Nov: 12 faves, 2 comments, 1 new watcher, 1 mention, 1 unread note, 2 new deviations, 2 changes, 2 need attention",
    );
    expect(mail.headers.get("content-type")).toMatch(/^multipart\/alternative/);
    expect(mail.html).toMatch(/^<!DOCTYPE html>/);
    expect(mail.text).toContain("dvault digest · 2 Nov, 08:00 – 3 Nov 2026, 08:00 (UTC)");
  });

  it("groups the faves of one deviation and leaves the initial sync's messages out", () => {
    expect(mail.html).toContain(`<b>12 people</b> faved`);
    expect(mail.html).toContain(`<b>${escapeHtml(picked.faved.title)}</b>`);
    expect(mail.text).toContain(`12 people faved “${picked.faved.title}”`);
    const names = [...picked.fans].sort().slice(0, 4).join(", ");
    expect(mail.text).toContain(`${names} and 8 others`);
    // The baseline brought 20 messages; only this window's comments are reported.
    expect(mail.text.match(/ (commented|replied)/g)).toHaveLength(2);
  });

  it("shows comments with their text, new watchers and mentions", () => {
    expect(mail.text).toContain(`${picked.commenter} commented on “${picked.commented.title}”`);
    expect(mail.text).toContain("> Love the colours & the light!");
    expect(mail.html).toContain("Love the colours &amp; the light!");
    expect(mail.text).toContain(`${picked.replier} replied on “${picked.commented.title}”`);
    expect(mail.text).toContain(`New watchers: ${picked.watcher}`);
    expect(mail.text).toContain(`${picked.mentioner} mentioned you in “${picked.faved.title}”`);
    expect(mail.text).toContain("> @SimArtist you should see this");
  });

  it("lists unread notes with sender, subject and preview", () => {
    expect(mail.text).toContain(`From ${picked.noteSender}: “Commission <request>”`);
    expect(mail.html).toContain(`<b>${picked.noteSender}</b> · Commission &lt;request&gt;`);
    expect(mail.text).toMatch(/Hi! Are you open for commissions & prints\?/);
  });

  it("shows new deviations of watched artists with linked thumbnails, marked when archived", () => {
    expect(mail.text).toContain(`“Harbour at dawn” by ${picked.artist} [archived]`);
    const harbour = /<a href="([^"]+)"[^>]*><img src="([^"]+)"[^>]*alt="Harbour at dawn"/.exec(mail.html);
    expect(harbour?.[1]).toMatch(/^https:\/\/www\.deviantart\.com\/.+\/art\/Harbour-At-Dawn-\d+$/i);
    expect(harbour?.[2]).toMatch(/^cid:thumb-[0-9a-f]{32}@dvault$/);
    expect(mail.html).toContain("✓ archived");
  });

  it("carries every picture as an inline part: each <img> is a cid: of the message, none a CDN URL", async () => {
    const sources = [...mail.html.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1] ?? "");
    expect(sources.length).toBeGreaterThanOrEqual(2);
    expect(mail.html).not.toMatch(/_cdn|token=/);
    for (const src of sources) {
      expect(src).toMatch(/^cid:/);
      const part = mail.parts.find((p) => p.contentId === src.slice(4));
      expect(part, src).toBeDefined();
      expect(part?.contentType).toBe("image/jpeg");
      const meta = await sharp(part?.bytes).metadata();
      expect(meta.format).toBe("jpeg");
      expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBe(320);
    }
  });

  it("the file channel's copy, opened after the CDN's signed URLs expired, still shows every picture", async () => {
    // The service's thumbnail URL for Harbour at dawn, as the sync stored it, stops working once its token expires.
    const row = await h.pool.query<{ src: string }>("SELECT raw->'thumbs'->0->>'src' AS src FROM deviations WHERE title = 'Harbour at dawn'");
    const cdnUrl = row.rows[0]?.src ?? "";
    expect(cdnUrl).toMatch(/\/_cdn\//);
    h.sim.clock.advance(2 * 24 * HOUR);
    expect((await fetch(cdnUrl)).status).toBe(403);

    const dir = path.join(archiveDir, "..", `${path.basename(archiveDir)}-files`);
    try {
      const r = await runDigest(
        { channel: "file", tick: TICK.toISOString(), trigger: "catch_up" },
        { services, attempt: 1, maxAttempts: 1, deliverer: fileDeliverer(dir) },
      );
      expect(r.status).toBe("sent");
      const htmlFile = (await readdir(dir)).find((f) => f.endsWith(".html")) ?? "";
      const html = await readFile(path.join(dir, htmlFile), "utf8");
      const sources = [...html.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1] ?? "");
      expect(sources.length).toBeGreaterThanOrEqual(2);
      for (const src of sources) {
        expect(src).toMatch(/^[\w.-]+_files\/[0-9a-f]{64}\.webp$/);
        const meta = await sharp(await readFile(path.join(dir, src))).metadata();
        expect(meta.format).toBe("webp");
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("shows a <script> title as text, never as markup", () => {
    expect(mail.html).not.toMatch(/<script/i);
    expect(mail.html).toContain("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; Night Market");
    expect(mail.text).toContain(`“${EVIL_TITLE}” by ${picked.artist}`);
  });

  it("reports changes worth knowing: a watched artist deactivated, a favourite deleted upstream", () => {
    expect(mail.text).toContain(`${picked.deactivated} deactivated their account. You were watching them.`);
    expect(mail.text).toContain(`“${picked.removedFavourite.title}” by`);
    expect(mail.text).toMatch(/one of your favourites, was deleted by its artist\. \[not archived\]/);
  });

  it("has a health section: the exact re-authorization command, the failing source, deferred downloads, disk space", () => {
    expect(mail.text).toContain("ARCHIVE HEALTH");
    expect(mail.text).toContain("!! Account “studio” needs re-authorization; its sync is paused.");
    expect(mail.text).toContain("Run: dvault auth login --account studio");
    expect(mail.html).toContain(">dvault auth login --account studio</code>");
    expect(mail.text).toContain("stash is failing.");
    expect(mail.text).toContain("HTTP 503 from /stash/delta after 5 attempts");
    expect(mail.text).toContain("1 original download deferred by the weekly quota.");
    expect(mail.text).toMatch(/ok Disk: [\d.]+ \w+ free of [\d.]+ \w+\./);
  });

  it("a second tick at the same time, or an older one, sends nothing more", async () => {
    const repo = new DigestRepository(services.pool);
    const scheduler = new DigestScheduler({
      config: services.config.digest,
      enqueue: (p) => producer.enqueue("digest.send", p),
      lastWindowEnd: (c) => repo.lastWindowEnd(c),
      log,
    });
    await scheduler.tick(TICK);
    const older = await producer.enqueue("digest.send", { channel: "smtp", tick: new Date(TICK.getTime() - 86_400_000).toISOString(), trigger: "catch_up" });
    // The older tick's job has run (and sent nothing) before the mail box is counted.
    await expect.poll(() => older.getState(), { timeout: 20_000, interval: 50 }).toBe("completed");
    await scheduler.stop();
    expect(smtp.received).toHaveLength(1);
    expect((await repo.listDigests(10)).filter((d) => d.channel === "smtp")).toHaveLength(1);
  });
});

/** The mail arrives before the job records it as sent: wait for the row (vi.waitFor: beforeAll calls this, where expect.poll is refused). */
async function waitForDigestStatus(services: Services, status: string): Promise<void> {
  const latest = async () => (await new DigestRepository(services.pool).listDigests(1))[0]?.status;
  await vi.waitFor(async () => expect(await latest(), "the latest digest's status").toBe(status), { timeout: 20_000, interval: 100 });
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
