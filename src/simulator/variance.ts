// What the real service allows and the base dataset never draws (dataset.variance): gallery deviations in no
// folder or in two, empty folders, users gone before the first sync, locked premium works, multi-image posts
// and mature works of tracked users (what a public token cannot list), and the disputed page key of
// /feed/home/{bucketid}. Each choice cites its public source in docs/service-behaviour.md.
import { hashString, type Rng } from "./rng.ts";
import type { BucketPageKey, Dataset, DeletedLookup, GalleryVariance, SimDeviation, SimGalleryFolder } from "./dataset/model.ts";

/** XORed into the seed for variance's own generator, so the base dataset's draws are untouched. */
export const VARIANCE_SEED_SALT = 0x7a71a9ce;

const EMPTY_FOLDER_NAMES = ["Sketchbook", "Works in Progress", "Commissions", "Old Stuff", "Studies", "Prints"];

function newestFirst(data: Dataset, ids: string[]): string[] {
  const dev = (id: string) => data.deviations.get(id) as SimDeviation;
  return ids.sort((a, b) => dev(b).publishedTime - dev(a).publishedTime || dev(b).numericId - dev(a).numericId);
}

/** Inserts an id into a newest-first folder list at its place. */
function insertByTime(data: Dataset, list: string[], id: string): void {
  const d = data.deviations.get(id) as SimDeviation;
  const at = list.findIndex((other) => {
    const o = data.deviations.get(other);
    return o !== undefined && (o.publishedTime < d.publishedTime || (o.publishedTime === d.publishedTime && o.numericId < d.numericId));
  });
  list.splice(at === -1 ? list.length : at, 0, id);
}

function varyGallery(rng: Rng, data: Dataset, ownerId: string): GalleryVariance {
  const folders = data.galleryFolders.filter((f) => f.ownerId === ownerId);
  // The first folder is "Featured"; a second placement only ever goes to the others.
  const regular = folders.slice(1);
  const seen = new Set<string>();
  const all: string[] = [];
  for (const f of folders) {
    for (const id of f.deviationIds) {
      if (seen.has(id) || !data.deviations.has(id)) continue;
      seen.add(id);
      all.push(id);
    }
  }

  // docs/service-behaviour.md#folders-optional: a deviation need not sit in any folder.
  const share = 0.15 + rng.next() * 0.15;
  const unfiled = rng.sample(all, Math.round(all.length * share));
  const gone = new Set(unfiled);
  for (const f of folders) f.deviationIds = f.deviationIds.filter((id) => !gone.has(id));
  const list = data.unfiled.get(ownerId) ?? [];
  data.unfiled.set(ownerId, newestFirst(data, [...list, ...unfiled]));

  // docs/service-behaviour.md#folders-optional: folders may overlap.
  const secondFolder: string[] = [];
  for (const id of all) {
    if (gone.has(id) || !rng.chance(0.1)) continue;
    const free = regular.filter((f) => !f.deviationIds.includes(id));
    if (free.length === 0) continue;
    insertByTime(data, rng.pick(free).deviationIds, id);
    secondFolder.push(id);
  }

  // docs/service-behaviour.md#folders-optional: folders may be empty, and nested.
  const emptyFolders: SimGalleryFolder[] = [];
  const count = rng.int(1, 2);
  for (let i = 0; i < count; i++) {
    const parents = [...regular, ...emptyFolders];
    const parent = parents.length > 0 && rng.chance(0.5) ? rng.pick(parents).folderid : null;
    emptyFolders.push({ folderid: rng.uuid(), ownerId, parent, name: rng.pick(EMPTY_FOLDER_NAMES), description: "", deviationIds: [] });
  }
  data.galleryFolders.push(...emptyFolders);
  return { unfiled: newestFirst(data, unfiled.slice()), secondFolder, emptyFolders: emptyFolders.map((f) => f.folderid) };
}

/** One or two non-tracked authors of the owner's favourites are gone: their favourites vanish from listings. */
function varyUsers(rng: Rng, data: Dataset, tracked: ReadonlySet<string>): { deactivated: string[]; suspended: string[] } {
  const authors: string[] = [];
  for (const f of data.collectionFolders) {
    if (f.ownerId !== data.ownerId) continue;
    for (const id of f.deviationIds) {
      const a = data.deviations.get(id)?.authorId;
      if (a && a !== data.ownerId && !tracked.has(a) && !authors.includes(a)) authors.push(a);
    }
  }
  // docs/service-behaviour.md#user-error-codes: accounts are deactivated (error_code 1) or suspended (0).
  const [first, second] = rng.sample(authors, 2);
  const out = { deactivated: [] as string[], suspended: [] as string[] };
  const firstUser = first ? data.users.get(first) : undefined;
  if (firstUser) {
    firstUser.isDeactivated = true;
    out.deactivated.push(firstUser.userid);
  }
  const secondUser = second && rng.chance(0.5) ? data.users.get(second) : undefined;
  if (secondUser) {
    secondUser.isSuspended = true;
    out.suspended.push(secondUser.userid);
  }
  return out;
}

