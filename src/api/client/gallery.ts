// The client's methods for galleries and collections: folders, their contents and the writes on them; each goes through its catalogue entry.
import type { PageIterator } from "../transport.ts";
import {
  type CollectionFolder,
  CollectionFolderSchema,
  type Deviation,
  DeviationSchema,
  type FaveResult,
  FaveResultSchema,
  type FolderCreateResult,
  FolderCreateResultSchema,
  type GalleryFolder,
  GalleryFolderSchema,
  type Success,
  SuccessSchema,
} from "../types.ts";
import type { ClientBase } from "./core.ts";
import { list, ownerParams, splitList, withList } from "./forms.ts";
import type { FolderListParams, FolderUpdate, GalleryFolderParams, OffsetListOptions, OwnerParams } from "./params.ts";

/** The gallery and collection methods of the client, mixed into DaClient (src/api/client.ts). */
export function GalleryMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- gallery and collections --------------------------------------------------------------------
    galleryFolders(params: FolderListParams & OffsetListOptions = {}): PageIterator<GalleryFolder> {
      const { list, rest } = splitList(params);
      return this.offset("gallery.folders", ownerParams(rest), GalleryFolderSchema, list);
    }

    galleryFolder(folderid: string, params: GalleryFolderParams & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("gallery.folder", { folderid, ...ownerParams(rest) }, DeviationSchema, list);
    }

    galleryAll(params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("gallery.all", ownerParams(rest), DeviationSchema, list);
    }

    collectionFolders(params: FolderListParams & OffsetListOptions = {}): PageIterator<CollectionFolder> {
      const { list, rest } = splitList(params);
      return this.offset("collections.folders", ownerParams(rest), CollectionFolderSchema, list);
    }

    collectionFolder(folderid: string, params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("collections.folder", { folderid, ...ownerParams(rest) }, DeviationSchema, list);
    }

    collectionsAll(params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("collections.all", ownerParams(rest), DeviationSchema, list);
    }

    // ---- writes: collections and galleries (scopes: browse + collection / gallery) ------------------
    /** Scopes: browse, collection. `folderids` empty = the default Favourites folder. */
    fave(deviationid: string, params: { folderids?: readonly string[] } = {}): Promise<FaveResult> {
      return this.get("collections.fave", { deviationid, folderid: list(params.folderids) }, FaveResultSchema);
    }

    /** Scopes: browse, collection. */
    unfave(deviationid: string, params: { folderids?: readonly string[] } = {}): Promise<FaveResult> {
      return this.get("collections.unfave", { deviationid, folderid: list(params.folderids) }, FaveResultSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderCreate(params: { folder: string; description?: string }): Promise<FolderCreateResult> {
      return this.get("collections.folders.create", params, FolderCreateResultSchema);
    }

    /** Scopes: browse, collection. A GET, as listed. */
    collectionFolderRemove(folderid: string): Promise<Success> {
      return this.get("collections.folders.remove", { folderid }, SuccessSchema);
    }

    /** Scopes: browse, collection. Sends only the fields given. */
    collectionFolderUpdate(params: FolderUpdate): Promise<Success> {
      return this.get("collections.folders.update", params, SuccessSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderUpdateOrder(params: { folderid: string; position: number }): Promise<Success> {
      return this.get("collections.folders.update_order", params, SuccessSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderUpdateDeviationOrder(params: { folderid: string; deviationid: string; position: number }): Promise<Success> {
      return this.get("collections.folders.update_deviation_order", params, SuccessSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderCopyDeviations(params: { target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("collections.folders.copy_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderMoveDeviations(params: { source_folderid: string; target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("collections.folders.move_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, collection. */
    collectionFolderRemoveDeviations(params: { folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("collections.folders.remove_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderCreate(params: { folder: string; description?: string; parent_folderid?: string }): Promise<FolderCreateResult> {
      return this.get("gallery.folders.create", params, FolderCreateResultSchema);
    }

    /** Scopes: browse, gallery. Sent as GET (what current clients use); `gallery.folders.remove.post` is the other listing's form. */
    galleryFolderRemove(folderid: string): Promise<Success> {
      return this.get("gallery.folders.remove", { folderid }, SuccessSchema);
    }

    /** Scopes: browse, gallery. Sends only the fields given. */
    galleryFolderUpdate(params: FolderUpdate): Promise<Success> {
      return this.get("gallery.folders.update", params, SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderUpdateOrder(params: { folderid: string; position: number }): Promise<Success> {
      return this.get("gallery.folders.update_order", params, SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderUpdateDeviationOrder(params: { folderid: string; deviationid: string; position: number }): Promise<Success> {
      return this.get("gallery.folders.update_deviation_order", params, SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderCopyDeviations(params: { target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("gallery.folders.copy_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderMoveDeviations(params: { source_folderid: string; target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("gallery.folders.move_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, gallery. */
    galleryFolderRemoveDeviations(params: { folderid: string; deviationids: readonly string[] }): Promise<Success> {
      return this.get("gallery.folders.remove_deviations", withList(params), SuccessSchema);
    }

    /** Scopes: browse, gallery. Moves folder `folderid` under `to_folderid` (DeviantArtFs' names). */
    galleryFolderMove(params: { folderid: string; to_folderid: string }): Promise<Success> {
      return this.get("gallery.folders.move", params, SuccessSchema);
    }
  };
}
