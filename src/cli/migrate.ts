// `dvault migrate`: creates the database when missing and applies pending migrations: the one command that creates
// a database (every other refuses a missing or unmigrated one: src/db/schema-check.ts).
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { migrate } from "../db/migrate.ts";
import { maskUrl } from "../redact.ts";
import { printOut } from "./output/print.ts";

export function registerMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("create the database if it does not exist and apply pending migrations")
    .action(async () => {
      // DATABASE_URL=embedded: the server dvault runs (started if it is not), its database migrated here.
      const { config, embedded, release } = await resolveDatabase(loadConfig(), { migrate: false, create: true });
      try {
        const result = await migrate(config.databaseUrl, { createDatabase: true });
        const target = `${maskUrl(config.databaseUrl)}${embedded ? " (the embedded server)" : ""}`;
        if (result.databaseCreated || embedded?.databaseCreated) printOut(`created database ${target}`);
        if (result.applied.length === 0) printOut(`nothing to apply: ${target} is up to date`);
        else printOut(`applied ${result.applied.length} migration(s) to ${target}: ${result.applied.join(", ")}`);
      } finally {
        release();
      }
    });
}
