// What the folder walk (folder-walk.ts) keeps between runs, and what differs between galleries and
// collections: which listings witness an owner's folders (docs/service-behaviour.md#folders-optional).
import { z } from "zod";
import type { DaClient } from "../../api/client.ts";
import type { PageIterator } from "../../api/transport.ts";
import type { CollectionFolder, Deviation, GalleryFolder } from "../../api/types.ts";
import type { FolderKind, UpsertCounts } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";

/** Page size of folder contents and the "all" views (docs/service-behaviour.md#page-size-maxima). */
export const PAGE_SIZE = 24;

// ---- state ------------------------------------------------------------------------------------------

const PlanEntrySchema = z.object({
  folderid: z.string(),
  name: z.string().nullable(),
  /** The folder's size from this run's folder list; positions count down from it. */
  size: z.number().nullable(),
  /** Stop at the first page that is already mirrored and unchanged. */
  early: z.boolean(),
  /** The "all" view (every deviation, filed or not), walked on a sweep as the folders' witness. */
  all: z.boolean().optional(),
});

const RunSchema = z.object({
  /** A sweep: every folder and the "all" view walked to the end, then what was not seen is marked removed. */
  full: z.boolean(),
  startedAt: z.string(),
  plan: z.array(PlanEntrySchema),
  index: z.number().int(),
  /** Where the current folder's next page starts, and how many items it has returned so far. */
  offset: z.number().int(),
  ordinal: z.number().int(),
  folderStartedAt: z.string().nullable(),
  truncated: z.boolean(),
  /** Ids new on the newest page: if no planned folder lists them, every folder is opened. */
  lookFor: z.array(z.string()),
  /** What the "all" view listed in this sweep: live deviations, and whether it was walked to its end. */
  all: z.object({ listed: z.number().int(), complete: z.boolean() }).nullish(),
  /** Folders whose listing stopped at the offset ceiling (members past it unreachable), in words. */
  folderIssues: z.array(z.string()).optional(),
  /** Where the service stopped paging, when a listing showed it (docs/service-behaviour.md#offset-ceiling). */
  ceiling: z.number().int().nullish(),
  /** Works that left a listing in this incremental run (freshness.ts): asked about at its end unless listed elsewhere. */
  departed: z.array(z.string()).optional(),
  /**
   * Set when the run began: why every work of the source may have to be asked about (freshness.ts), and by
   * how much the owner's profile count dropped; kept with the run so a resumed run still does it.
   */
  fullCheck: z.object({ reasons: z.array(z.string()), profileDrop: z.number().int(), profileCount: z.number().nullable() }).optional(),
});

const PendingTextSchema = z.object({ id: z.string(), excerpt: z.string().nullable() });

export const FolderStateSchema = z.object({
  /** Folder sizes as of the last walk that reached the folder's unchanged part or its end. */
  sizes: z.record(z.string(), z.number()),
  /**
   * Comma-joined ids of every deviation this source has listed, for finding those that vanished on a
   * sweep. Left out of per-page cursor writes (it is the one big field) and written back when the run
   * ends or fails; absent after a crash, which only skips vanished-detection until the next sweep.
   */
  known: z.string().optional(),
  /** Ids whose metadata / text is still to be fetched: committed with the page that found them. */
  pendingMetadata: z.array(z.string()),
  pendingTexts: z.array(PendingTextSchema),
  /** The unfinished run, resumed by the next one. */
  run: RunSchema.optional(),
  /** Comma-joined ids of the "all" view's first page as last read: a freshness witness (freshness.ts). */
  top: z.string().optional(),
  /** The owner's profile count of what this source lists, as of the last run given one (freshness.ts). */
  witnessCount: z.number().nullish(),
  /**
   * Works that may be gone upstream whose lookup settled nothing yet (a throttle, a 5xx, the lookup removed:
   * vanished.ts): asked again at every run until the service answers about them.
   */
  unsettled: z.array(z.string()).optional(),
});
export type FolderState = z.infer<typeof FolderStateSchema>;
export type Run = z.infer<typeof RunSchema>;
export type PlanEntry = z.infer<typeof PlanEntrySchema>;

export function emptyFolderState(): FolderState {
  return { sizes: {}, pendingMetadata: [], pendingTexts: [] };
}

/** The stored state, or a fresh one when there is none or it has another shape (an older version). */
export function parseFolderState(value: unknown): FolderState {
  const parsed = FolderStateSchema.safeParse(value);
  return parsed.success ? parsed.data : emptyFolderState();
}

/** The state as written in a cursor; `withKnown` false leaves out the big known-id list. */
export function folderStateJson(state: FolderState, withKnown: boolean): FolderState {
  const { known, ...rest } = state;
  return withKnown && known !== undefined ? { ...rest, known } : rest;
}

export function splitIds(joined: string): string[] {
  return joined === "" ? [] : joined.split(",");
}

// ---- what differs between galleries and collections --------------------------------------------------

export type AnyFolder = GalleryFolder | CollectionFolder;

export type FolderSpec = {
  kind: FolderKind;
  /** Whose folders; `username` undefined means the authenticated user. */
  owner: { userid: string; username?: string | undefined };
  download: { priority: number; reason: string };
  listFolders(client: DaClient): PageIterator<AnyFolder>;
  upsertFolders(repos: SyncRepos, folders: readonly AnyFolder[], seenAt: Date, offset: number): Promise<UpsertCounts>;
  folderPages(client: DaClient, folderid: string, startOffset: number): PageIterator<Deviation>;
  /** The "all" view from `startOffset`: its first page catches edits at the top of the archive. */
  allPages(client: DaClient, startOffset: number): PageIterator<Deviation>;
};

export function gallerySpec(owner: FolderSpec["owner"], download: FolderSpec["download"]): FolderSpec {
  const username = owner.username;
  return {
    kind: "gallery",
    owner,
    download,
    listFolders: (client) => client.galleryFolders({ username, calculate_size: true, limit: 50 }),
    upsertFolders: (repos, folders, seenAt, offset) => repos.folders.upsertGalleryFolders(owner.userid, folders as GalleryFolder[], seenAt, offset),
    folderPages: (client, folderid, startOffset) => client.galleryFolder(folderid, { username, mode: "newest", limit: PAGE_SIZE, startOffset }),
    allPages: (client, startOffset) => client.galleryAll({ username, limit: PAGE_SIZE, startOffset }),
  };
}

export function collectionSpec(owner: FolderSpec["owner"], download: FolderSpec["download"]): FolderSpec {
  const username = owner.username;
  return {
    kind: "collection",
    owner,
    download,
    listFolders: (client) => client.collectionFolders({ username, calculate_size: true, limit: 50 }),
    upsertFolders: (repos, folders, seenAt, offset) => repos.folders.upsertCollectionFolders(owner.userid, folders as CollectionFolder[], seenAt, offset),
    folderPages: (client, folderid, startOffset) => client.collectionFolder(folderid, { username, limit: PAGE_SIZE, startOffset }),
    allPages: (client, startOffset) => client.collectionsAll({ username, limit: PAGE_SIZE, startOffset }),
  };
}

/** The folders of a folder-list page and, depth first, their subfolders. */
export function flattenFolders(folders: readonly AnyFolder[]): AnyFolder[] {
  return folders.flatMap((f) => {
    const subfolders = "subfolders" in f && Array.isArray(f.subfolders) ? (f.subfolders as GalleryFolder[]) : [];
    return [f, ...flattenFolders(subfolders)];
  });
}
