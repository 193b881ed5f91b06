// Static data of the service: the country list and the policy texts (every distinct version kept).
import { createHash } from "node:crypto";
import { kysely, sql } from "./kysely.ts";
import { intOrNull, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type CountryInput = { countryid: number | string; name: string };
export type PolicyKind = "privacy" | "submission" | "tos";

export class StaticDataRepository {
  constructor(private readonly db: Queryable) {}

  /** Records /data/countries. `changed` counts renamed countries. */
  async saveCountries(countries: readonly CountryInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(
      countries.flatMap((c) => {
        const countryid = intOrNull(c.countryid);
        return countryid === null ? [] : [{ countryid, name: c.name }];
      }),
      (c) => String(c.countryid),
    );
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`countryid integer, name text`,
      before: sql`old AS (SELECT c.countryid, c.name FROM countries c JOIN input USING (countryid))`,
      upsert: sql`
        INSERT INTO countries AS c (countryid, name, first_seen_at, last_seen_at)
        SELECT countryid, name, ${seenAt}, ${seenAt} FROM input ORDER BY countryid
        ON CONFLICT (countryid) DO UPDATE SET
          name = EXCLUDED.name,
          last_seen_at = GREATEST(c.last_seen_at, EXCLUDED.last_seen_at)
        RETURNING c.countryid, (c.xmax = 0) AS inserted`,
      using: ["countryid"],
      changed: sql`o.name IS DISTINCT FROM i.name`,
    });
  }

  /** Records a policy text; true when it differs from every version archived before. */
  async savePolicyText(kind: PolicyKind, text: string, fetchedAt: Date): Promise<boolean> {
    const sha256 = createHash("sha256").update(text).digest("hex");
    const row = await kysely(this.db)
      .insertInto("policy_texts")
      .values({ kind, sha256, text, first_seen_at: fetchedAt, fetched_at: fetchedAt })
      .onConflict((oc) => oc.columns(["kind", "sha256"]).doUpdateSet({ fetched_at: sql`GREATEST(policy_texts.fetched_at, EXCLUDED.fetched_at)` }))
      .returning(sql<boolean>`(policy_texts.xmax = 0)`.as("inserted"))
      .executeTakeFirst();
    return row?.inserted ?? false;
  }
}
