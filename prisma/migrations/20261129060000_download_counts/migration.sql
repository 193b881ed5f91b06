-- Maintained counters of downloads for `dvault status` and the dashboard's overview (src/db/status.repository.ts,
-- issue 32): the rows per status with their bytes, and the archive's stored files (content-addressed, so a file that
-- several downloads share counts once) with their bytes were counted over the whole table on every view, about 0.3 s
-- at 800 000 files under load even as index-only walks (migration 20261129032000_status_indexes). Statement triggers
-- on downloads keep them in step with every insert, update and delete (COPY included), one grouped change per
-- statement, as the archive counters do (migration 20261129030000_archive_counters, whose notes on lock order apply).
--
-- Downloads are written in batches by several transactions at once (src/downloads/group-commit.ts keeps up to four
-- under way, besides the claims), and all of them move the same few statuses: one row per status would be held by
-- each batch until it commits, and the batches would queue on it. So the totals are split in shards, one chosen by
-- the writer's backend (pg_backend_pid() % 16): concurrent transactions on different connections write different
-- rows, and readers add up the shards. A shard's row may go below 0 (a row counted in one shard leaves from another)
-- or reach 0: only the sums mean anything.
--
-- stored_files holds, per stored path, how many stored rows point at it (refs) and the file's size: a file counts in
-- stored_file_totals when its refs go from 0 to more and leaves when they fall back to 0. Two writers storing the
-- same new content at once meet on the path's row (ON CONFLICT waits for the first to commit), so the file is
-- counted once. A path's size is the one its first row recorded (the address is the content's sha256, so every row
-- of a path records the same size). A path whose refs fall to 0 keeps its row, at 0: it counts nowhere.
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears in a comment or literal, and the
-- PL/pgSQL bodies below are E-strings that write each statement terminator as the octal escape \073.

-- CreateTable
CREATE TABLE "download_status_counts" (
    "shard" SMALLINT NOT NULL,
    "status" "download_status" NOT NULL,
    "items" INTEGER NOT NULL,
    "bytes" BIGINT NOT NULL,

    CONSTRAINT "download_status_counts_pkey" PRIMARY KEY ("shard","status")
);

-- CreateTable
CREATE TABLE "stored_files" (
    "path" TEXT NOT NULL,
    "refs" INTEGER NOT NULL,
    "size" BIGINT NOT NULL,

    CONSTRAINT "stored_files_pkey" PRIMARY KEY ("path")
);

-- CreateTable
CREATE TABLE "stored_file_totals" (
    "shard" SMALLINT NOT NULL,
    "files" INTEGER NOT NULL,
    "bytes" BIGINT NOT NULL,

    CONSTRAINT "stored_file_totals_pkey" PRIMARY KEY ("shard")
);

-- ==== Hand-written: the triggers (prisma/schema/schema.prisma lists them) ====

-- One statement's change: per status, +1 and the size for each new row, -1 and the size for each old one, the
-- statuses that do not move left alone (an update of verified_at writes nothing here). Then, per stored path (the
-- rows status.repository.ts calls stored: done, degraded, not_downloadable with a path), the change of its refs,
-- and of the totals the paths that appear or go away.
CREATE FUNCTION "dvault_download_counts_trigger"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
DECLARE
  -- The rows the statement changed, +1 for each new one and -1 for each old one: named in a statement run by
  -- EXECUTE, as a trigger can name only the transition tables its event has.
  change text := CASE TG_OP
    WHEN ''INSERT'' THEN ''SELECT status, path, size, 1 AS n FROM new_rows''
    WHEN ''DELETE'' THEN ''SELECT status, path, size, -1 AS n FROM old_rows''
    ELSE ''SELECT status, path, size, 1 AS n FROM new_rows UNION ALL SELECT status, path, size, -1 FROM old_rows'' END\073
