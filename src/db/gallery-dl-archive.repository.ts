// gallery-dl's download archive: a SQLite file of the user's, read (never written) through sql.js, the
// SQLite engine compiled to WebAssembly, so no native module is needed. Its layout is in
// docs/service-behaviour.md#gallery-dl-archive. It is a file dvault does not own: read as src/foreign-file.ts reads
// one (a regular file, not through a link at its name, never waiting on a FIFO), within ARCHIVE_MAX_BYTES.
import initSqlJs, { type Database, type SqlJsStatic } from "sql.js";
import { UserError } from "../errors.ts";
import { ForeignFileError, readForeignFile } from "../foreign-file.ts";

/** The table gallery-dl 1.25 writes; later versions let the user rename it (then the one table of the same shape is read). */
const DEFAULT_TABLE = "archive";
/** sql.js holds the whole file in memory; gallery-dl's archive takes about 100 bytes an entry, so this is millions of entries. */
const ARCHIVE_MAX_BYTES = 512 * 1024 * 1024;
/** SQLite files start with this header. */
const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

let engine: Promise<SqlJsStatic> | undefined;

export class GalleryDlArchiveRepository {
  private constructor(
    private readonly db: Database,
    private readonly table: string,
  ) {}

  /**
   * Opens a copy in memory of the archive at `file`: the user's file is read once and never written. Throws a
   * UserError saying what to do when the file is missing or is not a gallery-dl archive.
   */
  static async open(file: string, signal?: AbortSignal): Promise<GalleryDlArchiveRepository> {
    let bytes: Buffer;
    try {
      bytes = await readForeignFile(file, { maxBytes: ARCHIVE_MAX_BYTES, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (!(err instanceof ForeignFileError)) throw err;
      const why = err.code === "ENOENT" ? "no such file" : err.reason;
      throw new UserError(`--archive ${file}: ${why}; give the path of gallery-dl's archive file (its "archive" option)`);
    }
    if (bytes.length < SQLITE_MAGIC.length || !bytes.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) {
      throw new UserError(`--archive ${file} is not a SQLite database; give the path of gallery-dl's archive file (its "archive" option)`);
    }
    engine ??= initSqlJs();
    const SQL = await engine;
    const db = new SQL.Database(bytes);
    const table = archiveTable(db);
    if (!table) {
      db.close();
      throw new UserError(`--archive ${file} has no table of gallery-dl's shape (one column "entry"); is it gallery-dl's archive file?`);
    }
    return new GalleryDlArchiveRepository(db, table);
  }

  /** Every key recorded, e.g. "deviantartg_someone_123456.png". */
  listEntries(): string[] {
    const result = this.db.exec(`SELECT entry FROM "${this.table.replaceAll('"', '""')}" ORDER BY entry`);
    const rows = result[0]?.values ?? [];
    return rows.map((r) => r[0]).filter((v): v is string => typeof v === "string");
  }

  close(): void {
    this.db.close();
  }
}

/** "archive", else the only table whose one column is "entry" (a renamed table), else undefined. */
function archiveTable(db: Database): string | undefined {
  const tables = (db.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`)[0]?.values ?? []).map((r) => String(r[0]));
  const shaped = tables.filter((t) => {
    const cols = db.exec(`PRAGMA table_info("${t.replaceAll('"', '""')}")`)[0]?.values ?? [];
    return cols.length === 1 && cols[0]?.[1] === "entry";
  });
  if (shaped.includes(DEFAULT_TABLE)) return DEFAULT_TABLE;
  return shaped.length === 1 ? shaped[0] : undefined;
}
