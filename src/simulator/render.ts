// Renders dataset records as the service's JSON shapes (docs/service-behaviour.md#object-shapes): users,
// deviations, metadata, comments, folders, notes, messages, feed items.
import { cdnPath, originalFilename, signCdnPath } from "./cdn.ts";
import { renditionSize } from "./files.ts";
import type { SimComment, SimDeviation, SimMessage, SimNote, SimNoteFolder, SimStatus, SimUser } from "./dataset.ts";
import type { ApiContext, SimWorld } from "./world.ts";
import { commentKey } from "./world.ts";

export type Json = Record<string, unknown>;

export type UserExpand = { details?: boolean; geo?: boolean; profile?: boolean; stats?: boolean; watch?: boolean };

export function expandFlags(ctx: ApiContext): UserExpand {
  const raw = (ctx.params.get("expand") ?? "").split(",").map((s) => s.trim());
  return {
    details: raw.includes("user.details"),
    geo: raw.includes("user.geo"),
    profile: raw.includes("user.profile"),
    stats: raw.includes("user.stats"),
    watch: raw.includes("user.watch"),
  };
}

export function userJson(_world: SimWorld, u: SimUser, expand: UserExpand = {}, viewer?: SimUser): Json {
  const out: Json = { userid: u.userid, username: u.username, usericon: u.usericon, type: u.type };
  if (expand.watch && viewer) out.is_watching = viewer.friends.some((f) => f.userid === u.userid);
  if (expand.details) out.details = { sex: u.sex, age: u.age, joindate: u.joindate };
  if (expand.geo) out.geo = { country: u.country, countryid: u.countryid, timezone: "UTC" };
  if (expand.profile) {
    out.profile = {
      user_is_artist: u.artistLevel !== null,
      artist_level: u.artistLevel,
      artist_specialty: u.artistSpecialty,
      real_name: u.realName,
      tagline: u.tagline,
      website: u.website,
      cover_photo: "",
    };
  }
  if (expand.stats) out.stats = { watchers: u.watcherIds.length, friends: u.friends.length };
  return out;
}

/**
 * Blur radius of a deviation's renditions for this viewer, or 0: strict mature content
 * (docs/service-behaviour.md#mature-blur), and tier or premium-folder content for viewers without access.
 */
export function renditionBlur(d: SimDeviation, viewerId: string | undefined): number {
  if (d.isMature && d.matureLevel === "strict") return 30;
  if (d.tier && viewerId !== d.authorId) return 50;
  if (d.premiumFolder && viewerId !== d.authorId) return 50;
  return 0;
}

/** A premium folder's work for a viewer without access (the author has it): docs/service-behaviour.md#tier-locked. */
function lockedFor(d: SimDeviation, viewerId: string | undefined): boolean {
  return d.premiumFolder !== undefined && viewerId !== d.authorId;
}

function image(world: SimWorld, d: SimDeviation, variant: "fullview" | "preview" | "thumb", w: number, h: number, filename: string, blur: number): Json {
  // wixmp-like operations in the path; blurred renditions carry ",blur_NN" (and are different bytes).
  const ops = `w_${w},h_${h},q_${variant === "thumb" ? 70 : 80}${blur > 0 ? `,blur_${blur}` : ""}`;
  return { src: signCdnPath(world, cdnPath(d, variant, filename, ops)), height: h, width: w, transparency: d.image?.transparency ?? false };
}

function scaled(d: SimDeviation, maxW: number, maxH: number): [number, number] {
  const img = d.image;
  if (!img) return [maxW, maxH];
  const f = Math.min(1, maxW / img.width, maxH / img.height);
  return [Math.max(1, Math.round(img.width * f)), Math.max(1, Math.round(img.height * f))];
}

export function deviationUrl(world: SimWorld, d: SimDeviation): string {
  const author = world.data.users.get(d.authorId);
  const section = d.kind === "journal" ? "journal" : "art";
  return `https://www.deviantart.com/${(author?.username ?? "unknown").toLowerCase()}/${section}/${d.slug}-${d.numericId}`;
}

export function commentCount(world: SimWorld, kind: string, id: string): number {
  return world.index.commentsByTarget.get(commentKey(kind, id))?.length ?? 0;
}

