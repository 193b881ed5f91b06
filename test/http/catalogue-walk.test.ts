// Walks the whole catalogue against the simulator over real sockets: every operation once through DaClient
// and the real HTTP transport, checking the body against its schema AND the simulator's request log for
// the method, path and exact parameters the catalogue and the client promise. A second pass in "current"
// mode checks that every removed operation raises EndpointGoneError.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CATALOGUE, expandPath, operation, type OperationId, type Scope } from "../../src/api/catalogue.ts";
import { DaClient, DEFAULT_PAGE_SIZE, journalUpdateForm, responseSchema, type JournalFields, type LiteratureFields } from "../../src/api/client.ts";
import { isEndpointGone } from "../../src/api/errors.ts";
import { API_PATH, createHttpTransport, type HttpTransport } from "../../src/api/http.ts";
import { createPacer } from "../../src/api/pacer.ts";
import { staticTokenProvider } from "../../src/api/token-provider.ts";
import type { Page, PageIterator } from "../../src/api/transport.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type GroundTruth, type RequestLogEntry, type Simulator } from "../../src/simulator/server.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createPacerStores, type PacerStores } from "../helpers/pacer-stores.ts";

type Sent = Record<string, string | string[]>;
type Outcome = { body: unknown } | { page: Page<unknown> };

/** Ids the walk needs, picked from the simulator's ground truth (and from what earlier writes created). */
type Fixtures = {
  owner: string;
  other: string;
  deviation: string;
  journal: string;
  literature: string;
  gallery: { folderid: string; deviations: string[] };
  collection: { folderid: string; deviations: string[] };
  deviationComment: { deviationid: string; commentid: string };
  status: string;
  profileCommented: string;
  note: string;
  feedbackStack: string;
  feedbackType: string;
  mentionsStack: string;
  message: string;
  bucket: string;
  stash: { itemid: string; stackid: string };
  /** A second item, for the (legacy) delete, so submit and publish still find the first. */
  stashSpare: string;
  /** Folders a step made (in its setup or its own request), for the request it records. */
  created: Record<string, string>;
};

type Step = {
  id: OperationId;
  /** Whose token; user by default. */
  as?: "user" | "client";
  /** Path placeholders, to check the path the log shows. */
  path?: (f: Fixtures) => Record<string, string>;
  /** Requests made before the recorded one (e.g. creating a folder to delete), not checked. */
  setup?: (c: DaClient, f: Fixtures) => Promise<void>;
  run: (c: DaClient, f: Fixtures) => Promise<Outcome>;
  /** Exactly the query (GET) or form (POST) the simulator must have received. */
  sent: (f: Fixtures) => Sent;
  /** The dataset guarantees items on the first page. */
  nonEmpty?: boolean;
  /** The request is expected to be refused (with this HTTP status and message), e.g. a multipart-only endpoint. */
  refused?: { status: number; message: RegExp };
};

const ALL_SCOPES: Scope[] = ["basic", ...new Set(CATALOGUE.flatMap((op) => op.scopes))];
const T = "true";
const F = "false";

async function first<T>(pages: PageIterator<T>): Promise<Outcome> {
  for await (const page of pages) return { page: page as Page<unknown> };
  throw new Error("the listing yielded no page");
}
const body = async (p: Promise<unknown>): Promise<Outcome> => ({ body: await p });
const limit = (id: OperationId) => String(operation(id).maxLimit ?? DEFAULT_PAGE_SIZE);
const offsetQuery = (id: OperationId, extra: Sent = {}): Sent => ({ ...extra, offset: "0", limit: limit(id) });

function pickFixtures(truth: GroundTruth): Fixtures {
  const ownerUser = truth.users.get(truth.ownerId);
  if (!ownerUser) throw new Error("simulator has no owner");
  const ownDevs = [...truth.deviations.values()].filter((d) => d.authorId === truth.ownerId && !d.isDeleted && !d.isMature);
  const need = <T>(x: T | undefined, what: string): T => {
    if (x === undefined) throw new Error(`the simulator's dataset has no ${what}`);
    return x;
  };
  const image = need(
    ownDevs.find((d) => d.kind === "image" && d.isDownloadable),
    "downloadable image deviation of the owner",
  );
  const journal = need(
    ownDevs.find((d) => d.kind === "journal"),
    "journal of the owner",
  );
  const literature = need(
    ownDevs.find((d) => d.kind === "literature"),
    "literature of the owner",
  );
  const other = need(
    [...truth.users.values()].find((u) => u.userid !== truth.ownerId && !u.isDeactivated && u.type !== "group"),
    "second user",
  );
  const gallery = need(
    truth.galleryFolders.find((g) => g.ownerId === truth.ownerId && g.deviationIds.length > 1),
    "gallery folder",
  );
  const collection = need(
    truth.collectionFolders.find((c) => c.ownerId === truth.ownerId && c.deviationIds.length > 1),
    "collection folder",
  );
  const devComment = need(
    truth.comments.find((c) => c.target.kind === "deviation" && c.hidden === null && truth.deviations.get(c.target.id)?.isDeleted === false),
    "comment on a deviation",
  );
  const status = need(
    truth.statuses.find((s) => !s.isDeleted && truth.comments.some((c) => c.target.kind === "status" && c.target.id === s.statusid)) ??
      truth.statuses.find((s) => !s.isDeleted),
    "status",
  );
  const profileComment = need(
    truth.comments.find((c) => c.target.kind === "profile"),
    "profile comment",
  );
  const feedback = need(
    truth.messages.find((m) => m.box === "feedback" && m.feedbackType !== null),
    "feedback message",
  );
  const mention = need(
    truth.messages.find((m) => m.box === "mentions"),
    "mention",
  );
  const stash = need(truth.stash[0], "stash item (seedStashItem uploads two)");
  const stashSpare = need(truth.stash[1], "second stash item (seedStashItem uploads two)");
  return {
    owner: ownerUser.username,
    other: other.username,
    deviation: image.deviationid,
    journal: journal.deviationid,
    literature: literature.deviationid,
    gallery: { folderid: gallery.folderid, deviations: [...gallery.deviationIds] },
    collection: { folderid: collection.folderid, deviations: [...collection.deviationIds] },
    deviationComment: { deviationid: devComment.target.id, commentid: devComment.commentid },
    status: status.statusid,
    profileCommented: need(truth.users.get(profileComment.target.id) ?? truth.usersByName.get(profileComment.target.id.toLowerCase()), "profile").username,
    note: need(truth.notes[0], "note").noteid,
    feedbackStack: feedback.stackid,
    feedbackType: feedback.feedbackType ?? "comments",
    mentionsStack: mention.stackid,
    message: need(
      truth.messages.find((m) => m.messageid !== feedback.messageid),
      "message",
    ).messageid,
    bucket: need(truth.feed[0], "feed item").bucketid,
    stash: { itemid: stash.itemid, stackid: stash.stackid },
    stashSpare: stashSpare.itemid,
    created: {},
  };
}

