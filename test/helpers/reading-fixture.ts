// An archive for the reading pages' tests (test/browser/reading-pages.test.ts, test/http/reading-pages.test.ts):
// the simulator's gallery, notifications and watch feed synced (unless `sync: false`), then a story written into the mirror
// with known words: a note thread (received, a reply sent, a received answer), a message stack, a journal with a
// threaded comment list and two embedded pictures (one archived, one not), a status sharing a work, watch-feed items,
// an artist with folders, a work removed upstream with the service's answer, and the service's hostile HTML
// (test/helpers/hostile-text-pages.ts) in every body. `bulk` adds that many notes and messages, for deep pages.
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { HOSTILE_SCRIPT_TITLE } from "../../src/simulator/dataset/hostile.ts";
import { archiveFile, artworkPng } from "./archive-fixtures.ts";
import { HOSTILE_JOURNAL } from "./hostile-text-pages.ts";
import { createSyncHarness, type SyncHarness } from "./sync-harness.ts";

export const FRIEND = { userid: "rf-friend-0001", username: "Ivy<Fern>" };
export const IDS = {
  journal: "rf-journal-0001",
  gone: "rf-gone-0001",
  art: "rf-art-0001",
  status: "rf-status-0001",
  stack: "rf-stack-0001",
  thread: ["rf-note-1", "rf-note-2", "rf-note-3"],
  comments: { root: "rf-c-1", reply: "rf-c-2", deep: "rf-c-3", other: "rf-c-4", onStatus: "rf-c-5" },
  message: "rf-msg-hostile",
  feedItem: "rf-feed-1",
} as const;
export const WORDS = {
  journal: "Marigold Almanac",
  art: "Quince Orchard",
  gone: "Withered Quill",
  thread: "Greenhouse plans",
  comment: "pollinator corridor",
  reply: "seed swap",
  deep: "compost tea",
  note: "trellis",
  stack: "favourited your Quince",
  status: "sundial gnomon",
} as const;
/** The picture's URL on the service: its query is the CDN's signature, which the embedded <img> carries another of. */
export const ART_SRC = "https://images-wixmp.example/f/rf-art/quince.png";

export type ReadingFixture = { h: SyncHarness; dash: RunningDashboard; artSha: string; owner: { userid: string; username: string }; close(): Promise<void> };

