-- The readable tree at a million works (issue 32, docs/PERFORMANCE.md#readable-tree): a write of the local tree
-- compared the fingerprint of every stored file's placements with the record (migration
-- 20261129144730_readable_tree_manifest), 16 to 18 s of PostgreSQL a run at a million works with nothing changed.
-- Statement triggers on the tables the links are made from now note what may have changed (readable_tree_marks), and
-- a write compares only the files those marks reach (src/db/readable-tree.repository.ts). Appends only: a mark never
-- waits on another writer's, so no writer of the mirror waits or deadlocks on them. A TRUNCATE of one of these tables
-- forgets the tree's sweep and leaves a mark of its own, so the next write rebuilds the tree. readable_tree_sweeps.marked_format says under which
-- link format every file was last compared: none (an archive from before the marks) makes the next write compare
-- all of them once.
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears in a comment or literal, and the
-- PL/pgSQL bodies below are E-strings that write each statement terminator as the octal escape \073.

-- AlterTable
ALTER TABLE "readable_tree_sweeps" ADD COLUMN     "marked_format" TEXT;

-- CreateTable
CREATE TABLE "readable_tree_marks" (
    "id" BIGSERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "key" TEXT NOT NULL,

    CONSTRAINT "readable_tree_marks_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "gallery_folders_parent_folderid_idx" ON "gallery_folders"("parent_folderid");

-- ==== Hand-written: the triggers (prisma/schema/schema.prisma lists them) ====

-- downloads: a file stored, moved, no longer stored, or another file standing for its work. An update counts when a
-- row's columns the placements read differ (rows in new and not in old, or the other way) and the row was or is a
-- stored file.
CREATE FUNCTION "dvault_readable_tree_mark_downloads"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''work'', deviationid FROM new_rows WHERE status IN (''done'', ''degraded'', ''not_downloadable'')\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''work'', deviationid FROM old_rows WHERE status IN (''done'', ''degraded'', ''not_downloadable'')\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''work'', deviationid FROM (
        (SELECT id, deviationid, kind, status, path, done_at FROM new_rows
         EXCEPT SELECT id, deviationid, kind, status, path, done_at FROM old_rows)
        UNION ALL
        (SELECT id, deviationid, kind, status, path, done_at FROM old_rows
         EXCEPT SELECT id, deviationid, kind, status, path, done_at FROM new_rows)) x
      WHERE status IN (''done'', ''degraded'', ''not_downloadable'')\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "downloads_tree_marks_insert" AFTER INSERT ON "downloads"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_downloads"();
CREATE TRIGGER "downloads_tree_marks_update" AFTER UPDATE ON "downloads"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_downloads"();
CREATE TRIGGER "downloads_tree_marks_delete" AFTER DELETE ON "downloads"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_downloads"();

-- deviations: a title, type or author changed, or a work gone. A new work has no stored file yet (downloads refers to it).
CREATE FUNCTION "dvault_readable_tree_mark_deviations"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''work'', deviationid FROM old_rows\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''work'', deviationid FROM (
        (SELECT deviationid, title, type, author_userid FROM new_rows EXCEPT SELECT deviationid, title, type, author_userid FROM old_rows)
        UNION ALL
        (SELECT deviationid, title, type, author_userid FROM old_rows EXCEPT SELECT deviationid, title, type, author_userid FROM new_rows)) x\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "deviations_tree_marks_update" AFTER UPDATE ON "deviations"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_deviations"();
CREATE TRIGGER "deviations_tree_marks_delete" AFTER DELETE ON "deviations"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_deviations"();

-- users: a username (the artist's and the folder owner's name in the paths), a user row new or gone (the paths show
-- the userid without one).
CREATE FUNCTION "dvault_readable_tree_mark_users"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''user'', userid FROM new_rows\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''user'', userid FROM old_rows\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''user'', userid FROM (
        (SELECT userid, username FROM new_rows EXCEPT SELECT userid, username FROM old_rows)
        UNION ALL
        (SELECT userid, username FROM old_rows EXCEPT SELECT userid, username FROM new_rows)) x\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "users_tree_marks_insert" AFTER INSERT ON "users"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_users"();
CREATE TRIGGER "users_tree_marks_update" AFTER UPDATE ON "users"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_users"();
CREATE TRIGGER "users_tree_marks_delete" AFTER DELETE ON "users"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_users"();

-- gallery_folders: a name, parent, owner or removal changed, or a folder new or gone (its children's paths begin at
-- it, or become roots). A write reads a folder's mark as its members and those of every folder beneath it.
CREATE FUNCTION "dvault_readable_tree_mark_galleries"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''gallery'', folderid FROM new_rows\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''gallery'', folderid FROM old_rows\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''gallery'', folderid FROM (
        (SELECT folderid, owner_userid, parent_folderid, name, removed_at IS NULL AS live FROM new_rows
         EXCEPT SELECT folderid, owner_userid, parent_folderid, name, removed_at IS NULL FROM old_rows)
        UNION ALL
        (SELECT folderid, owner_userid, parent_folderid, name, removed_at IS NULL FROM old_rows
         EXCEPT SELECT folderid, owner_userid, parent_folderid, name, removed_at IS NULL FROM new_rows)) x\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "gallery_folders_tree_marks_insert" AFTER INSERT ON "gallery_folders"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_galleries"();
CREATE TRIGGER "gallery_folders_tree_marks_update" AFTER UPDATE ON "gallery_folders"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_galleries"();
CREATE TRIGGER "gallery_folders_tree_marks_delete" AFTER DELETE ON "gallery_folders"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_galleries"();

-- collection_folders: a name, owner or removal changed, or a collection new or gone.
CREATE FUNCTION "dvault_readable_tree_mark_collections"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''collection'', folderid FROM new_rows\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT ''collection'', folderid FROM old_rows\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''collection'', folderid FROM (
        (SELECT folderid, owner_userid, name, removed_at IS NULL AS live FROM new_rows
         EXCEPT SELECT folderid, owner_userid, name, removed_at IS NULL FROM old_rows)
        UNION ALL
        (SELECT folderid, owner_userid, name, removed_at IS NULL FROM old_rows
         EXCEPT SELECT folderid, owner_userid, name, removed_at IS NULL FROM new_rows)) x\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "collection_folders_tree_marks_insert" AFTER INSERT ON "collection_folders"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_collections"();
CREATE TRIGGER "collection_folders_tree_marks_update" AFTER UPDATE ON "collection_folders"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_collections"();
CREATE TRIGGER "collection_folders_tree_marks_delete" AFTER DELETE ON "collection_folders"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_collections"();

-- folder_members: a work placed in a folder or collection, moved, or taken out.
CREATE FUNCTION "dvault_readable_tree_mark_members"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''INSERT'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT DISTINCT ''work'', deviationid FROM new_rows\073
  ELSIF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) SELECT DISTINCT ''work'', deviationid FROM old_rows\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key)
      SELECT DISTINCT ''work'', deviationid FROM (
        (SELECT kind, folderid, deviationid, removed_at IS NULL AS live FROM new_rows
         EXCEPT SELECT kind, folderid, deviationid, removed_at IS NULL FROM old_rows)
        UNION ALL
        (SELECT kind, folderid, deviationid, removed_at IS NULL FROM old_rows
         EXCEPT SELECT kind, folderid, deviationid, removed_at IS NULL FROM new_rows)) x\073
  END IF\073
  RETURN NULL\073
