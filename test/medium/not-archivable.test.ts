// What could not be archived and why: two tracked artists synced through the real runner against the
// simulator with variance (locked watchers-only and paid works, multi-image posts, extra mature works), one
// with the account's user token and one recorded with a client token, whose profile counts more than the
// public token lists. Status (JSON and text) and the digest (data, text and HTML) must count per artist and
// reason exactly what the ground truth says each token was shown.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatStatus } from "../../src/cli/status.ts";
import { collectDigest } from "../../src/digest/collect.ts";
import { digestEmbed } from "../../src/digest/deliver/discord-message.ts";
import { renderDigest } from "../../src/digest/render.ts";
import { TrackedUserRepository } from "../../src/db/tracked-user.repository.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { galleryAllIds, isGone, type GroundTruth, type SimDeviation, type SimUser } from "../../src/simulator/dataset.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { StatusReportSchema } from "../../src/status/schema.ts";
import { NOT_ARCHIVABLE_WORDS, type NotArchivable, type NotArchivableReason } from "../../src/text/not-archivable.ts";
import { trackedSource } from "../../src/sync/sources/tracked.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let queues: QueueAdmin;
let withUser: SimUser;
let withClient: SimUser;

/**
 * Two tracked artists synced, one with the owner's token and one with a public token. Each describe below makes its
 * own: the last one lists the second with a user token, which clears what the first counts.
 */
async function setUp(): Promise<void> {
  h = await createSyncHarness({
    sim: { seed: 3, variance: true, dataset: { trackedUsers: 2, trackedUserDeviations: 60, favourites: 10 } },
    sources: [trackedSource],
  });
  const t = h.sim.truth;
  [withUser, withClient] = [...new Set(t.galleryFolders.map((f) => f.ownerId))].filter((id) => id !== t.ownerId).map((id) => t.users.get(id) as SimUser) as [
    SimUser,
    SimUser,
  ];
  const tracked = new TrackedUserRepository(h.pool);
  const at = h.sim.clock.now();
  await tracked.addTrackedUser({ accountId: h.account.id, username: withUser.username, tokenKind: "user", at });
  await tracked.addTrackedUser({
    accountId: h.account.id,
    username: withClient.username,
    tokenKind: "client",
    limitation: "client token: mature works are hidden",
    at,
  });
  for (const u of [withUser, withClient]) expect((await h.runSource("tracked", { key: u.username })).status).toBe("ok");
  queues = new QueueAdmin(h.services.queues);
}

async function tearDown(): Promise<void> {
  await queues?.close();
  await h?.close();
}

type Counts = Partial<Record<NotArchivableReason, number>>;

/**
 * The reason a listed work is not archivable in full, from the truth: locked first, then multi-image. The
 * user token is the account owner's, who has access to their own works; a public token has no viewer.
 */
function reasonOf(d: SimDeviation, viewer: string | null): NotArchivableReason | null {
  if (d.premiumFolder && d.authorId !== viewer) return d.premiumFolder.type === "watchers" ? "watchers_only" : "paid";
  if (d.tier && d.authorId !== viewer) return "paid";
  return d.isMultiMedia ? "partial" : null;
}

/** What the tracked source of `u` was shown: the live works of its gallery and favourites the token may list. */
function listedFor(t: GroundTruth, u: SimUser, publicToken: boolean) {
  const shown = (d: SimDeviation) => !d.isDeleted && !(publicToken && d.isMature) && !isGone(t.users.get(d.authorId));
  const gallery = galleryAllIds(t, u.userid).map((id) => t.deviations.get(id) as SimDeviation);
  const faves = t.collectionFolders.filter((f) => f.ownerId === u.userid).flatMap((f) => f.deviationIds.map((id) => t.deviations.get(id) as SimDeviation));
  const live = gallery.filter((d) => !d.isDeleted);
  return { listed: new Map([...gallery, ...faves].filter(shown).map((d) => [d.deviationid, d])), hidden: live.length - live.filter(shown).length };
}

