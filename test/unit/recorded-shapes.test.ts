// Pages of the listings dvault syncs, in shapes the real service has been seen to send (answers other
// clients recorded; docs/service-behaviour.md#object-shapes, #tolerant-reading). The values are made up;
// the shapes are not: a folder without `size`, a watcher twice on one page with `lastvisit: null`, a
// message whose `subject` is PHP's `[]`, an empty feed page that still says `has_more`, a download
// without `filename`. Each page goes through what a sync reads it with: the operation's page schema,
// the envelope reader, the item schema, and the row helpers that decide what is archived.
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { operation } from "../../src/api/catalogue.ts";
import { nextCursor } from "../../src/api/paginate.ts";
import { readEnvelope } from "../../src/api/paginate/read-page.ts";
import {
  DeviationSchema,
  DownloadSchema,
  FeedItemSchema,
  GalleryFolderSchema,
  CollectionFolderSchema,
  MessageSchema,
  MetadataResponseSchema,
  PlaceboSchema,
  ProfileSchema,
  WatchEntrySchema,
} from "../../src/api/types.ts";
import { messageSubjectKind } from "../../src/db/message.repository.ts";
import { deviationType, epochTime } from "../../src/db/mirror-rows.ts";
import { wantedDownload } from "../../src/sync/sources/pending-work.ts";

const author = {
  userid: "11111111-2222-3333-4444-555555555555",
  username: "someone",
  usericon: "https://a.deviantart.net/avatars/default.gif",
  type: "regular",
};
const download = { priority: 1, reason: "gallery" };

/** The page read as a sync reads it: the envelope, then every item on its own. */
function readPage<S extends z.ZodType>(id: string, page: unknown, item: S) {
  const op = operation(id);
  expect(op.response.safeParse(page).success, `${id}: page schema`).toBe(true);
  const envelope = readEnvelope(page, op.itemsKey ?? "results");
  if (typeof envelope === "string") throw new Error(`${id}: ${envelope}`);
  const items = envelope.items.map((raw, i) => {
    const parsed = item.safeParse(raw);
    if (!parsed.success) throw new Error(`${id}: item #${i} refused: ${parsed.error.message}`);
    return parsed.data as z.infer<S>;
  });
  return { envelope, items };
}

