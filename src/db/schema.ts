// The one description of dvault's tables that queries are typed against (docs/ARCHITECTURE.md#db): Kysely's
// table types generated from prisma/schema/ (prisma-kysely, src/generated/kysely, made by
// scripts/prisma-generate.js at install) plus what the generator leaves out, Prisma's Unsupported columns:
// the full-text documents. Those are written by PostgreSQL alone (generated columns, and triggers for
// deviations: prisma/migrations/20261122040000_search), so a query may read them but never write them.
import type { ColumnType, Insertable, Selectable, Updateable } from "kysely";
import type { DB as Generated } from "../generated/kysely/types.ts";

/** A tsvector column: read as its text form, never written by dvault. */
type SearchDocument = ColumnType<string | null, never, never>;

type WithSearch<T> = T & { search_tsv: SearchDocument };

export type DB = Omit<Generated, "comments" | "deviations" | "messages" | "notes"> & {
  comments: WithSearch<Generated["comments"]>;
  deviations: WithSearch<Generated["deviations"]>;
  messages: WithSearch<Generated["messages"]>;
  notes: WithSearch<Generated["notes"]>;
};

export type Table = keyof DB;
/** A row of `T` as a SELECT returns it. */
export type Row<T extends Table> = Selectable<DB[T]>;
export type NewRow<T extends Table> = Insertable<DB[T]>;
export type RowUpdate<T extends Table> = Updateable<DB[T]>;

/** snake_case to camelCase, as Kysely's CamelCasePlugin renames (`token_sha256`: `tokenSha256`). */
export type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
export type CamelKeys<T> = { [K in keyof T & string as Camel<K>]: T[K] };
/** A row of `T` as a SELECT returns it through kyselyCamel (src/db/kysely.ts). */
export type CamelRow<T extends Table> = Selectable<CamelKeys<DB[T]>>;

export * from "../generated/kysely/types.ts";
