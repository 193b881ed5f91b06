// Gallery and collection folders and their membership rows (folder, deviation, position): one deviation
// row however many folders hold it. Full sweeps mark what they no longer found as 'gone_from_listing'.
import type { CollectionFolderInput, GalleryFolderInput } from "./mirror-input.ts";
import { uniqueBy, type FolderKind, type UpsertCounts } from "./mirror-rows.ts";
import { kysely, sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type FolderMemberInput = { deviationid: string; position: number };

export class FolderRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records a page of /gallery/folders. Nested `subfolders` are flattened with their parent; positions
   * count from `offset` (the page's offset) among siblings. `changed`: renamed, moved or reordered folders.
   */
  async upsertGalleryFolders(ownerUserid: string, folders: readonly GalleryFolderInput[], seenAt: Date, offset = 0): Promise<UpsertCounts> {
    const rows = uniqueBy(flattenGallery(folders, null, offset), (r) => r.folderid);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`folderid text, parent_folderid text, name text, description text, position integer, size integer, raw jsonb`,
      before: sql`
        old AS (
          SELECT f.folderid, f.parent_folderid, f.name, f.description, f.position, f.removed_at
          FROM gallery_folders f JOIN input USING (folderid)
        )`,
      upsert: sql`
        INSERT INTO gallery_folders AS f (folderid, owner_userid, parent_folderid, name, description, position, size, raw,
          first_seen_at, last_seen_at)
        SELECT folderid, ${ownerUserid}, parent_folderid, name, description, position, size, raw, ${seenAt}, ${seenAt} FROM input ORDER BY folderid
        ON CONFLICT (folderid) DO UPDATE SET
          owner_userid = EXCLUDED.owner_userid,
          parent_folderid = EXCLUDED.parent_folderid,
          name = COALESCE(EXCLUDED.name, f.name),
          description = COALESCE(EXCLUDED.description, f.description),
          position = EXCLUDED.position,
          size = COALESCE(EXCLUDED.size, f.size),
          raw = EXCLUDED.raw,
          ${seenAgain("f")}
        RETURNING f.folderid, (f.xmax = 0) AS inserted`,
      using: ["folderid"],
      changed: sql`o.removed_at IS NOT NULL OR o.parent_folderid IS DISTINCT FROM i.parent_folderid OR o.position IS DISTINCT FROM i.position OR (i.name IS NOT NULL AND o.name IS DISTINCT FROM i.name) OR (i.description IS NOT NULL AND o.description IS DISTINCT FROM i.description)`,
    });
  }

  /** Records a page of /collections/folders; positions count from `offset`. */
  async upsertCollectionFolders(ownerUserid: string, folders: readonly CollectionFolderInput[], seenAt: Date, offset = 0): Promise<UpsertCounts> {
    const rows = uniqueBy(
      folders.map((f, i) => ({
        folderid: f.folderid,
        name: f.name ?? null,
        description: f.description ?? null,
        position: offset + i,
        size: f.size ?? null,
        raw: withoutContents(f),
      })),
      (r) => r.folderid,
    );
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`folderid text, name text, description text, position integer, size integer, raw jsonb`,
      before: sql`
        old AS (
          SELECT f.folderid, f.name, f.description, f.position, f.removed_at
          FROM collection_folders f JOIN input USING (folderid)
        )`,
      upsert: sql`
        INSERT INTO collection_folders AS f (folderid, owner_userid, name, description, position, size, raw,
          first_seen_at, last_seen_at)
        SELECT folderid, ${ownerUserid}, name, description, position, size, raw, ${seenAt}, ${seenAt} FROM input ORDER BY folderid
        ON CONFLICT (folderid) DO UPDATE SET
          owner_userid = EXCLUDED.owner_userid,
          name = COALESCE(EXCLUDED.name, f.name),
          description = COALESCE(EXCLUDED.description, f.description),
          position = EXCLUDED.position,
          size = COALESCE(EXCLUDED.size, f.size),
          raw = EXCLUDED.raw,
          ${seenAgain("f")}
        RETURNING f.folderid, (f.xmax = 0) AS inserted`,
      using: ["folderid"],
      changed: sql`o.removed_at IS NOT NULL OR o.position IS DISTINCT FROM i.position OR (i.name IS NOT NULL AND o.name IS DISTINCT FROM i.name) OR (i.description IS NOT NULL AND o.description IS DISTINCT FROM i.description)`,
    });
  }

  /**
   * Records a page of a folder's contents. The deviations must be upserted first (a foreign key says so).
   * `changed`: members that moved or came back.
   */
  async upsertFolderMembership(kind: FolderKind, folderid: string, members: readonly FolderMemberInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(members, (m) => m.deviationid);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`deviationid text, position integer`,
      before: sql`
        old AS (
          SELECT m.deviationid, m.position, m.removed_at FROM folder_members m JOIN input USING (deviationid)
          WHERE m.kind = ${kind}::folder_kind AND m.folderid = ${folderid}
        )`,
      upsert: sql`
        INSERT INTO folder_members AS m (kind, folderid, deviationid, position, first_seen_at, last_seen_at)
        SELECT ${kind}::folder_kind, ${folderid}, deviationid, position, ${seenAt}, ${seenAt} FROM input ORDER BY deviationid
        ON CONFLICT (kind, folderid, deviationid) DO UPDATE SET
          position = COALESCE(EXCLUDED.position, m.position),
          ${seenAgain("m")}
        RETURNING m.deviationid, (m.xmax = 0) AS inserted`,
      using: ["deviationid"],
      changed: sql`o.removed_at IS NOT NULL OR (i.position IS NOT NULL AND o.position IS DISTINCT FROM i.position)`,
    });
  }

  /**
   * A folder walked to its end while its size was unknown: the members written in that walk (since
   * `walkStartedAt`) carry their ordinal from the top; counted from the end now that the end is known
   * (src/sync/sources/folder-plan.ts#memberPosition). Returns how many.
   */
  async countPositionsFromEnd(kind: FolderKind, folderid: string, walked: number, walkStartedAt: Date): Promise<number> {
    const result = await this.db.query(
      `UPDATE folder_members SET position = position - $3
       WHERE kind = $1::folder_kind AND folderid = $2 AND last_seen_at >= $4 AND position >= 0`,
      [kind, folderid, walked, walkStartedAt],
    );
    return result.rowCount ?? 0;
  }

  /**
   * After a complete walk of a folder started at `sweepStartedAt`: members not seen since are removed
   * ('gone_from_listing'). Returns their ids.
   */
  async markMissingMembersRemoved(kind: FolderKind, folderid: string, sweepStartedAt: Date, at: Date = new Date()): Promise<string[]> {
    return this.removeMembersNotSeen(kind, folderid, sweepStartedAt, at);
  }

  /**
   * An early-stopping walk started at `walkStartedAt` ended at a page whose first member has position
   * `boundary`, unchanged: the members above it (lower positions: src/sync/sources/folder-plan.ts#memberPosition)
   * it did not meet have left the folder ('gone_from_listing'). Returns their ids.
   */
  async markPassedMembersRemoved(kind: FolderKind, folderid: string, boundary: number, walkStartedAt: Date, at: Date): Promise<string[]> {
    return this.removeMembersNotSeen(kind, folderid, walkStartedAt, at, boundary);
  }

  /** Marks the live members of a folder not seen since `since` (and below position `below`, if given) removed; their ids. */
  private async removeMembersNotSeen(kind: FolderKind, folderid: string, since: Date, at: Date, below?: number): Promise<string[]> {
    const rows = await kysely(this.db)
      .updateTable("folder_members")
      .set({ removed_at: at, removed_reason: "gone_from_listing" })
      .where("kind", "=", kind)
      .where("folderid", "=", folderid)
      .$if(below !== undefined, (qb) => qb.where("position", "<", below ?? 0))
      .where("last_seen_at", "<", since)
      .where("removed_at", "is", null)
      .returning("deviationid")
      .execute();
    return rows.map((r) => r.deviationid);
  }

  /** After a complete walk of an owner's folder list: folders not seen since are removed. Returns how many. */
  async markMissingFoldersRemoved(kind: FolderKind, ownerUserid: string, sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const sql = kind === "gallery" ? MARK_MISSING_GALLERY_FOLDERS : MARK_MISSING_COLLECTION_FOLDERS;
    const result = await this.db.query(sql, [ownerUserid, sweepStartedAt, at]);
    return result.rowCount ?? 0;
  }
}

