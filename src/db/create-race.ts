// Schemas made by whichever of several starting processes comes first (the coordination tables, BullMQ's queue
// tables on PostgreSQL alone). Each maker holds an advisory lock, yet one that first asked for the schema and was told
// "none" may still meet the schema another just made: a unique violation on pg_namespace (in a stress of 4 starters at
// once, 175 of 240 for the coordination tables). Its next try, in a new transaction, finds the schema made.

/** SQLSTATEs of an object made meanwhile by another session: unique_violation, duplicate_schema, duplicate_table. */
const MADE_MEANWHILE = new Set(["23505", "42P06", "42P07"]);

/** Runs `make` again (3 tries in all) while it fails because another session made the same objects meanwhile. */
export async function makeDespiteRace<T>(make: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await make();
    } catch (err) {
      if (attempt >= 3 || !MADE_MEANWHILE.has(String((err as { code?: unknown }).code))) throw err;
    }
  }
}
