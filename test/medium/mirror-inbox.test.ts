import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommentRepository } from "../../src/db/comment.repository.ts";
import { FeedRepository } from "../../src/db/feed.repository.ts";
import { MessageRepository } from "../../src/db/message.repository.ts";
import { feedItemId, statusFromProfilePost } from "../../src/db/mirror-rows.ts";
import { NoteRepository } from "../../src/db/note.repository.ts";
import { PostRepository } from "../../src/db/post.repository.ts";
import { StashRepository } from "../../src/db/stash.repository.ts";
import { StaticDataRepository } from "../../src/db/static-data.repository.ts";
import { DeviationSchema, StashMetadataSchema, StatusSchema } from "../../src/api/types.ts";
import {
  at,
  createMirrorDb,
  deviationJson,
  insertAccount,
  makeComment,
  makeFeedItem,
  makeMessage,
  makeNote,
  userJson,
  uuid,
  type MirrorDb,
} from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let me: number;
let other: number;

beforeAll(async () => {
  m = await createMirrorDb();
  me = await insertAccount(m.pool, "me", uuid(9, "u"));
  other = await insertAccount(m.pool, "other", uuid(8, "u"));
});
afterAll(async () => {
  await m?.drop();
});

describe(MessageRepository.name, () => {
  it("upserts a page of messages idempotently, subjects as plain ids (orphans included)", async () => {
    const messages = new MessageRepository(m.pool);
    const page = [
      makeMessage("m1"),
      makeMessage("m2", {
        type: "comment",
        stackid: "s-comments",
        stack_count: 3,
        subject: { deviation: deviationJson({ n: 5 }) },
        comment: { commentid: "c1", body: "hi" },
      }),
      // Orphaned: its deviation is gone and was never mirrored; no foreign key stands in the way.
      makeMessage("m3", { orphaned: true, subject: { deviation: { deviationid: uuid(777), is_deleted: true } } }),
      makeMessage("m4", { type: "watch", subject: { profile: userJson(2) } }),
    ];
    expect(await messages.upsertMessages(me, "feedback", page, at("2025-03-01T00:00:00Z"))).toEqual({ inserted: 4, changed: 0, unchanged: 0 });
    expect(await messages.upsertMessages(me, "feedback", page, at("2025-03-01T00:10:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 4 });
    expect(
      await messages.upsertMessages(
        me,
        "feedback",
        [
          makeMessage("m1", { is_new: false }),
          makeMessage("m2", { type: "comment", stackid: "s-comments", stack_count: 4, subject: { deviation: deviationJson({ n: 5 }) } }),
        ],
        at("2025-03-01T00:20:00Z"),
      ),
    ).toEqual({ inserted: 0, changed: 2, unchanged: 0 });

    const { rows } = await m.pool.query(
      "SELECT messageid, subject_kind, subject_deviationid, subject_userid, subject_commentid, orphaned, stackid, stack_count, is_new FROM messages WHERE account_id = $1 ORDER BY messageid",
      [me],
    );
    expect(rows).toEqual([
      {
        messageid: "m1",
        subject_kind: "deviation",
        subject_deviationid: uuid(1),
        subject_userid: null,
        subject_commentid: null,
        orphaned: false,
        stackid: null,
        stack_count: null,
        is_new: false,
      },
      {
        messageid: "m2",
        subject_kind: "deviation",
        subject_deviationid: uuid(5),
        subject_userid: null,
        subject_commentid: "c1",
        orphaned: false,
        stackid: "s-comments",
        stack_count: 4,
        is_new: true,
      },
      {
        messageid: "m3",
        subject_kind: "deviation",
        subject_deviationid: uuid(777),
        subject_userid: null,
        subject_commentid: null,
        orphaned: true,
        stackid: null,
        stack_count: null,
        is_new: true,
      },
      {
        messageid: "m4",
        subject_kind: "profile",
        subject_deviationid: null,
        subject_userid: uuid(2, "u"),
        subject_commentid: null,
        orphaned: false,
        stackid: null,
        stack_count: null,
        is_new: true,
      },
    ]);

    expect(await messages.markMissingMessagesRemoved(me, "feedback", at("2025-03-01T00:15:00Z"), at("2025-03-01T00:30:00Z"))).toBe(2);
    expect(await messages.markMissingMessagesRemoved(me, "mentions", at("2025-03-01T00:15:00Z"))).toBe(0);
  });

  it("moves a message first seen in the feed to the more specific box it is later seen in, never back", async () => {
    const messages = new MessageRepository(m.pool);
    await messages.upsertMessages(other, "feed", [makeMessage("b1", { type: "mention" })], at("2025-04-01T00:00:00Z"));
    await messages.upsertMessages(other, "mentions", [makeMessage("b1", { type: "mention" })], at("2025-04-01T00:05:00Z"));
    await messages.upsertMessages(other, "feed", [makeMessage("b1", { type: "mention" })], at("2025-04-01T00:10:00Z"));
    const { rows } = await m.pool.query("SELECT box FROM messages WHERE account_id = $1 AND messageid = 'b1'", [other]);
    expect(rows).toEqual([{ box: "mentions" }]);
  });
});

describe("WatchRepository.listWatching", () => {
  it("lists the users an account watches, not its watchers or removed relations", async () => {
    const { UserRepository } = await import("../../src/db/user.repository.ts");
    const { WatchRepository } = await import("../../src/db/watch.repository.ts");
    const { UserSchema } = await import("../../src/api/types.ts");
    const users = [1, 2, 3].map((n) => UserSchema.parse(userJson(n)));
    await new UserRepository(m.pool).upsertUsers(users, at("2025-05-01T00:00:00Z"));
    const watch = new WatchRepository(m.pool);
    await watch.upsertWatchRelations(me, "watching", [{ user: users[0]! }, { user: users[1]! }], at("2025-05-01T00:00:00Z"));
    await watch.upsertWatchRelations(me, "watcher", [{ user: users[2]! }], at("2025-05-01T00:00:00Z"));
    await watch.upsertWatchRelations(me, "watching", [{ user: users[0]! }], at("2025-05-02T00:00:00Z"));
    await watch.markMissingWatchRelationsRemoved(me, "watching", at("2025-05-02T00:00:00Z"), at("2025-05-02T00:01:00Z"));
    expect(await watch.listWatching(me)).toEqual([{ userid: users[0]!.userid, username: users[0]!.username }]);
  });
});

describe(NoteRepository.name, () => {
  it("upserts notes and folders idempotently, per account", async () => {
    const notes = new NoteRepository(m.pool);
    const folders = [
      { folder: "1", folderid: "1", parentid: null, title: "Inbox", count: "2" },
      { folder: "2", parentid: null, title: "Sent", count: "0" },
    ];
    expect(await notes.upsertNoteFolders(me, folders, at("2025-04-01T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0 });
    expect(await notes.upsertNoteFolders(me, folders, at("2025-04-01T01:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 2 });

    const page = [makeNote("n1"), makeNote("n2", { starred: true })];
    expect(await notes.upsertNotes(me, "1", page, at("2025-04-01T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0 });
    expect(await notes.upsertNotes(me, "1", page, at("2025-04-01T01:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 2 });
    // The same note in another archived account's mirror is that account's row.
    expect(await notes.upsertNotes(other, "2", [makeNote("n1", { sent: true, unread: false })], at("2025-04-01T01:00:00Z"))).toEqual({
      inserted: 1,
      changed: 0,
      unchanged: 0,
    });
    // Read, then moved to another folder.
    expect(await notes.upsertNotes(me, "1", [makeNote("n1", { unread: false })], at("2025-04-02T00:00:00Z"))).toMatchObject({ changed: 1 });
    expect(await notes.upsertNotes(me, "f-archive", [makeNote("n2", { starred: true })], at("2025-04-02T00:00:00Z"))).toMatchObject({ changed: 1 });

    const { rows } = await m.pool.query("SELECT account_id, noteid, folderid, unread, sender_userid, recipients FROM notes ORDER BY account_id, noteid");
    expect(rows).toEqual([
      { account_id: me, noteid: "n1", folderid: "1", unread: false, sender_userid: uuid(2, "u"), recipients: [{ userid: uuid(9, "u"), username: "artist9" }] },
      {
        account_id: me,
        noteid: "n2",
        folderid: "f-archive",
        unread: true,
        sender_userid: uuid(2, "u"),
        recipients: [{ userid: uuid(9, "u"), username: "artist9" }],
      },
      {
        account_id: other,
        noteid: "n1",
        folderid: "2",
        unread: false,
        sender_userid: uuid(2, "u"),
        recipients: [{ userid: uuid(9, "u"), username: "artist9" }],
      },
    ]);
    const count = await m.pool.query("SELECT folderid, count FROM note_folders WHERE account_id = $1 ORDER BY folderid", [me]);
    expect(count.rows).toEqual([
      { folderid: "1", count: 2 },
      { folderid: "2", count: 0 },
    ]);

    expect(await notes.markMissingNotesRemoved(me, "1", at("2025-04-02T00:00:00Z"), at("2025-04-02T00:05:00Z"))).toBe(0);
    expect(await notes.markMissingNotesRemoved(me, "1", at("2025-04-03T00:00:00Z"), at("2025-04-03T00:05:00Z"))).toBe(1);
  });
});

describe(FeedRepository.name, () => {
  it("gives feed items a stable id and upserts them idempotently; a growing bucket is a change", async () => {
    const feed = new FeedRepository(m.pool);
    const items = [1, 2, 3].map((n) => makeFeedItem(n));
    expect(feedItemId(items[0]!)).toBe(feedItemId(makeFeedItem(1)));
    expect(new Set(items.map(feedItemId)).size).toBe(3);
    expect(await feed.upsertFeedItems(me, items, at("2025-05-01T00:00:00Z"))).toEqual({ inserted: 3, changed: 0, unchanged: 0 });
    expect(await feed.upsertFeedItems(me, items, at("2025-05-01T00:30:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 3 });

    const bucket = makeFeedItem(4, { bucketid: "b-1", bucket_total: 1 });
    const grown = makeFeedItem(4, {
      bucketid: "b-1",
      bucket_total: 2,
      deviations: [deviationJson({ n: 104, author: 3 }), deviationJson({ n: 105, author: 3 })],
    });
    expect(feedItemId(bucket)).toBe(feedItemId(grown));
    await feed.upsertFeedItems(me, [bucket], at("2025-05-01T00:00:00Z"));
    expect(await feed.upsertFeedItems(me, [grown], at("2025-05-01T01:00:00Z"))).toEqual({ inserted: 0, changed: 1, unchanged: 0 });
    const { rows } = await m.pool.query("SELECT count(*)::int AS n FROM feed_items WHERE account_id = $1", [me]);
    expect(rows[0].n).toBe(4);
  });
});

describe(CommentRepository.name, () => {
  it("upserts comments idempotently; an edited body is a change, new likes are not", async () => {
    const comments = new CommentRepository(m.pool);
    const subject = { kind: "deviation" as const, id: uuid(1) };
    const page = [makeComment("c1"), makeComment("c2", { parentid: "c1" })];
    expect(await comments.upsertComments(subject, page, at("2025-02-01T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0 });
    expect(
      await comments.upsertComments(
        subject,
        [makeComment("c1", { likes: 5 }), makeComment("c2", { parentid: "c1", body: "Edited" })],
        at("2025-02-02T00:00:00Z"),
      ),
    ).toEqual({
      inserted: 0,
      changed: 1,
      unchanged: 1,
    });
    const { rows } = await m.pool.query("SELECT commentid, parentid, subject_kind, subject_id, likes, posted_at FROM comments ORDER BY commentid");
    expect(rows[0]).toEqual({
      commentid: "c1",
      parentid: null,
      subject_kind: "deviation",
      subject_id: uuid(1),
      likes: 5,
      posted_at: at("2025-02-01T16:00:00Z"),
    });
    expect(rows[1]).toMatchObject({ commentid: "c2", parentid: "c1" });
  });
});

describe(PostRepository.name, () => {
  it("upserts statuses (also deviation-shaped ones) and keeps deleted ones; profile posts in order", async () => {
    const posts = new PostRepository(m.pool);
    const owner = uuid(1, "u");
    const status = StatusSchema.parse({
      statusid: "st-1",
      body: "Working on something",
      ts: "2025-01-05T10:00:00+0000",
      is_deleted: false,
      author: userJson(1),
      items: [{ type: "deviation", deviation: deviationJson({ n: 1 }) }],
    });
    const asPost = statusFromProfilePost(
      DeviationSchema.parse({
        deviationid: "st-2",
        url: "https://www.deviantart.com/artist1/status-update/st-2",
        title: "",
        is_deleted: false,
        author: userJson(1),
        published_time: "1736071200",
        excerpt: "Hello again",
      }),
    );
    expect(await posts.upsertStatuses([status, asPost], at("2025-01-06T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0, removed: 0 });
    expect(await posts.upsertStatuses([StatusSchema.parse({ statusid: "st-1", is_deleted: true })], at("2025-01-07T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 0,
      unchanged: 0,
      removed: 1,
    });
    const { rows } = await m.pool.query("SELECT statusid, body, posted_at, shared_deviationids, removed_reason FROM statuses ORDER BY statusid");
    expect(rows).toEqual([
      { statusid: "st-1", body: "Working on something", posted_at: at("2025-01-05T10:00:00Z"), shared_deviationids: [uuid(1)], removed_reason: "deleted" },
      { statusid: "st-2", body: "Hello again", posted_at: new Date(1736071200 * 1000), shared_deviationids: [], removed_reason: null },
    ]);

    const list = [
      { kind: "status" as const, itemId: "st-2", position: 0 },
      { kind: "journal" as const, itemId: uuid(300), position: 1 },
    ];
    expect(await posts.upsertProfilePosts(owner, list, at("2025-01-06T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0 });
    expect(await posts.upsertProfilePosts(owner, list, at("2025-01-07T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 2 });
    expect(await posts.markMissingProfilePostsRemoved(owner, at("2025-01-07T00:00:00Z"))).toBe(0);
  });
});

describe(StashRepository.name, () => {
  it("upserts stacks and items with 64-bit ids as text", async () => {
    const stash = new StashRepository(m.pool);
    const stack = StashMetadataSchema.parse({ title: "WIP", stackid: 4502318545176648, size: 1 });
    const item = {
      ...StashMetadataSchema.parse({ title: "sketch", stackid: "4502318545176648", itemid: "9007199254740993", tags: ["wip"], creation_time: 1700000000 }),
      position: 0,
    };
    expect(await stash.upsertStashStacks(me, [stack], at("2025-01-01T00:00:00Z"))).toEqual({ inserted: 1, changed: 0, unchanged: 0 });
    expect(await stash.upsertStashItems(me, [item], at("2025-01-01T00:00:00Z"))).toEqual({ inserted: 1, changed: 0, unchanged: 0 });
    expect(await stash.upsertStashItems(me, [item], at("2025-01-02T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 1 });
    const { rows } = await m.pool.query("SELECT itemid, stackid, tags, creation_time FROM stash_items");
    expect(rows).toEqual([{ itemid: "9007199254740993", stackid: "4502318545176648", tags: ["wip"], creation_time: new Date(1700000000 * 1000) }]);
  });
});

describe(StaticDataRepository.name, () => {
  it("saves countries idempotently and keeps every distinct policy text", async () => {
    const data = new StaticDataRepository(m.pool);
    const countries = [
      { countryid: 1, name: "Atlantis" },
      { countryid: "2", name: "Lemuria" },
    ];
    expect(await data.saveCountries(countries, at("2025-01-01T00:00:00Z"))).toEqual({ inserted: 2, changed: 0, unchanged: 0 });
    expect(await data.saveCountries(countries, at("2025-01-08T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 2 });
    expect(await data.savePolicyText("tos", "Be nice.", at("2025-01-01T00:00:00Z"))).toBe(true);
    expect(await data.savePolicyText("tos", "Be nice.", at("2025-01-08T00:00:00Z"))).toBe(false);
    expect(await data.savePolicyText("tos", "Be nice. Really.", at("2025-01-15T00:00:00Z"))).toBe(true);
    const { rows } = await m.pool.query("SELECT text, first_seen_at, fetched_at FROM policy_texts WHERE kind = 'tos' ORDER BY first_seen_at");
    expect(rows).toEqual([
      { text: "Be nice.", first_seen_at: at("2025-01-01T00:00:00Z"), fetched_at: at("2025-01-08T00:00:00Z") },
      { text: "Be nice. Really.", first_seen_at: at("2025-01-15T00:00:00Z"), fetched_at: at("2025-01-15T00:00:00Z") },
    ]);
  });
});