/**
 * The deviation object; deleted ones come back as `{deviationid, is_deleted: true}` with nothing else
 * (docs/service-behaviour.md#deleted-stubs).
 */
export function deviationJson(ctx: ApiContext, d: SimDeviation): Json {
  const world = ctx.world;
  if (d.isDeleted) return { deviationid: d.deviationid, printid: null, is_deleted: true };
  const author = world.data.users.get(d.authorId);
  const viewer = ctx.caller.kind === "user" ? ctx.caller.user : undefined;
  const expand = expandFlags(ctx);
  const base = `${d.slug.toLowerCase()}-${d.numericId.toString(36)}`;
  const out: Json = {
    deviationid: d.deviationid,
    printid: d.printid,
    url: deviationUrl(world, d),
    title: d.title,
    is_favourited: viewer ? d.favedBy.some((f) => f.userid === viewer.userid) : false,
    is_deleted: false,
    is_published: true,
    is_blocked: false,
    author: author ? userJson(world, author, { watch: expand.watch }, viewer) : null,
    stats: { comments: commentCount(world, "deviation", d.deviationid), favourites: d.stats.favourites },
    published_time: String(d.publishedTime),
    allows_comments: d.allowsComments,
  };
  const blur = renditionBlur(d, viewer?.userid);
  if (d.image) {
    const [pw, ph] = scaled(d, 1024, 1024);
    out.preview = image(world, d, "preview", pw, ph, `${base}-pre.jpg`, blur);
    if (d.kind === "image" && !lockedFor(d, viewer?.userid)) {
      const [fw, fh] = scaled(d, 1920, 1920);
      out.content = { ...image(world, d, "fullview", fw, fh, `${base}-fullview.${d.image.ext}`, blur), filesize: renditionSize(d, "fullview") };
    }
    out.thumbs = [
      image(world, d, "thumb", ...scaled(d, 150, 150), `${base}-150.jpg`, blur),
      image(world, d, "thumb", ...scaled(d, 10000, 200), `${base}-200h.jpg`, blur),
      image(world, d, "thumb", ...scaled(d, 300, 10000), `${base}-300w.jpg`, blur),
    ];
  } else {
    out.thumbs = [];
  }
  if (d.videos) {
    out.videos = d.videos.map((v) => ({
      src: signCdnPath(world, cdnPath(d, "video", `${base}-${v.quality}.mp4`)),
      quality: v.quality,
      filesize: v.filesize,
      duration: v.duration,
    }));
  }
  if (d.isMultiMedia) out.is_multi_media = true;
  // Gone from deviation objects since August 2024 (docs/service-behaviour.md#deviation-category-removed).
  if (world.mode === "legacy") Object.assign(out, LEGACY_CATEGORY[d.kind]);
  if (d.text) out.excerpt = d.text.excerpt;
  out.is_mature = d.isMature;
  out.is_downloadable = d.isDownloadable;
  if (d.isDownloadable && d.image) out.download_filesize = d.image.filesize;
  if (d.isPinned) out.is_pinned = true;
  if ((d.tier || d.premiumFolder) && viewer?.userid !== d.authorId) out.tier_access = "locked";
  // The folder data disappears once the viewer has access (docs/service-behaviour.md#tier-locked).
  const premium = lockedFor(d, viewer?.userid) ? d.premiumFolder : undefined;
  if (premium) {
    out.premium_folder_data = {
      type: premium.type,
      has_access: false,
      gallery_id: premium.galleryId,
      ...(premium.pointsPrice !== null ? { points_price: premium.pointsPrice } : {}),
      ...(premium.dollarPrice !== null ? { dollar_price: premium.dollarPrice } : {}),
    };
  }
  if (d.tier) {
    out.tier = {
      state: d.tier.state,
      is_user_subscribed: false,
      can_user_subscribe: true,
      subproductid: 1000 + (d.numericId % 100),
      dollar_price: "3.00",
      settings: { access_settings: "all" },
      stats: d.tier.statsAsArray ? [] : { subscribers: d.numericId % 50, deviations: d.numericId % 9 },
      benefits: [],
    };
  }
  return withQuirks(out, d.quirks, "deviation");
}

