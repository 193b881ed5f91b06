-- Maintained counters for the archive grid (issue 32): its total and date scrubber (works per month of
-- publication) and its artist choices (works per author) were counted over the whole mirror on every page view,
-- about a second at a million works. Statement triggers on deviations keep both tables in step with every
-- insert, update and delete (COPY included), one grouped change per statement: the rows are locked in the
-- order of their key, so two writers meet on a month in the same order and never deadlock within a statement.
-- A row may reach 0 items: readers skip those. src/db/archive-browser.repository.ts reads them.
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears in a comment or literal, and the
-- PL/pgSQL body below is an E-string that writes each statement terminator as the octal escape \073.

-- CreateTable
CREATE TABLE "deviation_month_counts" (
    "month" TEXT NOT NULL,
    "items" INTEGER NOT NULL,

    CONSTRAINT "deviation_month_counts_pkey" PRIMARY KEY ("month")
);

-- CreateTable
CREATE TABLE "artist_work_counts" (
    "author_userid" TEXT NOT NULL,
    "items" INTEGER NOT NULL,

    CONSTRAINT "artist_work_counts_pkey" PRIMARY KEY ("author_userid")
);

-- ==== Hand-written: the month of a work, and the triggers (prisma/schema/schema.prisma lists them) ====

-- The month a work counts under: 'YYYY-MM' of its publication in UTC (the grid's scrubber), '' when undated.
CREATE FUNCTION "dvault_work_month"(p_published_at timestamptz) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(to_char(p_published_at AT TIME ZONE 'UTC', 'YYYY-MM'), '') $$;

-- One statement's change: +1 for each new row, -1 for each old one, grouped, the rows that do not move
-- left alone (an upsert that changes neither the date nor the author writes nothing here).
CREATE FUNCTION "dvault_deviation_counts_trigger"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO deviation_month_counts (month, items)
      SELECT dvault_work_month(published_at), count(*)::int FROM new_rows GROUP BY 1 ORDER BY 1
      ON CONFLICT (month) DO UPDATE SET items = deviation_month_counts.items + EXCLUDED.items\073
    INSERT INTO artist_work_counts (author_userid, items)
      SELECT author_userid, count(*)::int FROM new_rows WHERE author_userid IS NOT NULL GROUP BY 1 ORDER BY 1
      ON CONFLICT (author_userid) DO UPDATE SET items = artist_work_counts.items + EXCLUDED.items\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO deviation_month_counts (month, items)
      SELECT dvault_work_month(published_at), -count(*)::int FROM old_rows GROUP BY 1 ORDER BY 1
      ON CONFLICT (month) DO UPDATE SET items = deviation_month_counts.items + EXCLUDED.items\073
    INSERT INTO artist_work_counts (author_userid, items)
      SELECT author_userid, -count(*)::int FROM old_rows WHERE author_userid IS NOT NULL GROUP BY 1 ORDER BY 1
      ON CONFLICT (author_userid) DO UPDATE SET items = artist_work_counts.items + EXCLUDED.items\073
  ELSE
    INSERT INTO deviation_month_counts (month, items)
      SELECT m, sum(n)::int FROM (
        SELECT dvault_work_month(published_at) AS m, 1 AS n FROM new_rows
        UNION ALL SELECT dvault_work_month(published_at), -1 FROM old_rows) x
      GROUP BY m HAVING sum(n) <> 0 ORDER BY m
      ON CONFLICT (month) DO UPDATE SET items = deviation_month_counts.items + EXCLUDED.items\073
    INSERT INTO artist_work_counts (author_userid, items)
      SELECT a, sum(n)::int FROM (
        SELECT author_userid AS a, 1 AS n FROM new_rows WHERE author_userid IS NOT NULL
        UNION ALL SELECT author_userid, -1 FROM old_rows WHERE author_userid IS NOT NULL) x
      GROUP BY a HAVING sum(n) <> 0 ORDER BY a
      ON CONFLICT (author_userid) DO UPDATE SET items = artist_work_counts.items + EXCLUDED.items\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER "deviations_counts_insert" AFTER INSERT ON "deviations"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_deviation_counts_trigger"();
CREATE TRIGGER "deviations_counts_update" AFTER UPDATE ON "deviations"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_deviation_counts_trigger"();
CREATE TRIGGER "deviations_counts_delete" AFTER DELETE ON "deviations"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_deviation_counts_trigger"();

-- TRUNCATE fires no row or statement trigger above: it empties the counters with the table.
CREATE FUNCTION "dvault_deviation_counts_truncate"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  DELETE FROM deviation_month_counts\073
  DELETE FROM artist_work_counts\073
  RETURN NULL\073
END';
CREATE TRIGGER "deviations_counts_truncate" AFTER TRUNCATE ON "deviations"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_deviation_counts_truncate"();

-- What the mirror already holds, counted in one statement (one transaction: the engine commits each statement
-- on its own) under a lock that waits for the writers under way and holds off new ones: a worker writing while
-- this migration runs has its rows counted by the triggers above or by this count, never by both: what the triggers
-- added before the lock is replaced by the count, taken after those writers committed.
DO E'
BEGIN
  LOCK TABLE "deviations" IN SHARE ROW EXCLUSIVE MODE\073
  DELETE FROM "deviation_month_counts"\073
  INSERT INTO "deviation_month_counts" ("month", "items")
    SELECT dvault_work_month("published_at"), count(*)::int FROM "deviations" GROUP BY 1\073
  DELETE FROM "artist_work_counts"\073
  INSERT INTO "artist_work_counts" ("author_userid", "items")
    SELECT "author_userid", count(*)::int FROM "deviations" WHERE "author_userid" IS NOT NULL GROUP BY 1\073
END';