/** Per artist (username), what the tracked source of `u` was shown and could not archive in full. */
function expectedFor(t: GroundTruth, u: SimUser, publicToken: boolean): Map<string, Counts> {
  const { listed, hidden } = listedFor(t, u, publicToken);
  const viewer = publicToken ? null : t.ownerId;
  const out = new Map<string, Counts>();
  const add = (artist: string, reason: NotArchivableReason, n: number) => {
    const c = out.get(artist) ?? {};
    c[reason] = (c[reason] ?? 0) + n;
    out.set(artist, c);
  };
  for (const d of listed.values()) {
    const reason = reasonOf(d, viewer);
    if (reason) add((t.users.get(d.authorId) as SimUser).username, reason, 1);
  }
  if (hidden > 0) add(u.username, "hidden_mature", hidden);
  return out;
}

function actualFor(v: NotArchivable, u: SimUser): Map<string, Counts> {
  const rows = v.byArtist.filter((a) => a.source === "tracked" && a.key === u.username);
  return new Map(rows.map((a) => [a.artist, Object.fromEntries(a.counts.map((c) => [c.reason, c.count]))]));
}

function statusDeps() {
  return { ...h.services, queues, tokens: h.services.tokens };
}

describe("what could not be archived", () => {
  beforeAll(setUp, 60_000);
  afterAll(tearDown);

  it("is drawn by the simulator: locked, multi-image and mature works of the tracked artists", () => {
    const v = h.sim.truth.variance;
    const theirs = (ids: readonly string[] = []) => ids.map((id) => h.sim.truth.deviations.get(id) as SimDeviation);
    const locked = theirs(v?.lockedDeviations);
    expect(new Set(locked.map((d) => d.premiumFolder?.type))).toEqual(new Set(["watchers", "paid"]));
    expect(theirs(v?.multiImageDeviations).length).toBeGreaterThan(0);
    for (const u of [withUser, withClient]) expect(theirs(v?.matureDeviations).filter((d) => d.authorId === u.userid).length).toBeGreaterThan(0);
  });

  it("is counted per artist and reason in status, with what the client token could not list", async () => {
    const report = StatusReportSchema.parse(await collectStatus(statusDeps()));
    const t = h.sim.truth;
    const forUser = expectedFor(t, withUser, false);
    const forClient = expectedFor(t, withClient, true);
    expect(actualFor(report.notArchivable, withUser)).toEqual(forUser);
    expect(actualFor(report.notArchivable, withClient)).toEqual(forClient);
    // The user token sees every mature work: nothing of its artist is hidden.
    expect(forUser.get(withUser.username)?.hidden_mature).toBeUndefined();
    const hidden = forClient.get(withClient.username)?.hidden_mature ?? 0;
    expect(hidden).toBeGreaterThan(0);
    const clientRow = report.notArchivable.byArtist.find((a) => a.key === withClient.username && a.artist === withClient.username);
    expect(clientRow?.profileCount).toBe(galleryAllIds(t, withClient.userid).filter((id) => !t.deviations.get(id)?.isDeleted).length);
    expect((clientRow?.profileCount ?? 0) - (clientRow?.listed ?? 0)).toBe(hidden);

    // Per reason: nonzero reasons only, each with why and what to do.
    const reasons = report.notArchivable.byReason;
    expect(reasons.every((r) => r.count > 0 && r.why && r.action)).toBe(true);
    expect(reasons.find((r) => r.reason === "hidden_mature")?.count).toBe(hidden);
    // A work both sources list (a favourite of one artist by the other) counts once in the totals.
    // Each work keeps the reason of the token that listed it last; the two sets are read in sync order.
    const works = new Map<string, NotArchivableReason | null>();
    for (const d of listedFor(t, withUser, false).listed.values()) works.set(d.deviationid, reasonOf(d, t.ownerId));
    for (const d of listedFor(t, withClient, true).listed.values()) works.set(d.deviationid, reasonOf(d, null));
    for (const reason of ["watchers_only", "paid", "partial"] as const) {
      const total = [...works.values()].filter((r) => r === reason).length;
      expect(total).toBeGreaterThan(0);
      expect(reasons.find((r) => r.reason === reason)?.count).toBe(total);
    }
    expect(report.notArchivable.total).toBe(reasons.reduce((n, r) => n + r.count, 0));

    const text = formatStatus(report);
    expect(text).toContain(`Not archived in full (${report.notArchivable.total} works)`);
    expect(text).toContain(`${hidden} hidden from a public token: `);
    expect(text).toContain(NOT_ARCHIVABLE_WORDS.hidden_mature.action);
    expect(text).toContain(NOT_ARCHIVABLE_WORDS.watchers_only.action);
    expect(text).toMatch(
      new RegExp(
        `${withClient.username} \\(via ${withClient.username}, tracked by [^)]+\\): .*${hidden} hidden from a public token \\(profile \\d+, listings showed \\d+\\)`,
      ),
    );
    const page = overviewPage(report);
    expect(page).toContain('id="not-archivable"');
    expect(page).toContain(NOT_ARCHIVABLE_WORDS.paid.action);
  });

  it("is in the digest: its data, which every channel renders, and the text and HTML", async () => {
    const now = h.sim.clock.now();
    const data = await collectDigest({ db: h.pool, window: { start: new Date(now.getTime() - 3_600_000), end: now }, now, archiveDir: "/tmp" });
    const status = await collectStatus(statusDeps());
    expect(data.notArchivable).toEqual(status.notArchivable);
    const hidden = expectedFor(h.sim.truth, withClient, true).get(withClient.username)?.hidden_mature;
    const { text, html } = renderDigest(data, { timezone: "UTC", mode: "send" });
    expect(text).toContain(`NOT ARCHIVED IN FULL (${status.notArchivable.total} works)`);
    expect(text).toContain(`${hidden} hidden from a public token`);
    for (const r of status.notArchivable.byReason) expect(text).toContain(`${r.count} ${NOT_ARCHIVABLE_WORDS[r.reason].label}: `);
    expect(html).toContain("Not archived in full");
    expect(html).toContain(withClient.username);
    // ntfy sends the text; Discord's embed gets a field with the counts per reason.
    const key = "dvault-digest-discord-test";
    const message = {
      kind: "digest" as const,
      idempotencyKey: key,
      messageId: `<${key}@x>`,
      subject: "s",
      html,
      text,
      payload: {},
      fileBase: key,
      date: now,
      digest: data,
    };
    const field = digestEmbed(message, data, { publicUrl: undefined, timezone: "UTC" }).fields.find((f) => f.name === "Not archived in full");
    expect(field?.value).toBe(status.notArchivable.byReason.map((r) => `${r.count} ${NOT_ARCHIVABLE_WORDS[r.reason].label}`).join(" · "));
    // A standing count, not news: it does not make an otherwise quiet window worth sending.
    expect(Object.keys(data.counts)).not.toContain("notArchivable");
  });

  it("counts the works the watch feed carried under the watch feed", async () => {
    const { rows } = await h.pool.query<{ deviationid: string; author_userid: string }>(
      "SELECT deviationid, author_userid FROM deviations WHERE premium -> 'premium_folder_data' ->> 'type' = 'watchers' ORDER BY deviationid LIMIT 1",
    );
    const locked = rows[0];
    expect(locked).toBeDefined();
    const at = h.sim.clock.now();
    await h.pool.query("INSERT INTO sync_sources (account_id, source, key, updated_at) VALUES ($1, 'watch_feed', '', $2)", [h.account.id, at]);
    await h.pool.query("INSERT INTO feed_items (account_id, itemid, deviationids, raw) VALUES ($1, 'item-1', $2, '{}')", [h.account.id, [locked?.deviationid]]);
    const report = await collectStatus(statusDeps());
    const feed = report.notArchivable.byArtist.filter((a) => a.source === "watch_feed");
    expect(feed.map((a) => [a.artistUserid, a.counts])).toEqual([[locked?.author_userid, [{ reason: "watchers_only", count: 1 }]]]);
    await h.pool.query("DELETE FROM feed_items WHERE account_id = $1", [h.account.id]);
    await h.pool.query("DELETE FROM sync_sources WHERE source = 'watch_feed'");
  });
});

describe("what could not be archived, once a user token lists the artist", () => {
  beforeAll(setUp, 60_000);
  afterAll(tearDown);

  it("clears the hidden count once a user token lists the artist", async () => {
    await new TrackedUserRepository(h.pool).addTrackedUser({
      accountId: h.account.id,
      username: withClient.username,
      tokenKind: "user",
      at: h.sim.clock.now(),
    });
    h.sim.clock.advance(60_000);
    expect((await h.runSource("tracked", { key: withClient.username, full: true })).status).toBe("ok");
    const report = await collectStatus(statusDeps());
    expect(actualFor(report.notArchivable, withClient)).toEqual(expectedFor(h.sim.truth, withClient, false));
    expect(report.notArchivable.byReason.map((r) => r.reason)).not.toContain("hidden_mature");
  });
});
