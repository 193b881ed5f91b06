// Prisma CLI configuration: binary-free (WASM schema engine through the pg driver adapter), see README.
import { defineConfig } from "prisma/config";
import { PrismaPg } from "@prisma/adapter-pg";
import { DEFAULT_DATABASE_URL } from "./src/config-defaults.ts";
import { pgFields } from "./src/db/pg-fields.ts";

// The Prisma CLI reads DATABASE_URL itself; fall back to the app's default so every command agrees.
const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
process.env.DATABASE_URL = url;

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  // The multi-file schema, one file per area (prisma/schema/schema.prisma has the generator and the notes);
  // the migrations stay where they were, beside the folder rather than inside it.
  schema: "prisma/schema",
  migrations: { path: "prisma/migrations" },
  // allowExitOnIdle: the CLI never closes the pool, which would otherwise hold the process for 10 s.
  adapter: async () => new PrismaPg({ ...pgFields(url), allowExitOnIdle: true, idleTimeoutMillis: 200 }),
});