type GalleryFolderRow = {
  folderid: string;
  parent_folderid: string | null;
  name: string | null;
  description: string | null;
  position: number;
  size: number | null;
  raw: object;
};

function flattenGallery(folders: readonly GalleryFolderInput[], parent: string | null, offset: number): GalleryFolderRow[] {
  return folders.flatMap((f, i) => [
    {
      folderid: f.folderid,
      parent_folderid: f.parent ?? parent,
      name: f.name ?? null,
      description: f.description ?? null,
      position: offset + i,
      size: f.size ?? null,
      raw: withoutContents(f),
    },
    ...flattenGallery(f.subfolders ?? [], f.folderid, 0),
  ]);
}

/** The folder object without the deviations and subfolders it may embed (those have rows of their own). */
function withoutContents<T extends { deviations?: unknown; subfolders?: unknown }>(folder: T): object {
  const { deviations: _deviations, subfolders: _subfolders, ...rest } = folder;
  return rest;
}

const MARK_MISSING_GALLERY_FOLDERS = `
UPDATE gallery_folders SET removed_at = $3, removed_reason = 'gone_from_listing'
WHERE owner_userid = $1 AND last_seen_at < $2 AND removed_at IS NULL`;

const MARK_MISSING_COLLECTION_FOLDERS = `
UPDATE collection_folders SET removed_at = $3, removed_reason = 'gone_from_listing'
WHERE owner_userid = $1 AND last_seen_at < $2 AND removed_at IS NULL`;
