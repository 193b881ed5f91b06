// The set-based page write of the mirror (docs/ARCHITECTURE.md#db): a page of rows goes in as one jsonb
// parameter, read back as the `input` relation; one INSERT ... ON CONFLICT writes them all; its RETURNING
// says which rows were new (xmax = 0); one counts row says what the page did. Each repository gives only
// the parts that are its own, as `sql` fragments: the recordset's columns, the CTEs that read the old rows
// (and write history, bump counters...), the INSERT itself, and what "changed" means for its table.
import { kysely, sql, type RawBuilder } from "./kysely.ts";
import { jsonParam, type UpsertCounts } from "./mirror-rows.ts";
import type { Queryable } from "./with-transaction.ts";

type Fragment = RawBuilder<unknown>;

/** `jsonb_to_recordset(<rows as one jsonb parameter>) AS x(<columns>)`: a page of rows as a relation. */
export function recordset(rows: readonly object[], columns: Fragment): Fragment {
  return sql`jsonb_to_recordset(${jsonParam(rows)}::jsonb) AS x(${columns})`;
}

/**
 * The ON CONFLICT assignments of a mirrored row seen again (`alias`: the target's alias): last seen at the later
 * of the two times, and no longer removed if it had been (docs/schema.md: a removed row stays, and is live again once seen).
 */
export function seenAgain(alias: string): Fragment {
  const t = sql.raw(alias);
  return sql`last_seen_at = GREATEST(${t}.last_seen_at, EXCLUDED.last_seen_at), removed_at = NULL, removed_reason = NULL`;
}

export type PageUpsert<Extra extends string> = {
  /** The page, one object per row (keys as the recordset's columns); read as `input`. */
  rows: readonly object[];
  /** The recordset's column definitions: sql`countryid integer, name text`. */
  columns: Fragment;
  /** CTEs between `input` and `upserted`, comma-separated: usually `old AS (...)`, and history rows. */
  before?: Fragment;
  /** The INSERT ... SELECT ... FROM input ... ON CONFLICT ... RETURNING <key>, (<alias>.xmax = 0) AS inserted. */
  upsert: Fragment;
  /** CTEs after `upserted`, comma-separated (writes to other tables that the page implies). */
  after?: Fragment;
  /** The key columns joining `upserted u`, `input i` and `old o` (USING); none: the counts read `upserted u` alone. */
  using: readonly string[];
  /** Among the updated rows (NOT u.inserted), those that changed meaningfully: a condition over u, i, o. */
  changed: Fragment;
  /** Further counts among the updated rows, each a condition (e.g. `removed`); they are not `unchanged` either. */
  also?: Record<Extra, Fragment>;
};

/**
 * Writes one page in one statement and counts what it did: inserted, changed, the further counts of
 * `also`, and unchanged (every other row of the page).
 */
export async function upsertPage<Extra extends string = never>(db: Queryable, page: PageUpsert<Extra>): Promise<UpsertCounts & Record<Extra, number>> {
  const also = Object.entries<Fragment>(page.also ?? ({} as Record<Extra, Fragment>));
  const keys = sql.join(page.using.map((k) => sql.ref(k)));
  const from = page.using.length === 0 ? sql`upserted u` : sql`upserted u JOIN input i USING (${keys}) LEFT JOIN old o USING (${keys})`;
  const counts = also.map(([name, condition]) => sql`, count(*) FILTER (WHERE NOT u.inserted AND (${condition}))::int AS ${sql.ref(name)}`);
  const { rows } = await sql<{ inserted: number; changed: number; total: number } & Record<string, number>>`
WITH input AS (
  SELECT * FROM ${recordset(page.rows, page.columns)}
)${page.before ? sql`, ${page.before}` : sql``}, upserted AS (
  ${page.upsert}
)${page.after ? sql`, ${page.after}` : sql``}
SELECT
  count(*) FILTER (WHERE u.inserted)::int AS inserted,
  count(*) FILTER (WHERE NOT u.inserted AND (${page.changed}))::int AS changed${sql.join(counts, sql``)},
  count(*)::int AS total
FROM ${from}`.execute(kysely(db));
  const row = rows[0];
  const inserted = row?.inserted ?? 0;
  const changed = row?.changed ?? 0;
  let unchanged = (row?.total ?? 0) - inserted - changed;
  const extra: Record<string, number> = {};
  for (const [name] of also) {
    extra[name] = row?.[name] ?? 0;
    unchanged -= extra[name];
  }
  return { inserted, changed, unchanged, ...extra } as UpsertCounts & Record<Extra, number>;
}
