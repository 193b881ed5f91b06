-- A status the watch feed carried but the statuses table lacks is read from its feed item by statusid
-- (src/db/reading.repository.ts, STATUS_IN_FEED): once for each such status on a /watch page and on its /statuses
-- page. Without an index each was a scan of the whole feed (200 000 items: about 40 ms each, 0.8 s for a page).

-- CreateIndex
CREATE INDEX "feed_items_statusid_idx" ON "feed_items"("statusid");