/** What the service's deviation objects carried before categories went (the 2020 client types name both fields). */
const LEGACY_CATEGORY: Record<SimDeviation["kind"], { category: string; category_path: string }> = {
  image: { category: "Paintings", category_path: "digitalart/paintings" },
  journal: { category: "Personal", category_path: "journals/personal" },
  literature: { category: "Prose", category_path: "literature/prose" },
  video: { category: "Animation", category_path: "film/animation" },
};

const OPTIONAL = {
  deviation: ["printid", "is_favourited", "allows_comments", "stats", "published_time", "download_filesize"],
  metadata: ["license", "tags", "submission", "stats"],
} as const;

/** A deviation's or its metadata's JSON as dataset.hostileData asks (see DeviationQuirks). */
function withQuirks(out: Json, quirks: SimDeviation["quirks"], kind: keyof typeof OPTIONAL): Json {
  if (!quirks) return out;
  const stats = out.stats as Record<string, unknown> | undefined;
  if (quirks.statsAsStrings && stats) out.stats = Object.fromEntries(Object.entries(stats).map(([k, v]) => [k, typeof v === "number" ? String(v) : v]));
  if (quirks.emptyObjectsAsArrays) {
    if (kind === "deviation") out.stats = [];
    if (kind === "metadata" && "camera" in out) out.camera = [];
    const submission = out.submission as Record<string, unknown> | undefined;
    if (submission) out.submission = { ...submission, submitted_with: [] };
  }
  if (quirks.extraFields) {
    out.x_dvault_unknown = { nested: { deep: [1, "two", null] }, flag: true };
    out.premium_gift_ids = [];
    out.suggested_reasons_v2 = null;
  }
  if (quirks.omitOptional) for (const key of OPTIONAL[kind]) delete out[key];
  return out;
}

export function deviationFolders(world: SimWorld, d: SimDeviation, which: "gallery" | "collection"): Json[] {
  const folders = which === "gallery" ? world.data.galleryFolders : world.data.collectionFolders;
  return folders.filter((f) => f.deviationIds.includes(d.deviationid)).map((f) => ({ folderid: f.folderid, name: f.name }));
}

export function metadataJson(
  ctx: ApiContext,
  d: SimDeviation,
  ext: { submission: boolean; camera: boolean; stats: boolean; collection: boolean; gallery: boolean },
): Json {
  const world = ctx.world;
  const author = world.data.users.get(d.authorId);
  const viewer = ctx.caller.kind === "user" ? ctx.caller.user : undefined;
  const out: Json = {
    deviationid: d.deviationid,
    printid: d.printid,
    author: author ? userJson(world, author) : null,
    is_watching: viewer && author ? viewer.friends.some((f) => f.userid === author.userid) : false,
    title: d.title,
    description: d.description,
    license: d.license,
    allows_comments: d.allowsComments,
    tags: d.tags.map((t) => ({ tag_name: t, sponsored: false, sponsor: "" })),
    is_favourited: viewer ? d.favedBy.some((f) => f.userid === viewer.userid) : false,
    is_mature: d.isMature,
  };
  if (d.isMature) {
    out.mature_level = d.matureLevel;
    out.mature_classification = d.matureClassification;
  }
  if (ext.submission) {
    out.submission = {
      creation_time: d.creationTime,
      category: d.kind === "image" ? "digitalart/paintings/other" : d.kind === "video" ? "film/other" : "literature/prose/other",
      ...(d.image ? { file_size: `${(d.image.filesize / 1024).toFixed(0)} KB`, resolution: `${d.image.width}x${d.image.height}` } : {}),
      submitted_with: { app: "DeviantArt", url: "https://www.deviantart.com" },
    };
  }
  if (ext.stats) {
    out.stats = {
      views: d.stats.views,
      views_today: d.stats.viewsToday,
      favourites: d.stats.favourites,
      comments: commentCount(world, "deviation", d.deviationid),
      downloads: d.stats.downloads,
      downloads_today: d.stats.downloadsToday,
    };
  }
  if (ext.camera) out.camera = d.camera ?? {};
  if (ext.collection && viewer) out.collections = deviationFolders(world, d, "collection");
  if (ext.gallery && viewer) out.galleries = deviationFolders(world, d, "gallery");
  out.can_post_comment = d.allowsComments && ctx.caller.kind === "user";
  return withQuirks(out, d.quirks, "metadata");
}

