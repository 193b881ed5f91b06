// The Prisma client factory: the generated client over the pg driver adapter (no native engine).
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "../generated/prisma/client.ts";
import { pgFields } from "./pg-fields.ts";

export type Db = PrismaClient;

export function createPrisma(databaseUrl: string, poolSize = 5): Db {
  return new PrismaClient({ adapter: new PrismaPg({ ...pgFields(databaseUrl), max: poolSize }) });
}