BEGIN
  EXECUTE format($q$
    WITH change AS (%s),
    by_status AS (
      INSERT INTO download_status_counts AS c (shard, status, items, bytes)
        SELECT $1, status, sum(n)::int, coalesce(sum(n * size), 0) FROM change
        GROUP BY status HAVING sum(n) <> 0 OR coalesce(sum(n * size), 0) <> 0 ORDER BY status
        ON CONFLICT (shard, status) DO UPDATE SET items = c.items + EXCLUDED.items, bytes = c.bytes + EXCLUDED.bytes
    ), by_path AS (
      SELECT path, sum(n)::int AS n, coalesce(max(size) FILTER (WHERE n > 0), 0) AS size FROM change
      WHERE status IN (''done'', ''degraded'', ''not_downloadable'') AND path IS NOT NULL
      GROUP BY path HAVING sum(n) <> 0
    ), refs AS (
      INSERT INTO stored_files AS f (path, refs, size) SELECT path, n, size FROM by_path ORDER BY path
        ON CONFLICT (path) DO UPDATE SET refs = f.refs + EXCLUDED.refs, size = CASE WHEN f.refs = 0 THEN EXCLUDED.size ELSE f.size END
        RETURNING f.path, f.refs, f.size
    ), moved AS (
      SELECT (r.refs > 0)::int - ((r.refs - p.n) > 0)::int AS files, r.size FROM refs r JOIN by_path p USING (path)
    )
    INSERT INTO stored_file_totals AS t (shard, files, bytes)
      SELECT $1, sum(files)::int, sum(files * size) FROM moved HAVING sum(files) <> 0 OR sum(files * size) <> 0
      ON CONFLICT (shard) DO UPDATE SET files = t.files + EXCLUDED.files, bytes = t.bytes + EXCLUDED.bytes
  $q$, change) USING (pg_backend_pid() % 16)::smallint\073
  RETURN NULL\073
END';

CREATE TRIGGER "downloads_counts_insert" AFTER INSERT ON "downloads" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_download_counts_trigger"();
CREATE TRIGGER "downloads_counts_update" AFTER UPDATE ON "downloads" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_download_counts_trigger"();
CREATE TRIGGER "downloads_counts_delete" AFTER DELETE ON "downloads" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_download_counts_trigger"();

-- TRUNCATE fires no row or statement trigger above: it empties the counters with the table.
CREATE FUNCTION "dvault_download_counts_truncate"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  TRUNCATE download_status_counts, stored_files, stored_file_totals\073
  RETURN NULL\073
END';
CREATE TRIGGER "downloads_counts_truncate" AFTER TRUNCATE ON "downloads" FOR EACH STATEMENT EXECUTE FUNCTION "dvault_download_counts_truncate"();

-- What the mirror already holds, counted in one statement under a lock that waits for the writers under way and
-- holds off new ones (as 20261129030000_archive_counters does, for the same reason): what the triggers added before
-- the lock is replaced by the count, taken after those writers committed. Everything goes to shard 0, and an empty
-- table makes no row (a restore loads the counters of its backup into the tables this leaves).
DO E'
BEGIN
  LOCK TABLE "downloads" IN SHARE ROW EXCLUSIVE MODE\073
  DELETE FROM "download_status_counts"\073
  INSERT INTO "download_status_counts" ("shard", "status", "items", "bytes")
    SELECT 0, "status", count(*)::int, coalesce(sum("size"), 0) FROM "downloads" GROUP BY "status"\073
  DELETE FROM "stored_files"\073
  INSERT INTO "stored_files" ("path", "refs", "size")
    SELECT "path", count(*)::int, coalesce(max("size"), 0) FROM "downloads"
    WHERE "status" IN (''done'', ''degraded'', ''not_downloadable'') AND "path" IS NOT NULL GROUP BY "path"\073
  DELETE FROM "stored_file_totals"\073
  INSERT INTO "stored_file_totals" ("shard", "files", "bytes")
    SELECT 0, count(*)::int, sum("size") FROM "stored_files" HAVING count(*) > 0\073
END';
