-- The reading pages' lists in their order as indexes (issue 28, src/db/reading.repository.ts): messages, notes and
-- the watch feed newest first, the undated last, then by id. A page is read along the index after its cursor, so a
-- deep page reads its own rows instead of sorting the whole table.
--
-- ==== Hand-written: expression indexes, which Prisma cannot express (prisma/schema/schema.prisma lists them) ====
CREATE INDEX "messages_reading_idx" ON "messages" ((coalesce("ts", '-infinity'::timestamptz)) DESC, "messageid" DESC);
CREATE INDEX "notes_reading_idx" ON "notes" ((coalesce("ts", '-infinity'::timestamptz)) DESC, "noteid" DESC);
CREATE INDEX "feed_items_reading_idx" ON "feed_items" ((coalesce("ts", '-infinity'::timestamptz)) DESC, "itemid" DESC);