const JOURNAL: Omit<JournalFields, "cover_image_deviation_id"> = {
  title: "Walk journal",
  tags: ["walk", "test"],
  is_mature: false,
  allow_comments: true,
  license: { creative_commons: true, commercial: "no", modify: "share" },
};
const LITERATURE: LiteratureFields = {
  title: "Walk story",
  tags: ["walk"],
  galleryids: [],
  is_mature: false,
  allow_comments: true,
  license: { creative_commons: false },
};

/** Form values as the transport encodes them: booleans "true"/"false", arrays with `[]`. */
function encoded(params: Record<string, unknown>): Sent {
  const out: Sent = {};
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      if (value.length > 0) out[key.endsWith("[]") ? key : `${key}[]`] = value.length === 1 ? String(value[0]) : value.map(String);
    } else out[key] = String(value);
  }
  return out;
}

// ---- every catalogue operation, in an order where writes see what earlier steps created --------------

const READS: Step[] = [
  // util, data
  { id: "placebo", as: "client", run: (c) => body(c.placebo()), sent: () => ({}) },
  { id: "data.countries", as: "client", run: (c) => body(c.countries()), sent: () => ({}) },
  { id: "data.privacy", as: "client", run: (c) => body(c.privacyPolicy()), sent: () => ({}) },
  { id: "data.submission", as: "client", run: (c) => body(c.submissionPolicy()), sent: () => ({}) },
  { id: "data.tos", as: "client", run: (c) => body(c.termsOfService()), sent: () => ({}) },

  // user
  { id: "user.whoami", run: (c) => body(c.whoami({ expand: ["user.details"] })), sent: () => ({ expand: "user.details" }) },
  { id: "user.whois", run: (c, f) => body(c.whois([f.owner, f.other])), sent: (f) => ({ "usernames[]": [f.owner, f.other] }) },
  {
    id: "user.profile",
    as: "client",
    path: (f) => ({ username: f.other }),
    run: (c, f) => body(c.profile(f.other, { ext_galleries: true })),
    sent: () => ({ ext_galleries: T }),
  },
  {
    id: "user.profile.posts",
    run: (c, f) => first(c.profilePosts({ username: f.owner })),
    sent: (f) => ({ username: f.owner, mature_content: T, limit: limit("user.profile.posts") }),
  },
  {
    id: "user.friends",
    path: (f) => ({ username: f.owner }),
    run: (c, f) => first(c.friends(f.owner)),
    sent: () => offsetQuery("user.friends", { mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "user.watchers",
    path: (f) => ({ username: f.owner }),
    run: (c, f) => first(c.watchers(f.owner, { expand: ["user.stats"] })),
    sent: () => offsetQuery("user.watchers", { expand: "user.stats", mature_content: T }),
    nonEmpty: true,
  },
  { id: "user.friends.search", run: (c, f) => body(c.friendsSearch({ query: f.other.slice(0, 3) })), sent: (f) => ({ query: f.other.slice(0, 3) }) },
  { id: "user.friends.watching", path: (f) => ({ username: f.other }), run: (c, f) => body(c.watching(f.other)), sent: () => ({}) },
  { id: "user.tiers", path: (f) => ({ username: f.owner }), run: (c, f) => body(c.tiers(f.owner)), sent: () => ({}) },
  { id: "user.damntoken", run: (c) => body(c.call("user.damntoken")), sent: () => ({}) },

  // gallery, collections
  {
    id: "gallery.folders",
    run: (c, f) => first(c.galleryFolders({ username: f.owner, calculate_size: true })),
    sent: (f) => offsetQuery("gallery.folders", { username: f.owner, calculate_size: T, mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "gallery.folder",
    path: (f) => ({ folderid: f.gallery.folderid }),
    run: (c, f) => first(c.galleryFolder(f.gallery.folderid, { username: f.owner, mode: "newest" })),
    sent: (f) => offsetQuery("gallery.folder", { username: f.owner, mode: "newest", mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "gallery.all",
    run: (c, f) => first(c.galleryAll({ username: f.owner })),
    sent: (f) => offsetQuery("gallery.all", { username: f.owner, mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "collections.folders",
    run: (c, f) => first(c.collectionFolders({ username: f.owner, ext_preload: true })),
    sent: (f) => offsetQuery("collections.folders", { username: f.owner, ext_preload: T, mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "collections.folder",
    path: (f) => ({ folderid: f.collection.folderid }),
    run: (c, f) => first(c.collectionFolder(f.collection.folderid, { username: f.owner })),
    sent: (f) => offsetQuery("collections.folder", { username: f.owner, mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "collections.all",
    run: (c, f) => first(c.collectionsAll({ username: f.owner })),
    sent: (f) => offsetQuery("collections.all", { username: f.owner, mature_content: T }),
    nonEmpty: true,
  },

  // deviations
  {
    id: "deviation.get",
    path: (f) => ({ deviationid: f.deviation }),
    run: (c, f) => body(c.deviation(f.deviation, { expand: ["user.watch"] })),
    sent: () => ({ expand: "user.watch" }),
  },
  { id: "deviation.content", run: (c, f) => body(c.deviationContent(f.journal)), sent: (f) => ({ deviationid: f.journal, mature_content: T }) },
  {
    id: "deviation.download",
    path: (f) => ({ deviationid: f.deviation }),
    run: (c, f) => body(c.deviationDownload(f.deviation)),
    sent: () => ({ mature_content: T }),
  },
  {
    id: "deviation.metadata",
    run: async (c, f) => {
      const batches = [];
      for await (const batch of c.deviationMetadata([f.deviation, f.journal], { ext_stats: true })) batches.push(batch);
      expect(batches).toHaveLength(1);
      expect(batches[0]?.metadata.map((m) => m.deviationid.toUpperCase())).toEqual([f.deviation, f.journal].map((id) => id.toUpperCase()));
      return { body: { metadata: batches[0]?.metadata } };
    },
    sent: (f) => ({ ext_stats: T, mature_content: T, "deviationids[]": [f.deviation, f.journal] }),
  },
  {
    id: "deviation.whofaved",
    run: (c, f) => first(c.whofaved(f.deviation)),
    sent: (f) => offsetQuery("deviation.whofaved", { deviationid: f.deviation, mature_content: T }),
  },

  // comments
  {
    id: "comments.deviation",
    path: (f) => ({ deviationid: f.deviationComment.deviationid }),
    run: (c, f) => first(c.deviationComments(f.deviationComment.deviationid, { maxdepth: 5 })),
    sent: () => offsetQuery("comments.deviation", { maxdepth: "5", mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "comments.siblings",
    path: (f) => ({ commentid: f.deviationComment.commentid }),
    run: (c, f) => first(c.commentSiblings(f.deviationComment.commentid, { ext_item: true })),
    sent: () => offsetQuery("comments.siblings", { ext_item: T, mature_content: T }),
    nonEmpty: true,
  },
  {
    id: "comments.profile",
    as: "client",
    path: (f) => ({ username: f.profileCommented }),
    run: (c, f) => first(c.profileComments(f.profileCommented)),
    sent: () => offsetQuery("comments.profile"),
    nonEmpty: true,
  },
  {
    id: "comments.status",
    path: (f) => ({ statusid: f.status }),
    run: (c, f) => first(c.statusComments(f.status)),
    sent: () => offsetQuery("comments.status", { mature_content: T }),
  },

  // messages, notes
  { id: "messages.feed", run: (c) => first(c.messagesFeed({ stack: false })), sent: () => ({ stack: F }), nonEmpty: true },
  {
    id: "messages.feedback",
    run: (c, f) => first(c.feedback({ type: f.feedbackType, stack: true })),
    sent: (f) => offsetQuery("messages.feedback", { type: f.feedbackType, stack: T }),
    nonEmpty: true,
  },
  {
    id: "messages.feedback.stack",
    path: (f) => ({ stackid: f.feedbackStack }),
    run: (c, f) => first(c.feedbackStack(f.feedbackStack)),
    sent: () => offsetQuery("messages.feedback.stack"),
    nonEmpty: true,
  },
  { id: "messages.mentions", run: (c) => first(c.mentions()), sent: () => offsetQuery("messages.mentions"), nonEmpty: true },
  {
    id: "messages.mentions.stack",
    path: (f) => ({ stackid: f.mentionsStack }),
    run: (c, f) => first(c.mentionsStack(f.mentionsStack)),
    sent: () => offsetQuery("messages.mentions.stack"),
    nonEmpty: true,
  },
  { id: "notes.list", run: (c) => first(c.notes()), sent: () => offsetQuery("notes.list"), nonEmpty: true },
  { id: "notes.get", path: (f) => ({ noteid: f.note }), run: (c, f) => body(c.note(f.note)), sent: () => ({}) },
  { id: "notes.folders", run: (c) => body(c.noteFolders()), sent: () => ({}) },

  // legacy feed
  // The watch feed takes mature_content like other listings (docs/service-behaviour.md#mature-content-param).
  { id: "feed.home", run: (c) => first(c.feedHome()), sent: () => ({ mature_content: T }), nonEmpty: true },
  {
    id: "feed.home.bucket",
    path: (f) => ({ bucketid: f.bucket }),
    run: (c, f) => first(c.feedHomeBucket(f.bucket)),
    sent: () => offsetQuery("feed.home.bucket", { mature_content: T }),
  },
  { id: "feed.notifications", run: (c) => first(c.feedNotifications()), sent: () => ({}) },
  { id: "feed.profile", run: (c) => first(c.feedProfile()), sent: () => ({}) },
  { id: "feed.settings", run: (c) => body(c.feedSettings()), sent: () => ({}) },

  // browse (public token: no mature_content is sent)
  { id: "browse.tags", as: "client", run: (c) => first(c.browseTags("fantasy")), sent: () => offsetQuery("browse.tags", { tag: "fantasy" }) },
  { id: "browse.tags.search", as: "client", run: (c) => body(c.tagSearch("fan")), sent: () => ({ tag_name: "fan" }) },
  { id: "browse.dailydeviations", as: "client", run: (c) => body(c.dailyDeviations({ date: "2026-11-01" })), sent: () => ({ date: "2026-11-01" }) },
  { id: "browse.topic", as: "client", run: (c) => first(c.browseTopic("digitalart")), sent: () => offsetQuery("browse.topic", { topic: "digitalart" }) },
  {
    id: "browse.topics",
    as: "client",
    run: (c) => first(c.browseTopics({ num_deviations_per_topic: 3 })),
    sent: () => offsetQuery("browse.topics", { num_deviations_per_topic: "3" }),
  },
  { id: "browse.toptopics", as: "client", run: (c) => body(c.topTopics()), sent: () => ({}) },
  { id: "browse.home", run: (c) => first(c.browseHome()), sent: () => offsetQuery("browse.home", { mature_content: T }) },
  {
    id: "browse.morelikethis.preview",
    as: "client",
    run: (c, f) => body(c.mltPreview(f.deviation)),
    sent: (f) => ({ seed: f.deviation }),
  },
  { id: "browse.hot", as: "client", run: (c) => body(c.call("browse.hot", { limit: 24 })), sent: () => ({ limit: "24" }) },
  { id: "browse.undiscovered", as: "client", run: (c) => body(c.call("browse.undiscovered", { limit: 24 })), sent: () => ({ limit: "24" }) },
  { id: "browse.categorytree", as: "client", run: (c) => body(c.call("browse.categorytree", { catpath: "/" })), sent: () => ({ catpath: "/" }) },
  { id: "curated", as: "client", run: (c) => body(c.call("curated")), sent: () => ({}) },
  { id: "curated.tags", as: "client", run: (c) => body(c.call("curated.tags")), sent: () => ({}) },
];

/** Removed endpoints: legacy mode serves them; "current" mode answers 404 (see the second describe). */
type RemovedCall = { id: OperationId; params: (f: Fixtures) => Record<string, string | number | boolean | string[]> };
const REMOVED_CALLS: RemovedCall[] = [
  { id: "browse.deviantsyouwatch", params: () => ({ limit: 50 }) },
  { id: "browse.newest", params: () => ({ q: "fox", limit: 24 }) },
  { id: "browse.popular", params: () => ({ q: "fox", timerange: "1week", limit: 24 }) },
  { id: "browse.user.journals", params: (f) => ({ username: f.owner, featured: false }) },
  { id: "browse.morelikethis", params: (f) => ({ seed: f.deviation }) },
  { id: "deviation.embeddedcontent", params: (f) => ({ deviationid: f.journal }) },
  { id: "user.statuses", params: (f) => ({ username: f.owner }) },
  { id: "user.statuses.get", params: (f) => ({ statusid: f.status }) },
  { id: "stash.delta", params: () => ({ limit: 120 }) },
  { id: "stash.stack", params: (f) => ({ stackid: f.stash.stackid }) },
  { id: "stash.stack.contents", params: (f) => ({ stackid: f.stash.stackid }) },
  { id: "stash.item", params: (f) => ({ itemid: f.stash.itemid, ext_stats: true }) },
  { id: "stash.space", params: () => ({}) },
  { id: "stash.publish.categorytree", params: () => ({ catpath: "/" }) },
  { id: "stash.publish.userdata", params: () => ({}) },
  { id: "stash.update", params: (f) => ({ stackid: f.stash.stackid, title: "Renamed stack" }) },
  { id: "stash.position", params: (f) => ({ stackid: f.stash.stackid, position: 0 }) },
  { id: "stash.move", params: (f) => ({ stackid: f.stash.stackid, targetid: f.stash.stackid }) },
  { id: "stash.delete", params: (f) => ({ itemid: f.stashSpare }) },
];
const REMOVED: Step[] = REMOVED_CALLS.map((s) => {
  const inPath = (f: Fixtures) => {
    const names = new Set(
      operation(s.id)
        .path.match(/\{(\w+)\}/g)
        ?.map((p) => p.slice(1, -1)) ?? [],
    );
    return Object.entries(s.params(f)).filter(([k]) => names.has(k));
  };
  return {
    id: s.id,
    path: (f: Fixtures) => Object.fromEntries(inPath(f).map(([k, v]) => [k, String(v)])),
    run: (c: DaClient, f: Fixtures) => body(c.call(s.id, s.params(f))),
    sent: (f: Fixtures) => {
      const names = new Set(inPath(f).map(([k]) => k));
      return encoded(Object.fromEntries(Object.entries(s.params(f)).filter(([k]) => !names.has(k))));
    },
  };
});

/** A folder of the owner's made before the recorded request, for steps that act on a folder of their own. */
function withFolder(kind: "collection" | "gallery" | "noteFolder"): NonNullable<Step["setup"]> {
  return async (c, f) => {
    if (kind === "collection") f.created.collection = (await c.collectionFolderCreate({ folder: "Walk collection (setup)" })).folderid;
    if (kind === "gallery") f.created.gallery = (await c.galleryFolderCreate({ folder: "Walk gallery (setup)" })).folderid;
    if (kind === "noteFolder") {
      const r = await c.noteFolderCreate({ title: "Walk notes (setup)" });
      f.created.noteFolder = r.folderid ?? r.folder ?? "";
    }
  };
}

const WRITES: Step[] = [
  // collections
  {
    id: "collections.folders.create",
    run: async (c, f) => {
      const r = await c.collectionFolderCreate({ folder: "Walk collection" });
      f.created.collection = r.folderid;
      return { body: r };
    },
    sent: () => ({ folder: "Walk collection" }),
  },
  {
    id: "collections.fave",
    setup: withFolder("collection"),
    run: (c, f) => body(c.fave(f.deviation, { folderids: [f.created.collection ?? ""] })),
    sent: (f) => ({ deviationid: f.deviation, "folderid[]": f.created.collection ?? "" }),
  },
  { id: "collections.unfave", run: (c, f) => body(c.unfave(f.deviation)), sent: (f) => ({ deviationid: f.deviation }) },
  {
    id: "collections.folders.copy_deviations",
    setup: withFolder("collection"),
    run: (c, f) => body(c.collectionFolderCopyDeviations({ target_folderid: f.created.collection ?? "", deviationids: [f.collection.deviations[0] ?? ""] })),
    sent: (f) => ({ target_folderid: f.created.collection ?? "", "deviationids[]": f.collection.deviations[0] ?? "" }),
  },
  {
    id: "collections.folders.move_deviations",
    setup: withFolder("collection"),
    run: (c, f) =>
      body(
        c.collectionFolderMoveDeviations({
          source_folderid: f.collection.folderid,
          target_folderid: f.created.collection ?? "",
          deviationids: [f.collection.deviations[1] ?? ""],
        }),
      ),
    sent: (f) => ({ source_folderid: f.collection.folderid, target_folderid: f.created.collection ?? "", "deviationids[]": f.collection.deviations[1] ?? "" }),
  },
  {
    id: "collections.folders.remove_deviations",
    setup: withFolder("collection"),
    run: (c, f) => body(c.collectionFolderRemoveDeviations({ folderid: f.created.collection ?? "", deviationids: [f.collection.deviations[1] ?? ""] })),
    sent: (f) => ({ folderid: f.created.collection ?? "", "deviationids[]": f.collection.deviations[1] ?? "" }),
  },
  {
    id: "collections.folders.update",
    setup: withFolder("collection"),
    run: (c, f) => body(c.collectionFolderUpdate({ folderid: f.created.collection ?? "", name: "Walk collection 2", description: "renamed" })),
    sent: (f) => ({ folderid: f.created.collection ?? "", name: "Walk collection 2", description: "renamed" }),
  },
  {
    id: "collections.folders.update_deviation_order",
    run: (c, f) =>
      body(c.collectionFolderUpdateDeviationOrder({ folderid: f.collection.folderid, deviationid: f.collection.deviations[0] ?? "", position: 0 })),
    sent: (f) => ({ folderid: f.collection.folderid, deviationid: f.collection.deviations[0] ?? "", position: "0" }),
  },
  {
    id: "collections.folders.update_order",
    setup: withFolder("collection"),
    run: (c, f) => body(c.collectionFolderUpdateOrder({ folderid: f.created.collection ?? "", position: 0 })),
    sent: (f) => ({ folderid: f.created.collection ?? "", position: "0" }),
  },
  {
    id: "collections.folders.remove",
    setup: withFolder("collection"),
    path: (f) => ({ folderid: f.created.collection ?? "" }),
    run: (c, f) => body(c.collectionFolderRemove(f.created.collection ?? "")),
    sent: () => ({}),
  },

  // gallery
  {
    id: "gallery.folders.create",
    run: async (c, f) => {
      const r = await c.galleryFolderCreate({ folder: "Walk gallery", description: "made by the walk" });
      f.created.gallery = r.folderid;
      return { body: r };
    },
    sent: () => ({ folder: "Walk gallery", description: "made by the walk" }),
  },
  {
    id: "gallery.folders.copy_deviations",
    setup: withFolder("gallery"),
    run: (c, f) => body(c.galleryFolderCopyDeviations({ target_folderid: f.created.gallery ?? "", deviationids: [f.gallery.deviations[0] ?? ""] })),
    sent: (f) => ({ target_folderid: f.created.gallery ?? "", "deviationids[]": f.gallery.deviations[0] ?? "" }),
  },
  {
    id: "gallery.folders.move_deviations",
    setup: withFolder("gallery"),
    run: (c, f) =>
      body(
        c.galleryFolderMoveDeviations({
          source_folderid: f.gallery.folderid,
          target_folderid: f.created.gallery ?? "",
          deviationids: [f.gallery.deviations[1] ?? ""],
        }),
      ),
    sent: (f) => ({ source_folderid: f.gallery.folderid, target_folderid: f.created.gallery ?? "", "deviationids[]": f.gallery.deviations[1] ?? "" }),
  },
  {
    id: "gallery.folders.remove_deviations",
    setup: withFolder("gallery"),
    run: (c, f) => body(c.galleryFolderRemoveDeviations({ folderid: f.created.gallery ?? "", deviationids: [f.gallery.deviations[1] ?? ""] })),
    sent: (f) => ({ folderid: f.created.gallery ?? "", "deviationids[]": f.gallery.deviations[1] ?? "" }),
  },
  {
    id: "gallery.folders.update",
    setup: withFolder("gallery"),
    run: (c, f) => body(c.galleryFolderUpdate({ folderid: f.created.gallery ?? "", name: "Walk gallery 2" })),
    sent: (f) => ({ folderid: f.created.gallery ?? "", name: "Walk gallery 2" }),
  },
  {
    id: "gallery.folders.update_deviation_order",
    run: (c, f) => body(c.galleryFolderUpdateDeviationOrder({ folderid: f.gallery.folderid, deviationid: f.gallery.deviations[0] ?? "", position: 1 })),
    sent: (f) => ({ folderid: f.gallery.folderid, deviationid: f.gallery.deviations[0] ?? "", position: "1" }),
  },
  {
    id: "gallery.folders.update_order",
    setup: withFolder("gallery"),
    run: (c, f) => body(c.galleryFolderUpdateOrder({ folderid: f.created.gallery ?? "", position: 0 })),
    sent: (f) => ({ folderid: f.created.gallery ?? "", position: "0" }),
  },
  {
    id: "gallery.folders.move",
    setup: withFolder("gallery"),
    run: (c, f) => body(c.galleryFolderMove({ folderid: f.created.gallery ?? "", to_folderid: f.gallery.folderid })),
    sent: (f) => ({ folderid: f.created.gallery ?? "", to_folderid: f.gallery.folderid }),
  },
  {
    id: "gallery.folders.remove",
    setup: withFolder("gallery"),
    path: (f) => ({ folderid: f.created.gallery ?? "" }),
    run: (c, f) => body(c.galleryFolderRemove(f.created.gallery ?? "")),
    sent: () => ({}),
  },
  {
    id: "gallery.folders.remove.post",
    path: (f) => ({ folderid: f.created.gallery2 ?? "" }),
    setup: async (c, f) => {
      f.created.gallery2 = (await c.galleryFolderCreate({ folder: "Walk gallery (POST remove)" })).folderid;
    },
    run: (c, f) => body(c.call("gallery.folders.remove.post", { folderid: f.created.gallery2 ?? "" })),
    sent: () => ({}),
  },

  // notes
  {
    id: "notes.folders.create",
    run: async (c, f) => {
      const r = await c.noteFolderCreate({ title: "Walk notes" });
      f.created.noteFolder = r.folderid ?? r.folder ?? "";
      return { body: r };
    },
    sent: () => ({ title: "Walk notes" }),
  },
  {
    id: "notes.send",
    run: (c, f) => body(c.noteSend({ to: [f.other], subject: "Walk", body: "Hello from the walk" })),
    sent: (f) => ({ "to[]": f.other, subject: "Walk", body: "Hello from the walk" }),
  },
  {
    id: "notes.move",
    setup: withFolder("noteFolder"),
    run: (c, f) => body(c.notesMove({ noteids: [f.note], folderid: f.created.noteFolder ?? "" })),
    sent: (f) => ({ "noteids[]": f.note, folderid: f.created.noteFolder ?? "" }),
  },
  { id: "notes.mark", run: (c, f) => body(c.notesMark({ noteids: [f.note], mark_as: "read" })), sent: (f) => ({ "noteids[]": f.note, mark_as: "read" }) },
  {
    id: "notes.folders.rename",
    setup: withFolder("noteFolder"),
    path: (f) => ({ folderid: f.created.noteFolder ?? "" }),
    run: (c, f) => body(c.noteFolderRename(f.created.noteFolder ?? "", "Walk notes 2")),
    sent: () => ({ title: "Walk notes 2" }),
  },
  { id: "notes.delete", run: (c, f) => body(c.notesDelete({ noteids: [f.note] })), sent: (f) => ({ "noteids[]": f.note }) },
  {
    id: "notes.folders.remove",
    setup: withFolder("noteFolder"),
    path: (f) => ({ folderid: f.created.noteFolder ?? "" }),
    run: (c, f) => body(c.noteFolderRemove(f.created.noteFolder ?? "")),
    sent: () => ({}),
  },

  // comments, statuses, messages
  {
    id: "comments.post.deviation",
    path: (f) => ({ deviationid: f.deviation }),
    run: (c, f) => body(c.commentPostDeviation(f.deviation, { body: "Nice work" })),
    sent: () => ({ body: "Nice work" }),
  },
  {
    id: "comments.post.profile",
    path: (f) => ({ username: f.other }),
    run: (c, f) => body(c.commentPostProfile(f.other, { body: "Hi there" })),
    sent: () => ({ body: "Hi there" }),
  },
  {
    id: "comments.post.status",
    path: (f) => ({ statusid: f.status }),
    run: (c, f) => body(c.commentPostStatus(f.status, { body: "Agreed" })),
    sent: () => ({ body: "Agreed" }),
  },
  { id: "user.statuses.post", run: (c) => body(c.statusPost({ body: "Walking the catalogue" })), sent: () => ({ body: "Walking the catalogue" }) },
  { id: "messages.delete", run: (c, f) => body(c.messagesDelete({ messageid: f.message })), sent: (f) => ({ messageid: f.message }) },

  // journals, literature, deviation edit
  {
    id: "deviation.journal.create",
    run: async (c, f) => {
      const r = await c.journalCreate({ ...JOURNAL, body: "<p>Walk</p>" });
      f.created.journal = r.deviationid;
      return { body: r };
    },
    sent: () => encoded({ body: "<p>Walk</p>", title: JOURNAL.title, tags: JOURNAL.tags, is_mature: false, allow_comments: true, ...licence(JOURNAL) }),
  },
  {
    id: "deviation.journal.update",
    setup: async (c, f) => {
      f.created.journal = (await c.journalCreate({ ...JOURNAL, body: "<p>Walk (setup)</p>" })).deviationid;
    },
    path: (f) => ({ deviationid: f.created.journal ?? "" }),
    run: (c, f) => body(c.journalUpdate(f.created.journal ?? "", JOURNAL, { title: "Walk journal 2", cover_image_deviation_id: null })),
    sent: () => encoded(journalUpdateForm(JOURNAL, { title: "Walk journal 2", cover_image_deviation_id: null })),
  },
  {
    id: "deviation.literature.create",
    run: async (c, f) => {
      const r = await c.literatureCreate({ ...LITERATURE, body: "Once upon a time", description: "a story" });
      f.created.literature = r.deviationid;
      return { body: r };
    },
    sent: () =>
      encoded({
        body: "Once upon a time",
        description: "a story",
        title: LITERATURE.title,
        tags: LITERATURE.tags,
        is_mature: false,
        allow_comments: true,
        ...licence(LITERATURE),
      }),
  },
  {
    id: "deviation.literature.update",
    setup: async (c, f) => {
      f.created.literature = (await c.literatureCreate({ ...LITERATURE, body: "Once upon a time (setup)" })).deviationid;
    },
    path: (f) => ({ deviationid: f.created.literature ?? "" }),
    run: (c, f) => body(c.literatureUpdate(f.created.literature ?? "", LITERATURE, { tags: ["walk", "edited"] })),
    sent: () => encoded({ title: LITERATURE.title, tags: ["walk", "edited"], is_mature: false, allow_comments: true, ...licence(LITERATURE) }),
  },
  {
    id: "deviation.edit",
    path: (f) => ({ deviationid: f.deviation }),
    run: (c, f) => body(c.deviationEdit(f.deviation, { title: "Edited by the walk", allow_comments: true })),
    sent: () => ({ title: "Edited by the walk", allow_comments: T }),
  },

  // stash (multipart file upload is not supported by the transport: metadata of an existing item only)
  {
    id: "stash.submit",
    run: (c, f) => body(c.stashSubmit({ itemid: f.stash.itemid, title: "Retitled by the walk" })),
    sent: (f) => ({ itemid: f.stash.itemid, title: "Retitled by the walk" }),
  },
  {
    id: "stash.publish",
    run: (c, f) => body(c.stashPublish({ itemid: f.stash.itemid, is_mature: false, agree_submission: true, agree_tos: true })),
    sent: (f) => ({ itemid: f.stash.itemid, is_mature: F, agree_submission: T, agree_tos: T }),
  },

  // watching, profile, feed settings
  {
    id: "user.friends.watch",
    path: (f) => ({ username: f.other }),
    run: (c, f) => body(c.watch(f.other)),
    sent: () => ({
      "watch[friend]": F,
      "watch[deviations]": T,
      "watch[journals]": T,
      "watch[forum_threads]": T,
      "watch[critiques]": T,
      "watch[scraps]": T,
      "watch[activity]": T,
      "watch[collections]": T,
    }),
  },
  { id: "user.friends.unwatch", path: (f) => ({ username: f.other }), run: (c, f) => body(c.unwatch(f.other)), sent: () => ({}) },
  {
    id: "user.profile.update",
    run: (c) => body(c.profileUpdate({ tagline: "Walking", show_badges: true })),
    sent: () => ({ tagline: "Walking", show_badges: T }),
  },
  {
    id: "user.profile.avatar.update",
    // Multipart upload is not supported by ApiTransport; call() sends form fields only, which the service
    // refuses. The walk still checks that the request reached the right route with the right method.
    run: (c) => body(c.call("user.profile.avatar.update", { avatar_url: "https://example.invalid/a.png" })),
    sent: () => ({ avatar_url: "https://example.invalid/a.png" }),
    refused: { status: 400, message: /avatar_file/ },
  },
  {
    id: "feed.settings.update",
    run: (c) => body(c.feedSettingsUpdate({ statuses: false, journals: true })),
    sent: () => ({ "include[statuses]": F, "include[journals]": T }),
  },
];

function licence(fields: { license: JournalFields["license"] }): Record<string, string | boolean> {
  const l = fields.license;
  return l.creative_commons
    ? { "license_options[creative_commons]": true, "license_options[commercial]": l.commercial, "license_options[modify]": l.modify }
    : { "license_options[creative_commons]": false };
}

const STEPS: Step[] = [...READS, ...REMOVED, ...WRITES];

// ---- harness -----------------------------------------------------------------------------------------

type Harness = {
  sim: Simulator;
  userToken: string;
  user: DaClient;
  client: DaClient;
  transports: HttpTransport[];
};

async function startHarness(mode: "legacy" | "current", pacers: PacerStores): Promise<Harness> {
  const sim = await startSimulator({ mode, seed: 7 });
  const pacer = createPacer({ store: pacers.store(`${pacers.namespace}:${mode}`) });
  const log = createLogger({ level: "silent" });
  const userToken = sim.issueUserToken({ scopes: ALL_SCOPES });
  const clientToken = sim.issueClientToken();
  const userTransport = createHttpTransport({
    apiBase: sim.url,
    pacer,
    log,
    tokens: staticTokenProvider(userToken.access_token, { kind: "user", clientId: "1001", userId: sim.truth.ownerId, account: "walk" }),
    retry: { serverRetries: 0, networkRetries: 0, throttleRetries: 0 },
  });
  const clientTransport = createHttpTransport({
    apiBase: sim.url,
    pacer,
    log,
    tokens: staticTokenProvider(clientToken.access_token, { kind: "client", clientId: "1001" }),
    retry: { serverRetries: 0, networkRetries: 0, throttleRetries: 0 },
  });
  return {
    sim,
    userToken: userToken.access_token,
    user: new DaClient(userTransport, { tokenKind: "user" }),
    client: new DaClient(clientTransport, { tokenKind: "client" }),
    transports: [userTransport, clientTransport],
  };
}

/** `/api/v1/oauth2/gallery/{id}` and `/gallery/{folderid}` compare equal: placeholder names may differ. */
const shape = (template: string) =>
  template
    .replace(/^\/api\/v1\/oauth2/, "")
    .replace(/\{\w+\}/g, "{}")
    .replace(/\/+$/, "");

function apiEntriesSince(sim: Simulator, seq: number): RequestLogEntry[] {
  return sim.log().filter((e) => e.seq > seq && e.path.startsWith(API_PATH));
}

const lastSeq = (sim: Simulator) => sim.log().at(-1)?.seq ?? 0;

/**
 * The dataset starts with an empty stash, and DaClient cannot upload (the transport sends no multipart), so
 * two files are submitted here with fetch + FormData: set-up, not part of what the walk checks.
 */
async function seedStashItems(h: Harness): Promise<void> {
  for (let i = h.sim.truth.stash.length; i < 2; i++) {
    const form = new FormData();
    form.append("title", `Walk upload ${i}`);
    form.append("file", new Blob([Buffer.from(`walk-file-${i}`)], { type: "image/png" }), `walk-${i}.png`);
    const res = await fetch(`${h.sim.apiUrl}/stash/submit`, { method: "POST", headers: { authorization: `Bearer ${h.userToken}` }, body: form });
    if (!res.ok) throw new Error(`seeding the stash failed: ${res.status} ${await res.text()}`);
  }
}

// ---- the walk ----------------------------------------------------------------------------------------

describe("catalogue walk (legacy mode: every operation answers)", () => {
  let pacers: PacerStores;
  let h: Harness;
  let f: Fixtures;

  beforeAll(async () => {
    pacers = await createPacerStores(TEST_ENGINE);
  });
  // A fresh simulator and fixtures per step: write steps change the dataset (delete notes, remove folders),
  // and a step that acts on a folder of its own makes it in its setup, so steps run in any order.
  beforeEach(async () => {
    h = await startHarness("legacy", pacers);
    await seedStashItems(h);
    f = pickFixtures(h.sim.truth);
  });
  afterEach(async () => {
    await h?.sim.close();
  });

  afterAll(async () => {
    await pacers?.cleanup();
  });

  it("has a walk step for every catalogue operation, exactly once", () => {
    expect(STEPS.map((s) => s.id).sort()).toEqual(CATALOGUE.map((op) => op.id).sort());
  });

  for (const step of STEPS) {
    const op = operation(step.id);
    it(`${op.method} ${op.path} (${op.id})`, async () => {
      const c = step.as === "client" ? h.client : h.user;
      await step.setup?.(c, f);
      const before = lastSeq(h.sim);

      if (step.refused) {
        await expect(step.run(c, f)).rejects.toThrow(step.refused.message);
        const [entry, ...more] = apiEntriesSince(h.sim, before);
        expect(more).toHaveLength(0);
        expect(entry).toMatchObject({ method: op.method, path: API_PATH + expandPath(op.path, step.path?.(f) ?? {}), status: step.refused.status });
        expect(op.method === "GET" ? entry?.query : entry?.form).toEqual(step.sent(f));
        return;
      }
      const outcome = await step.run(c, f);

      // the body passes the operation's schema (a page: the whole raw page; items were checked by the transport)
      const schema = responseSchema(step.id);
      const raw = "page" in outcome ? outcome.page.raw : outcome.body;
      const parsed = schema.safeParse(raw);
      expect(parsed.success, parsed.success ? "" : JSON.stringify(parsed.error.issues.slice(0, 3))).toBe(true);
      if (step.nonEmpty && "page" in outcome) expect(outcome.page.items.length, "first page has items").toBeGreaterThan(0);

      // the simulator saw exactly the request the catalogue and the client promise
      const entries = apiEntriesSince(h.sim, before);
      expect(entries, "one API request").toHaveLength(1);
      const entry = entries[0] as RequestLogEntry;
      expect(entry.method).toBe(op.method);
      expect(entry.path).toBe(API_PATH + expandPath(op.path, step.path?.(f) ?? {}));
      expect(shape(entry.route)).toBe(shape(op.path));
      expect(entry.status).toBe(200);
      expect(entry.auth).toBe("bearer");
      expect(op.method === "GET" ? entry.query : entry.form).toEqual(step.sent(f));
      expect(op.method === "GET" ? entry.form : entry.query).toEqual({});
    });
  }

  it("follows next_offset with the same parameters on the second page", async () => {
    const before = lastSeq(h.sim);
    const pages: Page<unknown>[] = [];
    for await (const page of h.user.galleryAll({ username: f.owner, limit: 5 })) {
      pages.push(page as Page<unknown>);
      if (pages.length === 2) break;
    }
    const entries = apiEntriesSince(h.sim, before);
    expect(entries.map((e) => e.query)).toEqual([
      { username: f.owner, mature_content: T, offset: "0", limit: "5" },
      { username: f.owner, mature_content: T, offset: String(pages[0]?.nextOffset ?? 5), limit: "5" },
    ]);
  });
});

describe("catalogue walk (current mode: removed operations are gone)", () => {
  let pacers: PacerStores;
  let h: Harness;
  let f: Fixtures;

  beforeAll(async () => {
    pacers = await createPacerStores(TEST_ENGINE);
    h = await startHarness("current", pacers);
    await seedStashItems(h);
    f = pickFixtures(h.sim.truth);
  });

  afterAll(async () => {
    await h?.sim.close();
    await pacers?.cleanup();
  });

  it("lists the same removed operations as the catalogue", () => {
    expect(REMOVED.map((s) => s.id).sort()).toEqual(
      CATALOGUE.filter((op) => op.removed !== false)
        .map((op) => op.id)
        .sort(),
    );
  });

  for (const step of REMOVED) {
    const op = operation(step.id);
    it(`${op.method} ${op.path} raises EndpointGoneError`, async () => {
      const before = lastSeq(h.sim);
      const error = await step.run(h.user, f).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isEndpointGone(error), String(error)).toBe(true);
      const entries = apiEntriesSince(h.sim, before);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ method: op.method, path: API_PATH + expandPath(op.path, step.path?.(f) ?? {}), status: 404 });
    });
  }

  it("still serves live operations", async () => {
    await expect(h.user.placebo()).resolves.toMatchObject({ status: "success" });
    await expect(h.client.countries()).resolves.toMatchObject({ results: expect.any(Array) });
  });
});