END';
CREATE TRIGGER "folder_members_tree_marks_insert" AFTER INSERT ON "folder_members"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_members"();
CREATE TRIGGER "folder_members_tree_marks_update" AFTER UPDATE ON "folder_members"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_members"();
CREATE TRIGGER "folder_members_tree_marks_delete" AFTER DELETE ON "folder_members"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_mark_members"();

-- TRUNCATE fires none of the above: it forgets the tree's sweep, so the next write rebuilds the tree, and leaves a
-- mark of its own, so a write under way when it ends (which writes the sweep back) is followed by one that rebuilds.
CREATE FUNCTION "dvault_readable_tree_truncated"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  DELETE FROM readable_tree_sweeps\073
  INSERT INTO readable_tree_marks (kind, key) VALUES (''truncate'', TG_TABLE_NAME)\073
  RETURN NULL\073
END';
CREATE TRIGGER "downloads_tree_marks_truncate" AFTER TRUNCATE ON "downloads"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
CREATE TRIGGER "deviations_tree_marks_truncate" AFTER TRUNCATE ON "deviations"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
CREATE TRIGGER "users_tree_marks_truncate" AFTER TRUNCATE ON "users"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
CREATE TRIGGER "gallery_folders_tree_marks_truncate" AFTER TRUNCATE ON "gallery_folders"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
CREATE TRIGGER "collection_folders_tree_marks_truncate" AFTER TRUNCATE ON "collection_folders"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
CREATE TRIGGER "folder_members_tree_marks_truncate" AFTER TRUNCATE ON "folder_members"
  FOR EACH STATEMENT EXECUTE FUNCTION "dvault_readable_tree_truncated"();
