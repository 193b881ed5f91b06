// Response schemas accept what the real service sends (docs/service-behaviour.md#object-shapes,
// #schema-tolerance) and keep unknown fields for archiving.
import { describe, expect, it } from "vitest";
import {
  CommentContextSchema,
  CommentSchema,
  MessageSchema,
  NoteSchema,
  NoteSendResultSchema,
  CountriesSchema,
  DeviationSchema,
  GalleryFolderSchema,
  MetadataResponseSchema,
  MltPreviewSchema,
  NoteFolderSchema,
  NoteFoldersResponseSchema,
  PlaceboSchema,
  ProfileSchema,
  StashSubmitResultSchema,
  UserSchema,
  WatchEntrySchema,
  WhofavedEntrySchema,
} from "../../src/api/types.ts";
import { parseEpochSeconds, parseIsoTime } from "../../src/timestamps.ts";

const user = { userid: "09A4052C-F4D8-1D0B-0E82-F1C6BC2F5C2F", username: "spyed", usericon: "https://a.deviantart.net/avatars/s/p/spyed.jpg", type: "admin" };

describe("DeviationSchema", () => {
  it("accepts a full deviation with the service's quirks and keeps unknown fields", () => {
    const raw = {
      deviationid: "8F9C5B6C-1D2E-4F3A-9B8C-7D6E5F4A3B2C",
      printid: null,
      url: "https://www.deviantart.com/spyed/art/Thing-123456789",
      title: "Thing",
      is_favourited: false,
      is_deleted: false,
      is_published: true,
      author: user,
      stats: { comments: 3, favourites: 10 },
      published_time: "1600102888",
      allows_comments: true,
      preview: { src: "https://images-wixmp/x.jpg", height: 600, width: 400, transparency: false },
      content: { src: "https://images-wixmp/y.jpg", height: 1200, width: 800, transparency: false, filesize: 123456 },
      thumbs: [{ src: "https://t/1.jpg", height: 150, width: 100, transparency: false }],
      is_mature: false,
      is_downloadable: true,
      download_filesize: 999,
      tier: { state: "active", stats: [], benefits: [] },
      premium_folder_data: { type: "watchers", has_access: false, gallery_id: "G-1" },
      daily_deviation: { body: "nice", time: "2020-09-14T10:21:28-0700", giver: user, suggester: null },
      text_content: { excerpt: "x", body: { type: "draft", markup: "{}", features: "[]" } },
      brand_new_field: { nested: [1, 2] },
    };
    const parsed = DeviationSchema.parse(raw);
    expect(parsed.tier?.stats).toEqual({});
    expect(parsed.published_time).toBe("1600102888");
    expect(parsed.brand_new_field).toEqual({ nested: [1, 2] });
    expect(parsed.author?.username).toBe("spyed");
  });

  it("accepts a deleted deviation with almost no fields", () => {
    expect(DeviationSchema.parse({ deviationid: "D-1", is_deleted: true })).toEqual({ deviationid: "D-1", is_deleted: true });
  });

  it("rejects a deviation without its id", () => {
    expect(DeviationSchema.safeParse({ is_deleted: true }).success).toBe(false);
  });

  it("parses nested deviations (cover, primary tier, profile picture) with the same schema", () => {
    const parsed = DeviationSchema.parse({
      deviationid: "J-1",
      cover_image: { deviationid: "C-1", is_deleted: false, extra: true },
      primary_tier: { deviationid: "T-1", tier: { stats: {} } },
      author: { ...user, profile: { profile_pic: { deviationid: "P-1" } } },
    });
    expect(parsed.cover_image?.deviationid).toBe("C-1");
    expect(parsed.cover_image?.extra).toBe(true);
    expect(parsed.author?.profile?.profile_pic?.deviationid).toBe("P-1");
    expect(DeviationSchema.safeParse({ deviationid: "J-2", cover_image: { title: "no id" } }).success).toBe(false);
  });
});

describe("UserSchema", () => {
  it("accepts expand=user.details/geo/profile/stats blocks with nulls", () => {
    const parsed = UserSchema.parse({
      ...user,
      details: { sex: null, age: null, joindate: "2000-08-08T00:00:00-0700" },
      geo: { country: "United States", countryid: 1, timezone: "America/Los_Angeles" },
      profile: { user_is_artist: true, artist_level: null, artist_specialty: null, real_name: "", tagline: "", website: "", cover_photo: "" },
      stats: { watchers: 1, friends: 2 },
      sidebar: [],
    });
    expect(parsed.details?.age).toBeNull();
    expect(parsed.sidebar).toEqual({});
  });
});

describe("ProfileSchema", () => {
  it("accepts a profile with last_status null and folder lists", () => {
    const parsed = ProfileSchema.parse({
      user,
      is_watching: false,
      profile_url: "https://www.deviantart.com/spyed",
      user_is_artist: true,
      artist_level: null,
      countryid: 1,
      bio: "<b>hi</b>",
      cover_photo: null,
      profile_pic: null,
      last_status: null,
      stats: { user_deviations: 1, user_favourites: 2, user_comments: 3, profile_pageviews: 4, profile_comments: 5 },
      galleries: [{ folderid: "F-1", parent: null, name: "Featured" }],
    });
    expect(parsed.galleries?.[0]?.name).toBe("Featured");
  });
});

