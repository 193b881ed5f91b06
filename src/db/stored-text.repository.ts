// The journal and literature pages stored as files (downloads of kind text): listed, and pointed at a rewritten
// file with the change recorded in download_history (src/downloads/inert-texts.ts makes old pages inert).
import { storedFilesPage } from "./download-files.ts";
import { kysely, sql } from "./kysely.ts";
import type { Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export type StoredTextRow = Pick<Row<"downloads">, "id" | "deviationid" | "sha256"> & { path: string; size: number | null; title: string };

export class StoredTextRepository {
  constructor(private readonly db: Queryable) {}

  /** Rows of kind text with a stored file, by id from `afterId`. */
  async listStoredTexts(args: { afterId: string; limit: number }): Promise<StoredTextRow[]> {
    const rows = await storedFilesPage(this.db, args)
      .leftJoin("deviations as v", "v.deviationid", "d.deviationid")
      .select(["d.id", "d.deviationid", "d.path", "d.sha256", "d.size", (eb) => eb.fn.coalesce("v.title", "d.deviationid").as("title")])
      .where("d.kind", "=", "text")
      .$narrowType<{ path: string }>()
      .execute();
    return rows.map((r) => ({ ...r, size: r.size === null ? null : Number(r.size) }));
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
    const { id, oldPath, oldSha256, path, sha256, size, note, at } = args;
    // Only while the row still holds the file that was read: a download that stored another page meanwhile wins.
    const { rows } = await sql<{ n: number }>`
WITH old AS (
  SELECT id, deviationid, status, rendition, path, sha256, size FROM downloads
  WHERE id = ${id}::bigint AND path = ${oldPath} AND sha256 IS NOT DISTINCT FROM ${oldSha256}
  FOR UPDATE
),
upd AS (
  UPDATE downloads d SET path = ${path}, sha256 = ${sha256}, size = ${size}, verified_at = ${at}, updated_at = ${at}
  FROM old WHERE d.id = old.id
  RETURNING d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT upd.id, upd.deviationid, ${at}, 'replaced', old.status, old.rendition, old.path, old.sha256, old.size,
         upd.status, upd.rendition, upd.path, upd.sha256, upd.size, ${note}
  FROM old, upd
)
SELECT count(*)::int AS n FROM upd`.execute(kysely(this.db));
    return (rows[0]?.n ?? 0) > 0;
  }
}
