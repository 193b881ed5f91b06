// The operation catalogue against the service's two listings (docs/service-behaviour.md#catalogue-listings): every listed (method, path) present, nothing twice,
// removed flags exactly as docs/service-behaviour.md#endpoint-status lists them, and the path helpers.
import { describe, expect, it } from "vitest";
import { CATALOGUE, expandPath, isOperationId, operation, pathParams } from "../../src/api/catalogue.ts";

/** Both listings of the service's catalogue (docs/service-behaviour.md#catalogue-listings), every table. */
const SPEC_TABLE = `
| GET | /browse/categorytree | Category information for browsing |
| GET | /browse/dailydeviations | Daily deviations |
| GET | /browse/deviantsyouwatch | Deviations of users the caller watches |
| GET | /browse/home | Homepage browse |
| GET | /browse/hot | Hot deviations |
| GET | /browse/morelikethis | More Like This result for a seed deviation |
| GET | /browse/morelikethis/preview | More Like This preview for a seed deviation |
| GET | /browse/newest | Newest deviations |
| GET | /browse/popular | Popular deviations |
| GET | /browse/tags | Browse one tag |
| GET | /browse/tags/search | Tag autocomplete |
| GET | /browse/topic | Deviations of a topic |
| GET | /browse/topics | Topics with deviations of each |
| GET | /browse/toptopics | Top topics with an example deviation each |
| GET | /browse/undiscovered | Undiscovered deviations |
| GET | /browse/user/journals | Journals of a user |
| GET | /collections/{folderid} | Contents of a collection folder |
| GET | /collections/all | All deviations in the user's collection |
| POST | /collections/fave | Add a deviation to favourites |
| POST | /collections/unfave | Remove a deviation from favourites |
| GET | /collections/folders | List collection folders |
| POST | /collections/folders/copy_deviations | Copy a list of deviations to a destination folder |
| POST | /collections/folders/create | Create a collection folder |
| POST | /collections/folders/move_deviations | Listed with the purpose "copy a list of deviations to a destination folder" |
| GET | /collections/folders/remove/{folderid} | Delete a collection folder |
| POST | /collections/folders/remove_deviations | Remove a list of deviations from a folder |
| POST | /collections/folders/update | Update a folder (no purpose text given) |
| POST | /collections/folders/update_deviation_order | Change the order of a deviation in a folder |
| POST | /collections/folders/update_order | Rearrange folder positions |
| GET | /comments/{commentid}/siblings | Siblings of a comment |
| GET | /comments/deviation/{deviationid} | Comments on a deviation |
| POST | /comments/post/deviation/{deviationid} | Post a comment on a deviation |
| POST | /comments/post/profile/{username} | Post a comment on a user profile |
| POST | /comments/post/status/{statusid} | Post a comment on a status |
| GET | /comments/profile/{username} | Comments on a user profile |
| GET | /comments/status/{statusid} | Comments on a status |
| GET | /curated | Available curated content |
| GET | /curated/tags | Featured tags |
| GET | /data/countries | List of countries |
| GET | /data/privacy | The service's privacy policy |
| GET | /data/submission | The service's submission policy |
| GET | /data/tos | The service's terms of service |
| GET | /deviation/{deviationid} | Fetch a deviation |
| GET | /deviation/content | Full data not included in the main deviation object |
| GET | /deviation/download/{deviationid} | Original file download, if allowed |
| GET | /deviation/embeddedcontent | Content embedded in a deviation |
| POST | /deviation/edit/{deviationid} | Edit a deviation |
| POST | /deviation/journal/create | Create a journal |
| POST | /deviation/journal/update/{deviationid} | Update a journal |
| POST | /deviation/literature/create | Create literature |
| POST | /deviation/literature/update/{deviationid} | Update literature |
| GET | /deviation/metadata | Metadata for a set of deviations |
| GET | /deviation/whofaved | Users who faved a deviation |
| GET | /feed/home | Watch feed |
| GET | /feed/home/{bucketid} | Content related to one watch event |
| GET | /feed/notifications | Notifications |
| GET | /feed/profile | Profile feed |
| GET | /feed/settings | Feed settings |
| POST | /feed/settings/update | Change feed settings |
| GET | /gallery/{folderid} | Contents of a gallery folder |
| GET | /gallery/all | The "all" view of a user's gallery |
| GET | /gallery/folders | List gallery folders |
| POST | /gallery/folders/copy_deviations | Copy a list of deviations to a destination folder |
| POST | /gallery/folders/create | Create gallery folders |
| POST | /gallery/folders/move | Move a folder into another folder |
| POST | /gallery/folders/move_deviations | Listed with the purpose "copy a list of deviations to a destination folder" |
| POST or GET | /gallery/folders/remove/{folderid} | Delete a gallery folder (one listing gives POST, the other GET) |
| POST | /gallery/folders/remove_deviations | Remove a list of deviations from a gallery folder |
| POST | /gallery/folders/update | Update a folder (no purpose text given) |
| POST | /gallery/folders/update_deviation_order | Change the order of a deviation in a folder |
| POST | /gallery/folders/update_order | Rearrange folder positions |
| POST | /messages/delete | Delete a message or a message stack |
| GET | /messages/feed | Feed of all messages |
| GET | /messages/feedback | Feedback messages |
| GET | /messages/feedback/{stackid} | Messages in a feedback stack |
| GET | /messages/mentions | Mention messages |
| GET | /messages/mentions/{stackid} | Messages in a mentions stack |
| GET | /notes | List notes |
| GET | /notes/{noteid} | One note |
| POST | /notes/delete | Delete one or several notes |
| GET | /notes/folders | List note folders |
| POST | /notes/folders/create | Create a note folder |
| POST | /notes/folders/remove/{folderid} | Delete a note folder |
| POST | /notes/folders/rename/{folderid} | Rename a note folder |
| POST | /notes/mark | Mark notes |
| POST | /notes/move | Move notes to a folder |
| POST | /notes/send | Send a note |
| GET | /stash/{stackid} | Metadata of a stack |
| GET | /stash/{stackid}/contents | Contents of a stack |
| GET | /stash/delete | Delete a previously submitted file |
| GET | /stash/delta | List all staging folders and submissions of a user |
| GET | /stash/item/{itemid} | Metadata of an item |
| POST | /stash/move/{stackid} | Move the stack into a target stack |
| POST | /stash/position/{stackid} | Change the position of a stack within its parent |
| POST | /stash/publish | Publish a staged item as a deviation |
| GET | /stash/publish/categorytree | Category information for publishing |
| GET | /stash/publish/userdata | The user's data about features and agreements |
| GET | /stash/space | Staging space the user has left for uploads |
| POST | /stash/submit | Submit files to the staging area or modify existing files |
| POST | /stash/update/{stackid} | Update a stack's details |
| GET | /user/damntoken | Retrieve the auth token needed to connect to the service's chat servers (the path segment holds a brand-derived word; it is given as listed) |
| GET | /user/friends/{username} | A user's list of friends |
| GET | /user/friends/search | Search friends by username |
| GET | /user/friends/unwatch/{username} | Unwatch a user (GET as listed) |
| POST | /user/friends/watch/{username} | Watch a user |
| GET | /user/friends/watching/{username} | Whether a user is watched by the given user |
| GET | /user/profile/{username} | Profile information |
| POST | /user/profile/avatar/update | Upload a new avatar |
| GET | /user/profile/posts | All journals and status updates of a user in one feed |
| POST | /user/profile/update | Update the user's profile |
| GET | /user/statuses/ | A user's statuses |
| GET | /user/statuses/{statusid} | One status |
| POST | /user/statuses/post | Post a status |
| GET | /user/tiers/{username} | (no purpose text given) |
| GET | /user/watchers/{username} | A user's list of watchers |
| GET | /user/whoami | Info on the authenticated user |
| POST | /user/whois | Info for given usernames |
| GET | /placebo | Confirm that the access token is valid |
`;

