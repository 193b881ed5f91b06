// The SQL the demo's report suggests a person run with psql against the demo's database (src/cli/demo.ts prints it).
// Built with the typed builder, so a renamed table or column fails the type check here rather than in a newcomer's
// terminal; compiled for psql: names bare (every one here is plain lower case) and values written in, since the
// text is printed inside a shell's double quotes.
import { type Compilable, DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from "kysely";
import { sql } from "./kysely.ts";
import type { DB } from "./schema.ts";

class PsqlCompiler extends PostgresQueryCompiler {
  protected override getLeftIdentifierWrapper(): string {
    return "";
  }
  protected override getRightIdentifierWrapper(): string {
    return "";
  }
}

const psql = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PsqlCompiler(),
  },
});

/** The statement as a person types it: refused if a value would need a parameter psql -c cannot give. */
function text(query: Compilable): string {
  const { sql: statement, parameters } = query.compile();
  if (parameters.length > 0) throw new Error(`a demo query binds ${parameters.length} value(s): write them with sql.lit`);
  return statement;
}

const count = sql<number>`count(*)`;

/** Three questions people ask their archive, as SQL that runs against the demo's database. */
export const DEMO_QUERIES: Array<{ what: string; sql: string }> = [
  {
    what: "whose work fills my favourites",
    sql: text(
      psql
        .selectFrom("folder_members as fm")
        .innerJoin("deviations as d", "d.deviationid", "fm.deviationid")
        .innerJoin("users as u", "u.userid", "d.author_userid")
        // A favourite sits in Featured and in any folder it was faved into: each counts once.
        .select(["u.username", sql<number>`count(DISTINCT d.deviationid)`.as("faves")])
        .where("fm.kind", "=", sql.lit("collection"))
        .where("fm.removed_at", "is", null)
        .groupBy("u.username")
        .orderBy("faves", "desc")
        .limit(sql.lit(5)),
    ),
  },
  {
    what: "unread notes, newest first",
    sql: text(
      psql
        .selectFrom("notes as n")
        .leftJoin("users as u", "u.userid", "n.sender_userid")
        .select((eb) => [eb.cast("n.ts", "date").as("day"), "u.username as sender", "n.subject"])
        .where("n.unread", "is", sql.lit(true))
        .orderBy("n.ts", "desc")
        .limit(sql.lit(5)),
    ),
  },
  {
    what: "what is on disk, and in what form",
    sql: text(
      psql
        .selectFrom("downloads as dl")
        .select((eb) => ["dl.status", "dl.kind", count.as("files"), eb.fn("pg_size_pretty", [eb.fn.sum("dl.size")]).as("size")])
        .groupBy(["dl.status", "dl.kind"])
        .orderBy("files", "desc"),
    ),
  },
];