describe("recorded answers of the listings a sync reads", () => {
  it("gallery/all: a deleted stub with a printid, an app with no image, a literature piece with empty thumbs", () => {
    const page = {
      has_more: false,
      next_offset: null,
      results: [
        { deviationid: "00000000-0000-0000-0000-0000000000A1", printid: "00000000-0000-0000-0000-0000000000B1", is_deleted: true },
        {
          deviationid: "00000000-0000-0000-0000-0000000000A2",
          printid: null,
          url: "https://www.deviantart.com/someone/art/Untitled-100",
          title: "Untitled",
          category: "Applications",
          category_path: "apps",
          is_favourited: false,
          is_deleted: false,
          is_published: true,
          author,
          stats: { comments: 0, favourites: 0 },
          published_time: 1612853948,
          allows_comments: true,
          is_mature: false,
          is_downloadable: false,
        },
        {
          deviationid: "00000000-0000-0000-0000-0000000000A3",
          printid: null,
          url: "https://www.deviantart.com/someone/art/Report-101",
          title: "Report",
          category_path: "literature/characters",
          is_deleted: false,
          author,
          stats: { comments: 0, favourites: 8 },
          published_time: "1577891369",
          thumbs: [],
          excerpt: "A long text&#8230;",
        },
      ],
    };
    const { envelope, items } = readPage("gallery.all", page, DeviationSchema);
    expect(envelope.hasMore).toBe(false);
    const [stub, app, text] = items;
    // The stub is the deletion itself: no type, nothing wanted, its printid kept.
    expect(stub?.is_deleted).toBe(true);
    expect(stub?.printid).toBe("00000000-0000-0000-0000-0000000000B1");
    expect(stub && wantedDownload(stub, download)).toEqual([]);
    // published_time as an integer is as good as the usual string.
    expect(app && epochTime(app.published_time)).toBe("2021-02-09T06:59:08.000Z");
    expect(app && deviationType(app)).toBe("other");
    expect(text && epochTime(text.published_time)).toBe("2020-01-01T15:09:29.000Z");
    expect(text && wantedDownload(text, download).map((w) => w.kind)).toEqual(["text"]);
  });

  it("gallery and collection folders: a folder without size, a child naming its parent, has_more on a folder list", () => {
    const gallery = {
      results: [
        { folderid: "00000000-0000-0000-0000-0000000000F1", parent: null, name: "Featured", size: 2 },
        { folderid: "00000000-0000-0000-0000-0000000000F2", parent: "00000000-0000-0000-0000-0000000000F1", name: "New" },
      ],
      has_more: true,
      next_offset: 2,
    };
    const g = readPage("gallery.folders", gallery, GalleryFolderSchema);
    expect(g.envelope).toMatchObject({ hasMore: true, nextOffset: 2 });
    expect(g.items.map((f) => [f.parent ?? null, f.size ?? null])).toEqual([
      [null, 2],
      ["00000000-0000-0000-0000-0000000000F1", null],
    ]);
    const collections = {
      has_more: false,
      next_offset: null,
      results: [
        { folderid: "00000000-0000-0000-0000-0000000000C1", name: "Featured", size: 1535 },
        { folderid: "00000000-0000-0000-0000-0000000000C2", name: "Favorites" },
      ],
    };
    expect(readPage("collections.folders", collections, CollectionFolderSchema).items).toHaveLength(2);
  });

  it("watchers and friends: lastvisit null, the same watcher twice on a page, watches_you", () => {
    const watch = { friend: true, deviations: true, journals: true, forum_threads: true, critiques: true, scraps: false, activity: true, collections: true };
    const watchers = {
      has_more: true,
      next_offset: 2,
      results: [
        { user: author, is_watching: true, lastvisit: "2014-10-13T22:34:16-0700", watch },
        { user: author, is_watching: true, lastvisit: null, watch },
      ],
    };
    expect(readPage("user.watchers", watchers, WatchEntrySchema).items.map((e) => e.lastvisit ?? null)).toEqual(["2014-10-13T22:34:16-0700", null]);
    const friends = { has_more: false, next_offset: null, results: [{ user: author, is_watching: true, watches_you: false, watch }] };
    expect(readPage("user.friends", friends, WatchEntrySchema).items[0]?.watches_you).toBe(false);
  });

  it("feedback messages: subject sent as [] with the comment beside it", () => {
    const page = {
      has_more: false,
      next_offset: null,
      results: [
        {
          messageid: "m1",
          type: "feedback.comment",
          orphaned: false,
          ts: "2016-06-02T23:33:42+03:00",
          stackid: "s1",
          stack_count: 2,
          originator: author,
          subject: [],
          comment: { commentid: "c1", parentid: null, posted: "2016-06-02T23:33:42+03:00", replies: 0, hidden: null, body: "hello", user: author },
        },
      ],
    };
    const [message] = readPage("messages.feedback", page, MessageSchema).items;
    expect(message && messageSubjectKind(message)).toBe("comment");
    expect(message?.comment?.body).toBe("hello");
    expect(message?.stack_count).toBe(2);
  });

  it("the watch feed: an empty page that still says has_more ends the walk instead of looping", () => {
    const page = { cursor: "Y3Vyc29yLTI", has_more: true, items: [] };
    const { envelope, items } = readPage("feed.home", page, FeedItemSchema);
    expect(items).toEqual([]);
    expect(nextCursor({ items, hasMore: envelope.hasMore ?? false, cursor: "Y3Vyc29yLTE", nextCursor: envelope.nextCursor })).toBeUndefined();
  });
});

describe("recorded answers of single objects", () => {
  it("a download without filename, metadata with a null printid and sponsor '', a profile without user stats, placebo", () => {
    const dl = DownloadSchema.parse({ src: "https://images.example/f/x.png?token=t", width: 850, height: 627, filesize: 582346 });
    expect(dl.filename ?? null).toBeNull();
    const metadata = MetadataResponseSchema.parse({
      metadata: [
        {
          deviationid: "00000000-0000-0000-0000-0000000000D1",
          printid: null,
          author,
          is_watching: false,
          title: "Server",
          description: "A server.",
          license: "No License",
          allows_comments: true,
          tags: [{ tag_name: "server", sponsored: false, sponsor: "" }],
          is_mature: false,
          is_favourited: false,
        },
      ],
    });
    expect(metadata.metadata[0]?.tags?.map((t) => t.tag_name)).toEqual(["server"]);
    const profile = ProfileSchema.parse({
      artist_level: null,
      artist_specialty: null,
      bio: "",
      country: "Unknown",
      countryid: 0,
      cover_photo: "",
      is_watching: false,
      last_status: null,
      profile_pic: null,
      profile_url: "http://someone.deviantart.com",
      real_name: "Someone",
      stats: { profile_comments: 209961, profile_pageviews: 2076161, user_comments: 0, user_deviations: 9, user_favourites: 0 },
      tagline: "",
      user: { ...author, type: "admin" },
      user_is_artist: false,
      website: "http://www.example.com",
    });
    expect(profile.stats?.user_deviations).toBe(9);
    expect(profile.user.stats ?? null).toBeNull();
    expect(PlaceboSchema.parse({ status: "success" }).status).toBe("success");
  });
});
