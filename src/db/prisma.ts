// The Prisma client factory: the generated client over the pg driver adapter (no native engine).
import { PrismaPg } from "@prisma/adapter-pg";
import type pg from "pg";
import { PrismaClient } from "../generated/prisma/client.ts";
import { pgFields } from "./pg-fields.ts";
import { storableDeep, StorableTextClient } from "./storable-text.ts";

export type Db = ReturnType<typeof createPrisma>;

/**
 * Text in every argument is made storable (docs/schema.md#text-from-the-service) before Prisma's engine
 * reads it, which refuses a lone surrogate; the adapter's pool has createPgPool's client class as well.
 * Given the process's pool (createPgPool), Prisma runs on it, so Prisma's statements and the raw ones
 * share connections and a transaction can hold both; the pool's owner ends it (the adapter leaves an
 * external pool open). Given a URL, the adapter opens a pool of its own of `poolSize` connections.
 */
export function createPrisma(source: string | pg.Pool, poolSize = 5) {
  const adapter = typeof source === "string" ? new PrismaPg({ ...pgFields(source), max: poolSize, Client: StorableTextClient }) : new PrismaPg(source);
  const client = new PrismaClient({ adapter });
  return client.$extends({ query: { $allOperations: ({ args, query }) => query(storableDeep(args)) } });
}
