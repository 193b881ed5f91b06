-- The readable tree at a million works (issue 32, docs/PERFORMANCE.md#readable-tree): a write of the local tree
-- compared the fingerprint of every stored file's placements with the record (migration
-- 20261129144730_readable_tree_manifest), 16 to 18 s of PostgreSQL a run at a million works with nothing changed.
-- Triggers on the tables the links are made from now note what may have changed (readable_tree_marks), and a write
-- compares only the files those marks reach (src/db/readable-tree.repository.ts). Appends only: a mark never waits on
-- another writer's, so no writer of the mirror waits or deadlocks on them. Row triggers whose WHEN compares the
-- columns the links read: a sync that rewrites rows unchanged (every re-sync) calls no function at all, where a
-- statement trigger ran at every statement, an upsert's included. A TRUNCATE of one of these tables
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

-- A work's mark (downloads, deviations, folder_members): its deviationid, the old one too when it changed.
CREATE FUNCTION "dvault_readable_tree_mark_work"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) VALUES (''work'', OLD.deviationid)\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key) VALUES (''work'', NEW.deviationid)\073
    IF TG_OP = ''UPDATE'' THEN
      IF OLD.deviationid IS DISTINCT FROM NEW.deviationid THEN
        INSERT INTO readable_tree_marks (kind, key) VALUES (''work'', OLD.deviationid)\073
      END IF\073
    END IF\073
  END IF\073
  RETURN NULL\073
END';

-- A user's mark: their works and the members of their folders and collections.
CREATE FUNCTION "dvault_readable_tree_mark_user"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) VALUES (''user'', OLD.userid)\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key) VALUES (''user'', NEW.userid)\073
    IF TG_OP = ''UPDATE'' THEN
      IF OLD.userid IS DISTINCT FROM NEW.userid THEN
        INSERT INTO readable_tree_marks (kind, key) VALUES (''user'', OLD.userid)\073
      END IF\073
    END IF\073
  END IF\073
  RETURN NULL\073
END';

-- A folder's mark, of the kind its trigger names ('gallery': the folder and every folder beneath it, 'collection').
CREATE FUNCTION "dvault_readable_tree_mark_folder"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  IF TG_OP = ''DELETE'' THEN
    INSERT INTO readable_tree_marks (kind, key) VALUES (TG_ARGV[0], OLD.folderid)\073
  ELSE
    INSERT INTO readable_tree_marks (kind, key) VALUES (TG_ARGV[0], NEW.folderid)\073
    IF TG_OP = ''UPDATE'' THEN
      IF OLD.folderid IS DISTINCT FROM NEW.folderid THEN
        INSERT INTO readable_tree_marks (kind, key) VALUES (TG_ARGV[0], OLD.folderid)\073
      END IF\073
    END IF\073
  END IF\073
  RETURN NULL\073
END';

-- downloads: a file stored, moved, no longer stored, or another file standing for its work (the columns the
-- placements read, of a row that was or is a stored file).
CREATE TRIGGER "downloads_tree_marks_insert" AFTER INSERT ON "downloads" FOR EACH ROW
  WHEN (NEW.status IN ('done', 'degraded', 'not_downloadable'))
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();
CREATE TRIGGER "downloads_tree_marks_update" AFTER UPDATE ON "downloads" FOR EACH ROW
  WHEN ((OLD.status IN ('done', 'degraded', 'not_downloadable') OR NEW.status IN ('done', 'degraded', 'not_downloadable'))
    AND (OLD.id, OLD.deviationid, OLD.kind, OLD.status, OLD.path, OLD.done_at)
      IS DISTINCT FROM (NEW.id, NEW.deviationid, NEW.kind, NEW.status, NEW.path, NEW.done_at))
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();
CREATE TRIGGER "downloads_tree_marks_delete" AFTER DELETE ON "downloads" FOR EACH ROW
  WHEN (OLD.status IN ('done', 'degraded', 'not_downloadable'))
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();

-- deviations: a title, type or author changed, or a work gone. A new work has no stored file yet (downloads refers to it).
CREATE TRIGGER "deviations_tree_marks_update" AFTER UPDATE ON "deviations" FOR EACH ROW
  WHEN ((OLD.deviationid, OLD.title, OLD.type, OLD.author_userid) IS DISTINCT FROM (NEW.deviationid, NEW.title, NEW.type, NEW.author_userid))
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();
CREATE TRIGGER "deviations_tree_marks_delete" AFTER DELETE ON "deviations" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();

-- users: a username (the artist's and the folder owner's name in the paths), a user row new or gone (the paths show
-- the userid without one).
CREATE TRIGGER "users_tree_marks_insert" AFTER INSERT ON "users" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_user"();
CREATE TRIGGER "users_tree_marks_update" AFTER UPDATE ON "users" FOR EACH ROW
  WHEN ((OLD.userid, OLD.username) IS DISTINCT FROM (NEW.userid, NEW.username))
  EXECUTE FUNCTION "dvault_readable_tree_mark_user"();
CREATE TRIGGER "users_tree_marks_delete" AFTER DELETE ON "users" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_user"();

-- gallery_folders: a name, parent, owner or removal changed, or a folder new or gone (its children's paths begin at
-- it, or become roots).
CREATE TRIGGER "gallery_folders_tree_marks_insert" AFTER INSERT ON "gallery_folders" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('gallery');
CREATE TRIGGER "gallery_folders_tree_marks_update" AFTER UPDATE ON "gallery_folders" FOR EACH ROW
  WHEN ((OLD.folderid, OLD.owner_userid, OLD.parent_folderid, OLD.name, OLD.removed_at IS NULL)
    IS DISTINCT FROM (NEW.folderid, NEW.owner_userid, NEW.parent_folderid, NEW.name, NEW.removed_at IS NULL))
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('gallery');
CREATE TRIGGER "gallery_folders_tree_marks_delete" AFTER DELETE ON "gallery_folders" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('gallery');

-- collection_folders: a name, owner or removal changed, or a collection new or gone.
CREATE TRIGGER "collection_folders_tree_marks_insert" AFTER INSERT ON "collection_folders" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('collection');
CREATE TRIGGER "collection_folders_tree_marks_update" AFTER UPDATE ON "collection_folders" FOR EACH ROW
  WHEN ((OLD.folderid, OLD.owner_userid, OLD.name, OLD.removed_at IS NULL)
    IS DISTINCT FROM (NEW.folderid, NEW.owner_userid, NEW.name, NEW.removed_at IS NULL))
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('collection');
CREATE TRIGGER "collection_folders_tree_marks_delete" AFTER DELETE ON "collection_folders" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_folder"('collection');

-- folder_members: a work placed in a folder or collection, moved, or taken out.
CREATE TRIGGER "folder_members_tree_marks_insert" AFTER INSERT ON "folder_members" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();
CREATE TRIGGER "folder_members_tree_marks_update" AFTER UPDATE ON "folder_members" FOR EACH ROW
  WHEN ((OLD.kind, OLD.folderid, OLD.deviationid, OLD.removed_at IS NULL)
    IS DISTINCT FROM (NEW.kind, NEW.folderid, NEW.deviationid, NEW.removed_at IS NULL))
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();
CREATE TRIGGER "folder_members_tree_marks_delete" AFTER DELETE ON "folder_members" FOR EACH ROW
  EXECUTE FUNCTION "dvault_readable_tree_mark_work"();

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