describe("MetadataResponseSchema", () => {
  it("accepts metadata with tags, submission, stats, an empty camera array and folder refs", () => {
    const parsed = MetadataResponseSchema.parse({
      metadata: [
        {
          deviationid: "D-1",
          printid: null,
          author: user,
          is_watching: false,
          title: "T",
          description: "<p>d</p>",
          license: "No License",
          allows_comments: true,
          tags: [{ tag_name: "cat", sponsored: false, sponsor: "" }],
          is_favourited: false,
          is_mature: false,
          submission: {
            creation_time: "2020-09-14T10:21:28-0700",
            category: "digitalart",
            file_size: "1 MB",
            resolution: "800x600",
            submitted_with: { app: "DA", url: "https://x" },
          },
          stats: { views: 1, views_today: 0, favourites: 2, comments: 3, downloads: 4, downloads_today: 0 },
          camera: [],
          collections: [{ folderid: "C-1", name: "Favs" }],
          can_post_comment: true,
        },
      ],
    });
    expect(parsed.metadata[0]?.camera).toEqual({});
  });
});

describe("NoteFolderSchema", () => {
  it("accepts `folder` or `folderid` and a string count", () => {
    expect(NoteFolderSchema.parse({ folder: "F-1", parentid: null, title: "Inbox", count: "12" }).count).toBe("12");
    expect(NoteFolderSchema.parse({ folderid: "F-2", title: "Sent", count: 3 }).folderid).toBe("F-2");
    expect(NoteFolderSchema.safeParse({ title: "no id" }).success).toBe(false);
    expect(NoteFoldersResponseSchema.parse({ results: [{ folder: "1", title: "Inbox", count: "0" }] }).results).toHaveLength(1);
  });
});

describe("StashSubmitResultSchema", () => {
  it("keeps 64-bit stash ids as strings", () => {
    const parsed = StashSubmitResultSchema.parse({ status: "success", itemid: 4502318545176648, stack: "Sta.sh Uploads", stackid: "4502318545176649" });
    expect(parsed.itemid).toBe("4502318545176648");
    expect(parsed.stackid).toBe("4502318545176649");
  });
});

describe("small schemas", () => {
  it("accept the documented shapes", () => {
    expect(PlaceboSchema.parse({ status: "success" }).status).toBe("success");
    expect(CountriesSchema.parse({ results: [{ countryid: 1, name: "United States" }] }).results).toHaveLength(1);
    expect(WhofavedEntrySchema.parse({ user, time: 1600102888 }).time).toBe(1600102888);
    expect(
      WatchEntrySchema.parse({ user, is_watching: true, watches_you: false, lastvisit: null, watch: { friend: true, deviations: true } }).watch?.friend,
    ).toBe(true);
    expect(CommentContextSchema.parse([])).toEqual({});
    expect(
      GalleryFolderSchema.parse({
        folderid: "F",
        parent: null,
        name: "Featured",
        has_subfolders: true,
        subfolders: [{ folderid: "G", parent: "F", name: "Sub" }],
      }).subfolders?.[0]?.folderid,
    ).toBe("G");
    expect(
      MltPreviewSchema.parse({
        seed: "S",
        author: user,
        more_from_artist: [{ deviationid: "A", is_deleted: true }],
        more_from_da: [],
        suggested_collections: [{ collection: { folderid: 123, name: "c", owner: user }, deviations: [] }],
      }).seed,
    ).toBe("S");
  });
});

describe("ids sent as numbers", () => {
  it("reads comment, note and message ids as their decimal strings (docs/service-behaviour.md#tolerant-reading)", () => {
    expect(CommentSchema.parse({ commentid: 4000000007, parentid: 4000000001 })).toMatchObject({ commentid: "4000000007", parentid: "4000000001" });
    expect(NoteSchema.parse({ noteid: 60000013 }).noteid).toBe("60000013");
    expect(MessageSchema.parse({ messageid: 12 }).messageid).toBe("12");
    expect(
      NoteSendResultSchema.parse({ results: [{ success: false, user: { userid: null, username: "x", usericon: null, type: null } }] }).results[0]?.success,
    ).toBe(false);
  });
});

describe(parseEpochSeconds.name, () => {
  it("reads epoch seconds from numbers and numeric strings", () => {
    expect(parseEpochSeconds("1600102888")?.toISOString()).toBe("2020-09-14T17:01:28.000Z");
    expect(parseEpochSeconds(1600102888)?.toISOString()).toBe("2020-09-14T17:01:28.000Z");
  });

  it("returns undefined, never throws, on anything else", () => {
    for (const bad of ["", "abc", "12a", null, undefined, {}, [], Number.NaN, Number.POSITIVE_INFINITY, 1e20, true]) {
      expect(parseEpochSeconds(bad)).toBeUndefined();
    }
  });
});

describe(parseIsoTime.name, () => {
  it("reads ISO 8601 with or without a colon in the offset", () => {
    expect(parseIsoTime("2020-09-14T10:21:28-0700")?.toISOString()).toBe("2020-09-14T17:21:28.000Z");
    expect(parseIsoTime("2020-09-14T10:21:28-07:00")?.toISOString()).toBe("2020-09-14T17:21:28.000Z");
    expect(parseIsoTime("2020-09-14T17:21:28Z")?.toISOString()).toBe("2020-09-14T17:21:28.000Z");
    expect(parseIsoTime("2020-09-14T17:21:28.5+0000")?.toISOString()).toBe("2020-09-14T17:21:28.500Z");
    expect(parseIsoTime("2020-09-14")?.toISOString()).toBe("2020-09-14T00:00:00.000Z");
  });

  it("returns undefined, never throws, on anything else", () => {
    for (const bad of ["", "yesterday", "2020-02-31", "2020-13-01T00:00:00Z", "1600102888", 1600102888, null, undefined, {}]) {
      expect(parseIsoTime(bad)).toBeUndefined();
    }
  });
});