export async function createReadingFixture(archiveDir: string, options: { sync?: boolean; bulk?: number } = {}): Promise<ReadingFixture> {
  const h = await createSyncHarness({
    sim: {
      seed: 7,
      dataset: {
        deviations: 10,
        galleryFolders: 2,
        collectionFolders: 1,
        favourites: 4,
        notes: 8,
        noteFolders: 2,
        messages: 12,
        feedItems: 6,
        watchers: 2,
        friends: 3,
        trackedUsers: 0,
        statuses: 2,
      },
    },
  });
  if (options.sync !== false) for (const source of ["gallery", "messages", "watch_feed"] as const) await h.runSource(source);
  const db = h.pool;
  const owner = { userid: h.account.userId, username: h.account.username };
  const acct = h.account.id;
  const t = (minutes: number) => new Date(Date.UTC(2026, 9, 1, 12, minutes)).toISOString();

  await db.query(`INSERT INTO users (userid, username, tagline) VALUES ($1, $2, 'grows <b>things</b>') ON CONFLICT (userid) DO NOTHING`, [
    FRIEND.userid,
    FRIEND.username,
  ]);
  await db.query(`UPDATE users SET tagline = 'keeps a garden journal', profile_raw = '{"profile_url": "https://www.deviantart.com/owner"}' WHERE userid = $1`, [
    owner.userid,
  ]);

  // Works: a picture with a stored file, a journal embedding it (and a picture not archived), a journal gone upstream.
  const deviation = `INSERT INTO deviations (deviationid, url, title, author_userid, published_at, type, raw, removed_at, removed_reason, removed_answer)
    VALUES ($1, $2, $3, $4, $5, $6::deviation_type, $7, $8, $9::removed_reason, $10)`;
  await db.query(deviation, [
    IDS.art,
    "https://www.deviantart.com/owner/art/quince",
    WORDS.art,
    owner.userid,
    t(1),
    "image",
    { content: { src: `${ART_SRC}?token=a1` } },
    null,
    null,
    null,
  ]);
  const art = await archiveFile(db, archiveDir, IDS.art, artworkPng(31));
  await db.query(deviation, [
    IDS.journal,
    "https://www.deviantart.com/owner/journal/almanac",
    WORDS.journal,
    owner.userid,
    t(2),
    "journal",
    {},
    null,
    null,
    null,
  ]);
  const journalHtml = `<p>The ${WORDS.journal} opens here.</p><p><img src="${ART_SRC}?token=b2" alt="the quince"></p><p><img src="https://images-wixmp.example/f/elsewhere.png" alt="not kept"></p>\n${HOSTILE_JOURNAL}`;
  await db.query(`INSERT INTO deviation_texts (deviationid, html, excerpt, is_empty, body_fetched_at) VALUES ($1, $2, 'The almanac', false, $3)`, [
    IDS.journal,
    journalHtml,
    t(3),
  ]);
  await db.query(deviation, [
    IDS.gone,
    "https://www.deviantart.com/owner/journal/withered",
    WORDS.gone,
    owner.userid,
    t(0),
    "literature",
    {},
    t(50),
    "deleted",
    { status: 404, error: "invalid_request", error_description: "Deviation not found." },
  ]);
  await db.query(`INSERT INTO deviation_texts (deviationid, html, is_empty) VALUES ($1, '<p>A poem, kept.</p>', false)`, [IDS.gone]);

  // Comments on the journal, three deep, and one on the status.
  const comment = `INSERT INTO comments (commentid, parentid, subject_kind, subject_id, author_userid, posted_at, body, raw) VALUES ($1, $2, $3::comment_subject_kind, $4, $5, $6, $7, '{}')`;
  const c = IDS.comments;
  await db.query(comment, [c.root, null, "deviation", IDS.journal, FRIEND.userid, t(10), `<p>A ${WORDS.comment} along the fence?</p>`]);
  await db.query(comment, [c.reply, c.root, "deviation", IDS.journal, owner.userid, t(11), `<p>Yes, and a ${WORDS.reply} in spring.</p>`]);
  await db.query(comment, [c.deep, c.reply, "deviation", IDS.journal, FRIEND.userid, t(12), `<p>Bring ${WORDS.deep}.</p>`]);
  await db.query(comment, [c.other, null, "deviation", IDS.journal, FRIEND.userid, t(13), HOSTILE_JOURNAL]);
  await db.query(comment, [c.onStatus, null, "status", IDS.status, FRIEND.userid, t(21), "<p>Nice sundial.</p>"]);

  // A status sharing the picture, and watch-feed items: the picture, and the status.
  await db.query(`INSERT INTO statuses (statusid, author_userid, body, posted_at, url, shared_deviationids, raw) VALUES ($1, $2, $3, $4, $5, $6, '{}')`, [
    IDS.status,
    owner.userid,
    `<p>The ${WORDS.status} casts a long shadow.</p>${HOSTILE_JOURNAL}`,
    t(20),
    "https://www.deviantart.com/owner/status-update/1",
    [IDS.art],
  ]);
  const feed = `INSERT INTO feed_items (account_id, itemid, ts, type, by_userid, deviationids, statusid, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, '{}')`;
  await db.query(feed, [acct, IDS.feedItem, "2030-01-01T00:00:00Z", "deviation_submitted", owner.userid, [IDS.art], null]);
  await db.query(feed, [acct, "rf-feed-2", "2029-12-31T00:00:00Z", "status", owner.userid, [], IDS.status]);

  // A note thread (received, sent reply, received answer), newest in 2030 so it heads the list.
  const note = `INSERT INTO notes (account_id, noteid, ts, unread, starred, sent, subject, preview, body, sender_userid, recipients, raw)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}')`;
  const toOwner = JSON.stringify([{ userid: owner.userid, username: owner.username }]);
  const toFriend = JSON.stringify([{ userid: FRIEND.userid, username: FRIEND.username }]);
  const [n1, n2, n3] = IDS.thread;
  await db.query(note, [
    acct,
    n1,
    "2030-01-01T10:00:00Z",
    false,
    true,
    false,
    WORDS.thread,
    "first",
    `<p>Shall we build a ${WORDS.note}?</p>`,
    FRIEND.userid,
    toOwner,
  ]);
  await db.query(note, [acct, n2, "2030-01-01T11:00:00Z", false, false, true, `Re: ${WORDS.thread}`, "second", "<p>Yes, cedar.</p>", owner.userid, toFriend]);
  await db.query(note, [
    acct,
    n3,
    "2030-01-01T12:00:00Z",
    true,
    false,
    false,
    `RE: ${WORDS.thread.toLowerCase()}`,
    "third",
    HOSTILE_JOURNAL,
    FRIEND.userid,
    toOwner,
  ]);

  // A stack of three notifications, and a message whose HTML is hostile.
  const message = `INSERT INTO messages (account_id, messageid, box, type, ts, stackid, stack_count, originator_userid, subject_kind, subject_deviationid, html, raw)
    VALUES ($1, $2, $3::message_box, $4, $5, $6, $7, $8, $9::message_subject_kind, $10, $11, '{}')`;
  for (const i of [1, 2, 3])
    await db.query(message, [
      acct,
      `rf-stacked-${i}`,
      "feed",
      "fave",
      `2030-01-0${i}T00:00:00Z`,
      IDS.stack,
      3,
      FRIEND.userid,
      "deviation",
      IDS.art,
      `<p>${FRIEND.username} ${WORDS.stack} (${i})</p>`,
    ]);
  await db.query(message, [
    acct,
    IDS.message,
    "mentions",
    HOSTILE_SCRIPT_TITLE,
    "2029-06-01T00:00:00Z",
    null,
    null,
    FRIEND.userid,
    null,
    null,
    HOSTILE_JOURNAL,
  ]);

  const bulk = options.bulk ?? 0;
  if (bulk > 0) {
    await db.query(
      `INSERT INTO messages (account_id, messageid, box, type, ts, html, raw)
       SELECT $1, 'bulk-m-' || lpad(i::text, 5, '0'), 'feed', 'watch', timestamptz '2020-01-01' + i * interval '1 minute', '<p>bulk message ' || i || '</p>', '{}'
       FROM generate_series(1, $2::int) i`,
      [acct, bulk],
    );
    await db.query(
      `INSERT INTO notes (account_id, noteid, ts, sent, subject, preview, sender_userid, raw)
       SELECT $1, 'bulk-n-' || lpad(i::text, 5, '0'), timestamptz '2020-01-01' + (i / 2) * interval '1 minute', false, 'bulk note ' || i, 'bulk', $3, '{}'
       FROM generate_series(1, $2::int) i`,
      [acct, bulk, FRIEND.userid],
    );
  }

  if (bulk > 0) {
    // Artists whose names differ only in case sort together; each made one work.
    await db.query(
      `INSERT INTO users (userid, username) SELECT 'bulk-u-' || i, (CASE WHEN i % 2 = 0 THEN 'Bulk' ELSE 'bulk' END) || lpad((i / 2)::text, 4, '0') FROM generate_series(1, 150) i`,
    );
    await db.query(
      `INSERT INTO deviations (deviationid, title, author_userid, type, raw) SELECT 'bulk-d-' || i, 'bulk work', 'bulk-u-' || i, 'image', '{}' FROM generate_series(1, 150) i`,
    );
  }

  const dash = await startDashboard({ ...h.services, config: { ...h.services.config, archiveDir } }, { port: 0 });
  return {
    h,
    dash,
    artSha: art.sha256,
    owner,
    async close() {
      await dash.close();
      await h.close();
    },
  };
}
