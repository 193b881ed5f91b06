-- A note's thread (src/db/reading.repository.ts, NOTE_THREAD) is the account's notes whose subject, with "Re:" and
-- "Fwd:" taken off, is the note's: without an index each /notes/<id> worked that out for every note of the account
-- (100 000 notes: about half a second a page). The expression is NOTE_THREAD's, character for character.
--
-- ==== Hand-written: an expression index, which Prisma cannot express (prisma/schema/schema.prisma lists it) ====
CREATE INDEX "notes_thread_idx" ON "notes" ("account_id", (regexp_replace(lower(coalesce("subject", '')), '^\s*((re|fwd?)\s*:\s*)+', '')));
