-- `dvault status` and the dashboard's overview count the downloads per status and the archive's distinct stored
-- files (src/db/status.repository.ts): at a million works each was a sort or a scan of the whole table (2.8 s and
-- 0.36 s on a busy machine, bench/archive-scale.ts). These indexes hold what the two statements read, so each is an
-- index-only scan in the order it groups by. They are still read whole: exact totals of a table are counted, not
-- kept (see docs/PERFORMANCE.md#a-million-works).
--
-- ==== Hand-written: a covering index and a partial one, which Prisma cannot express (prisma/schema/schema.prisma lists them) ====
CREATE INDEX "downloads_status_size_idx" ON "downloads" ("status") INCLUDE ("size");
CREATE INDEX "downloads_stored_path_idx" ON "downloads" ("path") INCLUDE ("size")
  WHERE "status" IN ('done', 'degraded', 'not_downloadable') AND "path" IS NOT NULL;
