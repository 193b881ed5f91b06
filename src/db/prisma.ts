// The Prisma client factory: the generated client over the pg driver adapter (no native engine).
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "../generated/prisma/client.ts";
import { pgFields } from "./pg-fields.ts";
import { storableDeep, StorableTextClient } from "./storable-text.ts";

export type Db = ReturnType<typeof createPrisma>;

/**
 * Text in every argument is made storable (docs/schema.md#text-from-the-service) before Prisma's engine
 * reads it, which refuses a lone surrogate; the adapter's pool has createPgPool's client class as well.
 */
export function createPrisma(databaseUrl: string, poolSize = 5) {
  const client = new PrismaClient({ adapter: new PrismaPg({ ...pgFields(databaseUrl), max: poolSize, Client: StorableTextClient }) });
  return client.$extends({ query: { $allOperations: ({ args, query }) => query(storableDeep(args)) } });
}
