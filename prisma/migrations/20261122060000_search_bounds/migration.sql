-- Search documents of bounded size (the fault suite's hostile data). A tsvector holds at most 1 MiB, and
-- to_tsvector raises an error past that: one deviation with a 1 MiB description of distinct words failed
-- its whole metadata page, so the gallery source could never finish. Each part of a document is now
-- indexed from its first 100 000 characters. The mirror still stores every text whole: only what search
-- finds is bounded (words after that point in a longer text are not found).
--
-- Rules for this file: the migration engine splits the script on every semicolon, even inside comments,
-- string literals and dollar-quoted bodies. So no semicolon appears anywhere below.

-- The tsvector of the first 100 000 characters of a text, with the search configuration (english).
-- Immutable (the two-argument to_tsvector with a fixed configuration is), so generated columns may use it.
CREATE FUNCTION "dvault_search_tsv"(p_text text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_tsvector('english'::regconfig, left(coalesce(p_text, ''), 100000)) $$;

CREATE OR REPLACE FUNCTION "dvault_deviation_document"(p_deviationid text, p_title text) RETURNS tsvector
  LANGUAGE sql STABLE PARALLEL SAFE
  SET search_path FROM CURRENT
  AS $$
    SELECT setweight(dvault_search_tsv(p_title), 'A')
      || coalesce((SELECT setweight(dvault_search_tsv(array_to_string(m.tags, ' ')), 'B')
                       || setweight(dvault_search_tsv(m.description), 'C')
                   FROM deviation_metadata m WHERE m.deviationid = p_deviationid), ''::tsvector)
      || coalesce((SELECT setweight(dvault_search_tsv(coalesce(t.html, t.excerpt)), 'D')
                   FROM deviation_texts t WHERE t.deviationid = p_deviationid), ''::tsvector)
  $$;

-- Comments, notes and messages: the generated columns again, over the bounded function.
DROP INDEX "comments_search_idx";
DROP INDEX "notes_search_idx";
DROP INDEX "messages_search_idx";
ALTER TABLE "comments" DROP COLUMN "search_tsv";
ALTER TABLE "notes" DROP COLUMN "search_tsv";
ALTER TABLE "messages" DROP COLUMN "search_tsv";
ALTER TABLE "comments" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (dvault_search_tsv("body")) STORED;
ALTER TABLE "notes" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (
    setweight(dvault_search_tsv("subject"), 'A') || setweight(dvault_search_tsv(coalesce("body", "preview")), 'D')
  ) STORED;
ALTER TABLE "messages" ADD COLUMN "search_tsv" tsvector
  GENERATED ALWAYS AS (dvault_search_tsv("html")) STORED;
CREATE INDEX "comments_search_idx" ON "comments" USING GIN ("search_tsv");
CREATE INDEX "notes_search_idx" ON "notes" USING GIN ("search_tsv");
CREATE INDEX "messages_search_idx" ON "messages" USING GIN ("search_tsv");
