// The fewest listing and metadata calls that can archive a gallery or the collections completely, read from
// the simulator's ground truth rather than from the listings dvault chose to make: the folder list, one pass
// over each non-empty folder and over the "all" view (pages at the catalogue's maximum), and the metadata of
// every live deviation in them, 50 at a time (docs/service-behaviour.md#metadata-batch). Shared by
// bench/api-economy.ts and test/medium/downloads-economy.test.ts.
import { operation } from "../../src/api/catalogue.ts";
import { galleryAllIds, isGone, type GroundTruth } from "../../src/simulator/dataset.ts";

export const METADATA_BATCH = 50;

export type PagingMinimum = { listing: number; metadata: number };

export function pagingMinimum(truth: GroundTruth, kind: "gallery" | "collections"): PagingMinimum {
  const ownerId = truth.ownerId;
  const pages = (n: number, max: number) => Math.max(1, Math.ceil(n / max));
  const folderOp = operation(kind === "gallery" ? "gallery.folder" : "collections.folder");
  const listOp = operation(kind === "gallery" ? "gallery.folders" : "collections.folders");
  const folders = (kind === "gallery" ? truth.galleryFolders : truth.collectionFolders).filter((f) => f.ownerId === ownerId);
  const all = kind === "gallery" ? galleryAllIds(truth, ownerId) : [...new Set(folders.flatMap((f) => f.deviationIds))];
  const visible = (id: string) => {
    const d = truth.deviations.get(id);
    return d !== undefined && !d.isDeleted && !isGone(truth.users.get(d.authorId));
  };
  let listing = pages(folders.length, listOp.maxLimit ?? 50) + pages(all.length, folderOp.maxLimit ?? 24);
  for (const f of folders) if (f.deviationIds.length > 0) listing += pages(f.deviationIds.length, folderOp.maxLimit ?? 24);
  return { listing, metadata: Math.ceil(all.filter(visible).length / METADATA_BATCH) };
}