export function commentJson(world: SimWorld, c: SimComment): Json {
  const user = world.data.users.get(c.userId);
  const siblings = world.index.commentsByTarget.get(commentKey(c.target.kind, c.target.id)) ?? [];
  return {
    commentid: c.commentid,
    parentid: c.parentid,
    posted: c.posted,
    replies: siblings.filter((s) => s.parentid === c.commentid).length,
    hidden: c.hidden,
    body: c.hidden ? "" : c.body,
    is_liked: false,
    is_featured: c.isFeatured,
    likes: c.likes,
    user: user ? userJson(world, user) : null,
  };
}

export function statusJson(ctx: ApiContext, s: SimStatus): Json {
  const world = ctx.world;
  if (s.isDeleted) return { statusid: s.statusid, is_deleted: true };
  const author = world.data.users.get(s.authorId);
  const shared = s.sharedDeviationId ? world.data.deviations.get(s.sharedDeviationId) : undefined;
  return {
    statusid: s.statusid,
    body: s.body,
    ts: s.ts,
    url: `https://www.deviantart.com/${(author?.username ?? "").toLowerCase()}/status-update/${s.statusid}`,
    comments_count: commentCount(world, "status", s.statusid),
    is_share: shared !== undefined,
    is_deleted: false,
    author: author ? userJson(world, author) : null,
    items: shared ? [{ type: "deviation", deviation: deviationJson(ctx, shared) }] : [],
  };
}

/** Status updates in /user/profile/posts come back deviation-shaped. */
export function statusAsPostJson(ctx: ApiContext, s: SimStatus): Json {
  const author = ctx.world.data.users.get(s.authorId);
  return {
    deviationid: s.statusid,
    url: `https://www.deviantart.com/${(author?.username ?? "").toLowerCase()}/status-update/${s.statusid}`,
    title: "",
    is_deleted: s.isDeleted,
    author: author ? userJson(ctx.world, author) : null,
    stats: { comments: commentCount(ctx.world, "status", s.statusid), favourites: 0 },
    published_time: String(Math.floor(Date.parse(s.ts.replace("+0000", "Z")) / 1000)),
    excerpt: s.body,
    is_mature: false,
    is_downloadable: false,
    thumbs: [],
  };
}

export function noteFolderJson(world: SimWorld, f: SimNoteFolder): Json {
  const count = world.data.notes.filter((n) => n.folderid === f.folderid).length;
  return { folder: f.folderid, folderid: f.folderid, parentid: f.parentid, title: f.title, count: String(count) };
}

export function noteJson(world: SimWorld, n: SimNote): Json {
  const from = world.data.users.get(n.fromId);
  return {
    noteid: n.noteid,
    ts: n.ts,
    unread: n.unread,
    starred: n.starred,
    sent: n.sent,
    subject: n.subject,
    preview: n.body.replace(/<[^>]+>/g, "").slice(0, 40),
    body: n.body,
    user: from ? userJson(world, from) : null,
    recipients: n.recipientIds
      .map((id) => world.data.users.get(id))
      .filter((u): u is SimUser => u !== undefined)
      .map((u) => userJson(world, u)),
  };
}

export function messageJson(ctx: ApiContext, m: SimMessage, stackCount?: number): Json {
  const world = ctx.world;
  const originator = world.data.users.get(m.originatorId);
  const dev = m.subjectDeviationId ? world.data.deviations.get(m.subjectDeviationId) : undefined;
  const out: Json = {
    messageid: m.messageid,
    type: m.type,
    orphaned: dev?.isDeleted ?? false,
    ts: m.ts,
    is_new: m.isNew,
    originator: originator ? userJson(world, originator) : null,
    html: m.html,
  };
  if (stackCount !== undefined && stackCount > 1) {
    out.stackid = m.stackid;
    out.stack_count = stackCount;
  }
  if (dev) out.subject = { deviation: deviationJson(ctx, dev) };
  else if (m.type === "watch") {
    const owner = world.data.users.get(world.data.ownerId);
    if (owner) out.subject = { profile: userJson(world, owner) };
  }
  if (m.subjectCommentId) {
    out.comment = {
      commentid: m.subjectCommentId,
      parentid: null,
      posted: m.ts,
      replies: 0,
      hidden: null,
      body: m.commentBody ?? "Nice work!",
      user: originator ? userJson(world, originator) : null,
    };
  }
  return out;
}

export { originalFilename };
