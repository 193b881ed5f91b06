-- The archive browser's folder tree shows each gallery's and collection's size (src/db/archive-browser.repository.ts,
-- filterChoices): it counted every live member of every folder on each page view, a quarter of a second at a million
-- works (bench/archive-scale.ts). Statement triggers on folder_members keep the counts, as the archive counters do
-- (migration 20261129030000_archive_counters, whose notes on lock order apply here too).
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears in a comment or literal, and the
-- PL/pgSQL bodies below are E-strings that write each statement terminator as the octal escape \073.

-- CreateTable
CREATE TABLE "folder_member_counts" (
    "kind" "folder_kind" NOT NULL,
    "folderid" TEXT NOT NULL,
    "items" INTEGER NOT NULL,

    CONSTRAINT "folder_member_counts_pkey" PRIMARY KEY ("kind","folderid")
);

-- ==== Hand-written: the triggers (prisma/schema/schema.prisma lists them) ====

-- One statement's change: +1 for each live new row, -1 for each live old one, per folder, the folders that do not
-- move left alone.
CREATE FUNCTION "dvault_folder_counts_trigger"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO folder_member_counts (kind, folderid, items)
      SELECT kind, folderid, count(*)::int FROM new_rows WHERE removed_at IS NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (kind, folderid) DO UPDATE SET items = folder_member_counts.items + EXCLUDED.items\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO folder_member_counts (kind, folderid, items)
      SELECT kind, folderid, -count(*)::int FROM old_rows WHERE removed_at IS NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (kind, folderid) DO UPDATE SET items = folder_member_counts.items + EXCLUDED.items\073
  ELSE
    INSERT INTO folder_member_counts (kind, folderid, items)
      SELECT k, f, sum(n)::int FROM (
        SELECT kind AS k, folderid AS f, 1 AS n FROM new_rows WHERE removed_at IS NULL
        UNION ALL SELECT kind, folderid, -1 FROM old_rows WHERE removed_at IS NULL) x
      GROUP BY k, f HAVING sum(n) <> 0 ORDER BY k, f
      ON CONFLICT (kind, folderid) DO UPDATE SET items = folder_member_counts.items + EXCLUDED.items\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER "folder_members_counts_insert" AFTER INSERT ON "folder_members"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_folder_counts_trigger"();
CREATE TRIGGER "folder_members_counts_update" AFTER UPDATE ON "folder_members"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_folder_counts_trigger"();
CREATE TRIGGER "folder_members_counts_delete" AFTER DELETE ON "folder_members"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_folder_counts_trigger"();

CREATE FUNCTION "dvault_folder_counts_truncate"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  DELETE FROM folder_member_counts\073
  RETURN NULL\073
END';
CREATE TRIGGER "folder_members_counts_truncate" AFTER TRUNCATE ON "folder_members"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_folder_counts_truncate"();

-- What the mirror already holds, counted in one statement under a lock that waits for the writers under way and
-- holds off new ones (as 20261129030000_archive_counters does, for the same reason).
DO E'
BEGIN
  LOCK TABLE "folder_members" IN SHARE ROW EXCLUSIVE MODE\073
  DELETE FROM "folder_member_counts"\073
  INSERT INTO "folder_member_counts" ("kind", "folderid", "items")
    SELECT "kind", "folderid", count(*)::int FROM "folder_members" WHERE "removed_at" IS NULL GROUP BY 1, 2\073
END';
