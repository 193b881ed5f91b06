// Gallery and collection folders of the simulated service: how the generator draws each
// gallery and the owner's favourites, and the views tests and routes compute from them (/gallery/all's
// order, the deviations whose original can be downloaded).
import type { Rng } from "../rng.ts";
import { makeDeviation } from "./deviations.ts";
import type { Dataset, GenContext, SimDeviation, SimGalleryFolder } from "./model.ts";
import { ADJECTIVES, cap, NOUNS } from "./text.ts";
import type { People } from "./users.ts";

/** One user's gallery folders (folder 0 is "Featured", some nested) and `count` deviations spread over them. */
export function makeGallery(
  rng: Rng,
  dataset: Dataset,
  startMs: number,
  ownerId: string,
  count: number,
  folderCount: number,
  withDeleted: boolean,
): SimDeviation[] {
  const folders: SimGalleryFolder[] = [];
  const n = Math.max(1, folderCount);
  for (let i = 0; i < n; i++) {
    const parent = i >= 3 && rng.chance(0.35) ? rng.pick(folders.slice(1)).folderid : null;
    folders.push({
      folderid: rng.uuid(),
      ownerId,
      parent: i === 0 ? null : parent,
      name: i === 0 ? "Featured" : `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}${i > 8 ? ` ${i}` : ""}`,
      description: "",
      deviationIds: [],
    });
  }
  dataset.galleryFolders.push(...folders);
  // Newest first, like the service's default gallery order.
  const nowS = Math.floor(startMs / 1000);
  const devs: SimDeviation[] = [];
  for (let i = 0; i < count; i++) {
    const published = nowS - 3600 - Math.floor(((i + rng.next()) * 3 * 365 * 86400) / Math.max(1, count));
    devs.push(makeDeviation(rng, dataset, startMs, { authorId: ownerId, publishedTime: published }));
  }
  for (const d of devs) {
    if (n === 1) {
      folders[0]!.deviationIds.push(d.deviationid);
      continue;
    }
    rng.pick(folders.slice(1)).deviationIds.push(d.deviationid);
    if (rng.chance(0.1)) folders[0]!.deviationIds.push(d.deviationid);
  }
  // Deleted since: they stay in the folder lists (pages come back short) but never show.
  if (withDeleted) for (const d of devs) if (rng.chance(0.01)) d.isDeleted = true;
  return devs;
}

/**
 * The owner's favourites (other users' deviations, a few deleted since) spread over their collection
 * folders, a small collection of each tracked user, and who faved the owner's own works.
 */
export function makeFavourites(ctx: GenContext, { owner, tracked, people }: People, ownerDevs: readonly SimDeviation[]): void {
  const { rng, startMs, dataset } = ctx;
  const { size } = dataset;
  // Favourites: other users' deviations, plus a few of the tracked users'.
  const faveDevs: SimDeviation[] = [];
  for (let i = 0; i < size.favourites; i++) {
    const author = rng.pick(people);
    const d = makeDeviation(rng, dataset, startMs, { authorId: author.userid });
    faveDevs.push(d);
  }
  // A few faved deviations were deleted later: collections show them as is_deleted stubs.
  for (const d of faveDevs) if (rng.chance(0.03)) d.isDeleted = true;
  const nCollections = Math.max(1, size.collectionFolders);
  for (let i = 0; i < nCollections; i++) {
    dataset.collectionFolders.push({
      folderid: rng.uuid(),
      ownerId: owner.userid,
      name: i === 0 ? "Featured" : `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}s`,
      description: i === 0 ? "" : rng.chance(0.5) ? "Things I like" : "",
      deviationIds: [],
    });
  }
  const faveTime = Math.floor(startMs / 1000) - 86400;
  for (const d of faveDevs) {
    const primary = dataset.collectionFolders[0]!;
    primary.deviationIds.push(d.deviationid);
    if (nCollections > 1 && rng.chance(0.6)) rng.pick(dataset.collectionFolders.slice(1)).deviationIds.push(d.deviationid);
    d.favedBy.push({ userid: owner.userid, time: faveTime - rng.int(0, 400 * 86400) });
  }
  // Tracked users' folders get a collection too (small).
  for (const u of tracked) {
    const theirs = Array.from(dataset.deviations.values()).filter((d) => d.authorId !== u.userid && !d.isDeleted);
    dataset.collectionFolders.push({
      folderid: rng.uuid(),
      ownerId: u.userid,
      name: "Featured",
      description: "",
      deviationIds: rng.sample(theirs, Math.min(12, theirs.length)).map((d) => d.deviationid),
    });
  }
  // Who faved the owner's works.
  for (const d of ownerDevs) {
    const n = Math.min(d.stats.favourites, rng.int(0, 5));
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const u = rng.pick(people);
      if (seen.has(u.userid)) continue;
      seen.add(u.userid);
      d.favedBy.push({ userid: u.userid, time: d.publishedTime + rng.int(60, 86400 * 30) });
    }
  }
}

type DownloadCandidate = Pick<SimDeviation, "deviationid" | "isDeleted" | "isDownloadable" | "publishedTime" | "numericId"> & { readonly image: unknown };

type GalleryView<D> = {
  readonly galleryFolders: ReadonlyArray<{ readonly ownerId: string; readonly deviationIds: readonly string[] }>;
  /** Optional so callers built before it existed keep working. */
  readonly unfiled?: ReadonlyMap<string, readonly string[]>;
  readonly deviations: ReadonlyMap<string, D>;
};

/**
 * Every gallery deviation of one user, newest first, deleted ones included: the folders' contents plus the
 * unfiled ones, as /gallery/all lists them (docs/service-behaviour.md#folders-optional). Works on the live
 * dataset and on `sim.truth`.
 */
export function galleryAllIds<D extends Pick<SimDeviation, "publishedTime" | "numericId">>(dataset: GalleryView<D>, ownerId: string): string[] {
  const seen = new Set<string>();
  const out: Array<{ id: string; d: D }> = [];
  const add = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    const d = dataset.deviations.get(id);
    if (d) out.push({ id, d });
  };
  for (const f of dataset.galleryFolders) if (f.ownerId === ownerId) f.deviationIds.forEach(add);
  dataset.unfiled?.get(ownerId)?.forEach(add);
  out.sort((a, b) => b.d.publishedTime - a.d.publishedTime || b.d.numericId - a.d.numericId);
  return out.map((x) => x.id);
}

/**
 * The owner's deviations whose original /deviation/download serves, newest first (the gallery's order).
 * Works on the live dataset and on `sim.truth`.
 */
export function downloadableOwnerDeviations<D extends DownloadCandidate>(dataset: GalleryView<D> & { readonly ownerId: string }): D[] {
  const out: D[] = [];
  for (const id of galleryAllIds(dataset, dataset.ownerId)) {
    const d = dataset.deviations.get(id);
    if (d && !d.isDeleted && d.isDownloadable && d.image) out.push(d);
  }
  return out;
}