type SpecRow = { methods: ("GET" | "POST")[]; path: string };

function specRows(): SpecRow[] {
  return SPEC_TABLE.trim()
    .split("\n")
    .map((line) => line.split("|").map((cell) => cell.trim()))
    .map(([, method, path]) => ({
      methods: method === "POST or GET" ? (["POST", "GET"] as const).slice() : [method as "GET" | "POST"],
      path: path as string,
    }));
}

/** docs/service-behaviour.md#endpoint-status: stash except submit/publish, and eight more. */
const REMOVED_PATHS = [
  "/stash/{stackid}",
  "/stash/{stackid}/contents",
  "/stash/delete",
  "/stash/delta",
  "/stash/item/{itemid}",
  "/stash/move/{stackid}",
  "/stash/position/{stackid}",
  "/stash/publish/categorytree",
  "/stash/publish/userdata",
  "/stash/space",
  "/stash/update/{stackid}",
  "/browse/deviantsyouwatch",
  "/browse/newest",
  "/browse/popular",
  "/browse/user/journals",
  "/browse/morelikethis",
  "/deviation/embeddedcontent",
  "/user/statuses/",
  "/user/statuses/{statusid}",
].sort();

describe("CATALOGUE", () => {
  const rows = specRows();

  it("has one entry per listed (method, path): 118 paths, /gallery/folders/remove/{folderid} twice", () => {
    expect(rows).toHaveLength(118);
    expect(CATALOGUE).toHaveLength(119);
  });

  it("contains every (method, path) of the spec's tables and nothing else", () => {
    const expected = rows.flatMap((r) => r.methods.map((m) => `${m} ${r.path}`)).sort();
    const actual = CATALOGUE.map((op) => `${op.method} ${op.path}`).sort();
    expect(actual).toEqual(expected);
  });

  it("has no duplicate ids and no duplicate (method, path) pairs", () => {
    const ids = CATALOGUE.map((op) => op.id);
    expect(new Set(ids).size).toBe(ids.length);
    const pairs = CATALOGUE.map((op) => `${op.method} ${op.path}`);
    expect(new Set(pairs).size).toBe(pairs.length);
  });

  it("marks exactly the removed endpoints as removed, each with a date and a reason", () => {
    const removed = CATALOGUE.filter((op) => op.removed !== false);
    expect(removed.map((op) => op.path).sort()).toEqual(REMOVED_PATHS);
    for (const op of removed) {
      expect(op.removed && op.removed.since.length > 0 && op.removed.reason.length > 0).toBe(true);
    }
    expect(operation("stash.submit").removed).toBe(false);
    expect(operation("stash.publish").removed).toBe(false);
    expect(operation("browse.morelikethis.preview").removed).toBe(false);
  });

  it("marks every /feed/* operation, and nothing else, as deprecated", () => {
    const deprecated = CATALOGUE.filter((op) => op.deprecated !== false).map((op) => op.path);
    expect(deprecated.sort()).toEqual(
      CATALOGUE.map((op) => op.path)
        .filter((p) => p.startsWith("/feed/"))
        .sort(),
    );
    expect(deprecated).toHaveLength(6);
  });

  it("gives listings a page size and items key, and page sizes from docs/service-behaviour.md#page-size-maxima", () => {
    for (const op of CATALOGUE) {
      if (op.paging !== "none") expect(op.itemsKey, op.id).toBeDefined();
    }
    const limits = Object.fromEntries(CATALOGUE.filter((op) => op.maxLimit !== undefined).map((op) => [op.id, op.maxLimit]));
    expect(limits).toMatchObject({
      "gallery.all": 24,
      "gallery.folder": 24,
      "gallery.folders": 50,
      "collections.all": 24,
      "collections.folder": 24,
      "collections.folders": 50,
      "browse.tags": 50,
      "browse.home": 50,
      "browse.topic": 24,
      "browse.topics": 10,
      "comments.deviation": 50,
      "comments.siblings": 50,
      "deviation.whofaved": 50,
      "user.friends": 50,
      "user.watchers": 50,
      "user.profile.posts": 50,
      "messages.mentions": 50,
      "feed.home.bucket": 50,
    });
    expect(operation("deviation.metadata").batch).toEqual({ param: "deviationids", max: 50, maxWithExt: 10 });
    expect(
      CATALOGUE.filter((op) => op.itemsKey === "thread")
        .map((op) => op.id)
        .sort(),
    ).toEqual(["comments.deviation", "comments.profile", "comments.siblings", "comments.status"]);
    expect(operation("user.profile.posts").paging).toBe("cursor");
    expect(operation("messages.feed").paging).toBe("cursor");
    expect(operation("feed.home").itemsKey).toBe("items");
  });

  it("takes token kinds and scopes from docs/service-behaviour.md#scopes", () => {
    expect(operation("placebo")).toMatchObject({ token: "any", scopes: [] });
    expect(operation("user.whoami")).toMatchObject({ token: "user", scopes: ["user"] });
    expect(operation("user.whois")).toMatchObject({ token: "user", method: "POST", write: false });
    expect(operation("gallery.all")).toMatchObject({ token: "any", scopes: ["browse"] });
    expect(operation("collections.fave")).toMatchObject({ token: "user", scopes: ["browse", "collection"], write: true });
    expect(operation("gallery.folders.create").scopes).toEqual(["browse", "gallery"]);
    expect(operation("comments.post.status").scopes).toEqual(["browse", "comment.post"]);
    expect(operation("deviation.edit").scopes).toEqual(["stash", "publish"]);
    expect(operation("deviation.journal.update").scopes).toEqual(["user.manage"]);
    expect(operation("stash.publish").scopes).toEqual(["stash", "publish"]);
    expect(operation("browse.morelikethis.preview").scopes).toEqual(["browse", "browse.mlt"]);
    expect(operation("user.friends.watching").scopes).toEqual(["browse", "user"]);
    for (const op of CATALOGUE.filter((o) => o.path.startsWith("/messages/"))) expect(op.scopes, op.id).toEqual(["message"]);
    for (const op of CATALOGUE.filter((o) => o.write)) expect(op.token, op.id).toBe("user");
    // state-changing GETs, as listed
    expect(operation("user.friends.unwatch")).toMatchObject({ method: "GET", write: true });
    expect(operation("collections.folders.remove")).toMatchObject({ method: "GET", write: true });
  });

  it("records the listing where only one listing has the operation", () => {
    expect(operation("browse.toptopics").listing).toBe("A");
    expect(operation("user.tiers").listing).toBe("A");
    expect(operation("curated").listing).toBe("B");
    expect(operation("user.damntoken").listing).toBe("B");
    expect(operation("notes.send").listing).toBeUndefined();
  });

  it("uses path templates whose placeholders are whole segments", () => {
    for (const op of CATALOGUE) {
      expect(op.path.startsWith("/"), op.id).toBe(true);
      for (const segment of op.path.split("/")) {
        if (segment.includes("{")) expect(segment, op.id).toMatch(/^\{[a-z]+\}$/);
      }
    }
  });
});

