// The journal and literature pages stored as files (downloads of kind text): listed, and pointed at a rewritten
// file with the change recorded in download_history (src/downloads/inert-texts.ts makes old pages inert).
import type { Queryable } from "./with-transaction.ts";

export type StoredTextRow = { id: string; deviationid: string; path: string; sha256: string | null; size: number | null; title: string };

const LIST_STORED_TEXTS = `
SELECT d.id, d.deviationid, d.path, d.sha256, d.size, coalesce(v.title, d.deviationid) AS title
FROM downloads d LEFT JOIN deviations v ON v.deviationid = d.deviationid
WHERE d.kind = 'text' AND d.path IS NOT NULL AND d.id > $1::bigint
ORDER BY d.id
LIMIT $2`;

// Only while the row still holds the file that was read ($2, $3): a download that stored another page meanwhile wins.
const REPLACE_STORED_TEXT = `
WITH old AS (
  SELECT id, deviationid, status, rendition, path, sha256, size FROM downloads
  WHERE id = $1::bigint AND path = $2 AND sha256 IS NOT DISTINCT FROM $3
  FOR UPDATE
),
upd AS (
  UPDATE downloads d SET path = $4, sha256 = $5, size = $6, verified_at = $8, updated_at = $8
  FROM old WHERE d.id = old.id
  RETURNING d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT upd.id, upd.deviationid, $8, 'replaced', old.status, old.rendition, old.path, old.sha256, old.size,
         upd.status, upd.rendition, upd.path, upd.sha256, upd.size, $7
  FROM old, upd
)
SELECT count(*)::int AS n FROM upd`;

export class StoredTextRepository {
  constructor(private readonly db: Queryable) {}

  /** Rows of kind text with a stored file, by id from `afterId`. */
  async listStoredTexts(args: { afterId: string; limit: number }): Promise<StoredTextRow[]> {
    const { rows } = await this.db.query<Omit<StoredTextRow, "id" | "size"> & { id: string | number; size: string | number | null }>(LIST_STORED_TEXTS, [
      args.afterId,
      args.limit,
    ]);
    return rows.map((r) => ({ ...r, id: String(r.id), size: r.size === null ? null : Number(r.size) }));
  }

  /** Points the row at its rewritten file, if it still holds `oldPath` with `oldSha256`; false when it moved on. */
  async replaceStoredText(args: {
    id: string;
    oldPath: string;
    oldSha256: string | null;
    path: string;
    sha256: string;
    size: number;
    note: string;
    at: Date;
  }): Promise<boolean> {
    const { rows } = await this.db.query<{ n: number }>(REPLACE_STORED_TEXT, [
      args.id,
      args.oldPath,
      args.oldSha256,
      args.path,
      args.sha256,
      args.size,
      args.note,
      args.at,
    ]);
    return (rows[0]?.n ?? 0) > 0;
  }
}
