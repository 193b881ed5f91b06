-- The notifications Atom feed (src/db/archive-feed.repository.ts, newestNotifications) takes the newest messages and
-- notes by first_seen_at: each kind is now read from its own index, newest first, instead of the union of both
-- being read and sorted whole (half a second at 200 000 messages, bench/archive-scale.ts).

-- CreateIndex
CREATE INDEX "messages_first_seen_idx" ON "messages"("first_seen_at" DESC, "messageid" DESC);

-- CreateIndex
CREATE INDEX "notes_first_seen_idx" ON "notes"("first_seen_at" DESC, "noteid" DESC);