describe(operation.name, () => {
  it("finds entries by id and throws on unknown ids", () => {
    expect(operation("gallery.folder")).toMatchObject({ method: "GET", path: "/gallery/{folderid}", paging: "offset" });
    expect(() => operation("gallery.nope")).toThrow(/unknown API operation "gallery.nope"/);
    expect(isOperationId("notes.folders.rename")).toBe(true);
    expect(isOperationId("notes.folders.nope")).toBe(false);
  });
});

describe(expandPath.name, () => {
  it("fills and URL-encodes each placeholder as one segment", () => {
    expect(expandPath("/gallery/{folderid}", { folderid: "A1B2-C3" })).toBe("/gallery/A1B2-C3");
    expect(expandPath("/user/profile/{username}", { username: "a/b c?d" })).toBe("/user/profile/a%2Fb%20c%3Fd");
    expect(expandPath("/stash/{stackid}/contents", { stackid: 4502318545176648 })).toBe("/stash/4502318545176648/contents");
    expect(expandPath("/user/whoami", {})).toBe("/user/whoami");
  });

  it("throws on a missing or empty placeholder, or a dot segment", () => {
    expect(() => expandPath("/gallery/{folderid}", {})).toThrow(/needs a value for \{folderid\}/);
    expect(() => expandPath("/gallery/{folderid}", { folderid: "" })).toThrow(/folderid/);
    expect(() => expandPath("/gallery/{folderid}", { folderid: null })).toThrow(/folderid/);
    expect(() => expandPath("/gallery/{folderid}", { folderid: ["a"] })).toThrow(/must be a string/);
    // A dot segment would resolve to another endpoint (the URL's directory), not to this one's item.
    expect(() => expandPath("/deviation/{deviationid}", { deviationid: ".." })).toThrow(/cannot be "\.\."/);
    expect(() => expandPath("/deviation/{deviationid}", { deviationid: "." })).toThrow(/cannot be "\."/);
  });

  it("lists placeholders in order", () => {
    expect(pathParams("/comments/{commentid}/siblings")).toEqual(["commentid"]);
    expect(pathParams("/placebo")).toEqual([]);
  });
});
