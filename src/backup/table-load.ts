// Format 2's database into an empty one (restore.ts): the backup's migrations make the schema in one transaction
// (src/db/mirror-load.ts), the manifest's tables and columns must be exactly what they made (a column renamed or
// retyped in the manifest, a table left out or added, is refused before a row goes in: COPY by column names would
// otherwise put values under another column), then every table file goes in through COPY … FROM STDIN in an order
// foreign keys allow, its bytes hashed and its rows counted again on the way (the files were checked before, but
// they are not dvault's: one changed since is refused, not loaded). Left uncommitted: restore commits it once the
// archive is staged, or closes it, which rolls it all back.
import type { ColumnShape, TableShape } from "../db/mirror-tables.ts";
import { type MirrorLoad, openMirrorLoad } from "../db/mirror-load.ts";
import { UserError } from "../errors.ts";
import { MANIFEST } from "./backup.ts";
import { type CheckedTable, damaged } from "./backup-check.ts";
import { readTableFile } from "./table-files.ts";

const describe = (columns: ColumnShape[]) => columns.map((c) => `${c.name} ${c.type}`).join(", ");

/** The first difference between what the manifest says and what the migrations made, as the one line that refuses it. */
export function shapeMismatch(made: TableShape[], listed: Array<Pick<CheckedTable, "name" | "columns">>): UserError | undefined {
  const byName = new Map(listed.map((t) => [t.name, t]));
  for (const t of made) {
    const entry = byName.get(t.name);
    if (!entry) return damaged(`its ${MANIFEST} has no table ${t.name}, which its migrations make`);
    if (describe(entry.columns) !== describe(t.columns)) {
      return damaged(`its ${MANIFEST} gives the table ${t.name} the columns (${describe(entry.columns)}) where its migrations make (${describe(t.columns)})`);
    }
    byName.delete(t.name);
  }
  const extra = byName.keys().next();
  return extra.done ? undefined : damaged(`its ${MANIFEST} lists a table ${extra.value} that its migrations do not make`);
}

/** The database loaded and left in its open transaction; the caller commits or closes it. */
export async function loadMirror({
  databaseUrl,
  migrations,
  tables,
  signal,
}: {
  databaseUrl: string;
  migrations: string[];
  tables: CheckedTable[];
  signal: AbortSignal | undefined;
}): Promise<MirrorLoad> {
  const load = await openMirrorLoad(databaseUrl, migrations);
  try {
    const mismatch = shapeMismatch(load.tables, tables);
    if (mismatch) throw mismatch;
    const byName = new Map(tables.map((t) => [t.name, t]));
    const shapes = new Map(load.tables.map((t) => [t.name, t]));
    for (const name of load.order) {
      const entry = byName.get(name);
      const shape = shapes.get(name);
      if (!entry || !shape) continue;
      const copy = load.copy(shape);
      const read = await readTableFile(entry.path, { into: copy, signal }).catch((err: unknown) => {
        signal?.throwIfAborted();
        // Checked whole a moment ago, so PostgreSQL refused a row: a file written by hand, or one changed since.
        const why = err instanceof Error ? err.message : String(err);
        throw damaged(`${entry.path} does not load into the table ${name} (${why.split("\n")[0]})`);
      });
      if (read.sha256 !== entry.sha256 || read.rows !== entry.rows || copy.rows !== entry.rows) {
        throw new UserError(`${entry.path} changed while it was restored: the backup is being written to; nothing was restored`);
      }
    }
    await load.finish();
    return load;
  } catch (err) {
    await load.close();
    throw err;
  }
}
