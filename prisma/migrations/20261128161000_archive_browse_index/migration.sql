-- The archive browser's order as an index (issue 27, row 4): newest published first, the undated last, then by
-- id (src/db/archive-browser.repository.ts, BROWSE_KEY). A page is read along it, after a cursor or past an
-- offset, without sorting the whole table: at 200 000 works a deep page sorted every row, and 200 of them at
-- once held the pool's connections past its timeout. published_at rides along (INCLUDE) so the month counts
-- and the walk to a deep page read the index alone.
--
-- ==== Hand-written: an expression index, which Prisma cannot express (prisma/schema/schema.prisma lists it) ====
CREATE INDEX "deviations_browse_idx" ON "deviations" ((coalesce("published_at", '-infinity'::timestamptz)) DESC, "deviationid") INCLUDE ("published_at");
