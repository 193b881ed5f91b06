-- Full-text search (issue 8), hand-written: Prisma cannot express tsvector columns, generated columns or triggers.
-- Every search column is maintained by the database itself, so no code path can forget to update it.
--
-- One text search configuration everywhere (english: stemming, stop words), because a tsquery only matches
-- a tsvector built with the same configuration. src/search/search.ts uses the same name.
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears in a comment or literal, and the
-- PL/pgSQL bodies below are E-strings that write each statement terminator as the octal escape \073.

-- ==== Deviations: one document over three tables ==================================================
-- Title (weight A), tags (B), description (C), journal or literature text (D). The document spans
-- deviations, deviation_metadata and deviation_texts, so it is kept in deviations.search_tsv by triggers.
ALTER TABLE "deviations" ADD COLUMN "search_tsv" tsvector;

-- The document of one deviation from whatever the mirror holds for it. Tags are words, not phrases.
CREATE FUNCTION "dvault_deviation_document"(p_deviationid text, p_title text) RETURNS tsvector
  LANGUAGE sql STABLE PARALLEL SAFE
  SET search_path FROM CURRENT
  AS $$
    SELECT setweight(to_tsvector('english', coalesce(p_title, '')), 'A')
      || coalesce((SELECT setweight(to_tsvector('english', array_to_string(m.tags, ' ')), 'B')
                       || setweight(to_tsvector('english', coalesce(m.description, '')), 'C')
                   FROM deviation_metadata m WHERE m.deviationid = p_deviationid), ''::tsvector)
      || coalesce((SELECT setweight(to_tsvector('english', coalesce(t.html, t.excerpt, '')), 'D')
                   FROM deviation_texts t WHERE t.deviationid = p_deviationid), ''::tsvector)
  $$;

-- On insert and on a title change. The insert case also looks the other tables up: a data-only restore
-- may load deviation_metadata before deviations.
CREATE FUNCTION "dvault_deviations_search_trigger"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  NEW.search_tsv := dvault_deviation_document(NEW.deviationid, NEW.title)\073
  RETURN NEW\073
END';

-- On a change of the metadata or text of a deviation: rebuild the document on its row.
CREATE FUNCTION "dvault_deviation_parts_search_trigger"() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
  AS E'
BEGIN
  UPDATE deviations SET search_tsv = dvault_deviation_document(deviationid, title)
  WHERE deviationid = NEW.deviationid\073
  RETURN NULL\073
END';

-- BEFORE INSERT fires for every row an upsert proposes, conflicting or not. Updates fire only on a real
-- change of the indexed text, so the sync's re-upserts of unchanged pages cost nothing.
CREATE TRIGGER "deviations_search_insert" BEFORE INSERT ON "deviations"
  FOR EACH ROW EXECUTE FUNCTION "dvault_deviations_search_trigger"();
CREATE TRIGGER "deviations_search_update" BEFORE UPDATE ON "deviations"
  FOR EACH ROW WHEN (OLD."title" IS DISTINCT FROM NEW."title")
  EXECUTE FUNCTION "dvault_deviations_search_trigger"();
CREATE TRIGGER "deviation_metadata_search_insert" AFTER INSERT ON "deviation_metadata"
  FOR EACH ROW EXECUTE FUNCTION "dvault_deviation_parts_search_trigger"();
CREATE TRIGGER "deviation_metadata_search_update" AFTER UPDATE ON "deviation_metadata"
  FOR EACH ROW WHEN (OLD."tags" IS DISTINCT FROM NEW."tags" OR OLD."description" IS DISTINCT FROM NEW."description")
  EXECUTE FUNCTION "dvault_deviation_parts_search_trigger"();
CREATE TRIGGER "deviation_texts_search_insert" AFTER INSERT ON "deviation_texts"
  FOR EACH ROW EXECUTE FUNCTION "dvault_deviation_parts_search_trigger"();
CREATE TRIGGER "deviation_texts_search_update" AFTER UPDATE ON "deviation_texts"
  FOR EACH ROW WHEN (OLD."html" IS DISTINCT FROM NEW."html" OR OLD."excerpt" IS DISTINCT FROM NEW."excerpt")
  EXECUTE FUNCTION "dvault_deviation_parts_search_trigger"();

-- What the mirror already holds.
UPDATE "deviations" SET "search_tsv" = dvault_deviation_document("deviationid", "title");

CREATE INDEX "deviations_search_idx" ON "deviations" USING GIN ("search_tsv");

-- ==== Comments, notes, messages: one table each, so generated columns =============================
-- HTML needs no stripping here: the parser reads tags and entities as tokens the configuration ignores.
ALTER TABLE "comments" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (to_tsvector('english', coalesce("body", ''))) STORED;
ALTER TABLE "notes" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce("subject", '')), 'A')
    || setweight(to_tsvector('english', coalesce("body", "preview", '')), 'D')
  ) STORED;
ALTER TABLE "messages" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (to_tsvector('english', coalesce("html", ''))) STORED;

CREATE INDEX "comments_search_idx" ON "comments" USING GIN ("search_tsv");
CREATE INDEX "notes_search_idx" ON "notes" USING GIN ("search_tsv");
CREATE INDEX "messages_search_idx" ON "messages" USING GIN ("search_tsv");