/** 1–3 % of the tracked users' live deviations sit in a premium folder: listed, locked, without content. */
function varyLocked(rng: Rng, data: Dataset, tracked: readonly string[]): string[] {
  const owners = new Set(tracked);
  const candidates = [...data.deviations.values()].filter((d) => owners.has(d.authorId) && !d.isDeleted && d.tier === null);
  const share = 0.01 + rng.next() * 0.02;
  const picked = rng.sample(candidates, candidates.length === 0 ? 0 : Math.max(1, Math.round(candidates.length * share)));
  for (const d of picked) {
    // docs/service-behaviour.md#tier-locked: "watchers" folders open by watching; the paid ones by paying.
    const folder =
      data.galleryFolders.find((f) => f.ownerId === d.authorId && f.deviationIds.includes(d.deviationid)) ??
      data.galleryFolders.find((f) => f.ownerId === d.authorId);
    const paid = rng.chance(0.5);
    d.premiumFolder = {
      type: paid ? "paid" : "watchers",
      galleryId: folder?.folderid ?? d.deviationid,
      pointsPrice: paid ? rng.int(1, 20) * 10 : null,
      dollarPrice: paid ? rng.int(1, 10) : null,
    };
    d.isDownloadable = false;
  }
  return picked.map((d) => d.deviationid);
}

/** The live works of the tracked users, by `pick`. */
function trackedWorks(data: Dataset, tracked: readonly string[], pick: (d: SimDeviation) => boolean): SimDeviation[] {
  const owners = new Set(tracked);
  return [...data.deviations.values()].filter((d) => owners.has(d.authorId) && !d.isDeleted && pick(d));
}

/** 2–5 % more of the tracked users' images are multi-image posts, of which the API gives the first image. */
function varyMultiImage(rng: Rng, data: Dataset, tracked: readonly string[]): string[] {
  // docs/service-behaviour.md#multi-image-marker: marked `is_multi_media`; the other images are not in the API.
  const candidates = trackedWorks(data, tracked, (d) => d.kind === "image" && !d.isMultiMedia);
  const picked = rng.sample(candidates, Math.round(candidates.length * (0.02 + rng.next() * 0.03)));
  for (const d of picked) d.isMultiMedia = true;
  return picked.map((d) => d.deviationid);
}

/** Each tracked user gets 3–10 % more mature works, at least one: a public token's listings leave them out. */
function varyMature(rng: Rng, data: Dataset, tracked: readonly string[]): string[] {
  const out: string[] = [];
  for (const userid of tracked) {
    // docs/service-behaviour.md#profile-count-includes-hidden: the profile counts them, a public token lists none.
    const candidates = trackedWorks(data, [userid], (d) => !d.isMature && d.premiumFolder === undefined);
    const count = candidates.length === 0 ? 0 : Math.max(1, Math.round(candidates.length * (0.03 + rng.next() * 0.07)));
    for (const d of rng.sample(candidates, count)) {
      d.isMature = true;
      d.matureLevel = rng.pick(["strict", "moderate"] as const);
      d.matureClassification = rng.sample(["nudity", "sexual", "gore"], 1);
      out.push(d.deviationid);
    }
  }
  return out;
}

/** Draws the variance into a generated dataset (after everything else; `rng` is variance's own). */
export function applyVariance(data: Dataset, rng: Rng, trackedIds: readonly string[]): void {
  const galleries = new Map<string, GalleryVariance>();
  for (const ownerId of [data.ownerId, ...trackedIds]) galleries.set(ownerId, varyGallery(rng, data, ownerId));

  // docs/service-behaviour.md#folders-optional: a collection folder may be empty (faving fills the default one).
  const emptyCollection = { folderid: rng.uuid(), ownerId: data.ownerId, name: "Later", description: "", deviationIds: [] };
  data.collectionFolders.push(emptyCollection);

  // docs/service-behaviour.md#feed-bucket-page-key: public clients disagree on the page's array key.
  const bucketKey: BucketPageKey = rng.chance(0.5) ? "results" : "items";

  const users = varyUsers(rng, data, new Set(trackedIds));
  const lockedDeviations = varyLocked(rng, data, trackedIds);
  // Drawn last, so the draws above stay what they were before these two were added.
  const multiImageDeviations = varyMultiImage(rng, data, trackedIds);
  const matureDeviations = varyMature(rng, data, trackedIds);
  const deletedLookupSalt = rng.int(1, 0x7fffffff);
  data.variance = {
    bucketKey,
    galleries,
    emptyCollectionFolders: [emptyCollection.folderid],
    deactivatedUsers: users.deactivated,
    suspendedUsers: users.suspended,
    lockedDeviations,
    multiImageDeviations,
    matureDeviations,
    deletedLookupSalt,
  };
}

/**
 * What the public record allows /deviation/{deviationid} to answer for a deleted deviation
 * (docs/service-behaviour.md#deleted-deviation-lookup): error_code 0 (the catalogue's "not found"), 1, another
 * code (2 stands in for one no client documents), none, or the `is_deleted` stub.
 */
export const DELETED_LOOKUPS: readonly DeletedLookup[] = [
  { kind: "refusal", errorCode: 0 },
  { kind: "refusal", errorCode: 1 },
  { kind: "refusal", errorCode: 2 },
  { kind: "refusal", errorCode: null },
  { kind: "stub" },
];

/** Without variance: error_code 0, what DeviantartApi's table names "DeviationNotFound". */
export const DEFAULT_DELETED_LOOKUP: DeletedLookup = { kind: "refusal", errorCode: 0 };

/**
 * The answer /deviation/{deviationid} gives once `d` is deleted: the one pinned on it (activity
 * delete_deviation's `lookup`), else with variance one of DELETED_LOOKUPS drawn per deviation from the seed
 * (the same deviation always answers the same way), else DEFAULT_DELETED_LOOKUP.
 */
export function deletedLookupOf(data: Dataset, d: SimDeviation): DeletedLookup {
  if (d.deletedLookup) return d.deletedLookup;
  const salt = data.variance?.deletedLookupSalt;
  if (salt === undefined) return DEFAULT_DELETED_LOOKUP;
  return DELETED_LOOKUPS[hashString(d.deviationid, salt) % DELETED_LOOKUPS.length] as DeletedLookup;
}
