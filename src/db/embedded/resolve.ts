// "embedded" resolved where a command loads its config: DATABASE_URL=embedded (only when set so: a configured
// server that does not answer stays an error, src/db/connect.ts) becomes the URL of the server dvault runs,
// attached for as long as the command runs (src/db/embedded/attach.ts).
import type { Config } from "../../config.ts";
import { migrate } from "../migrate.ts";
import { attachEmbedded, type EmbeddedAttachment } from "./attach.ts";

export type ResolvedDatabase = { config: Config; embedded: EmbeddedAttachment | undefined; release(): void };

/**
 * The config with a real DATABASE_URL. For "embedded": the server attached, and a `dvault` database this call
 * created migrated at once (it is dvault's own, on a server dvault made; `migrate: false` leaves that to the caller).
 */
export async function resolveDatabase(
  config: Config,
  { migrate: migrateNew = true, create = false }: { migrate?: boolean; create?: boolean } = {},
): Promise<ResolvedDatabase> {
  if (config.databaseUrl !== "embedded") return { config, embedded: undefined, release: () => undefined };
  // Only `dvault migrate`, `dvault restore` and the demo make a server in a data folder that holds none (src/db/embedded/ensure.ts).
  const embedded = await attachEmbedded(config, { create });
  try {
    if (embedded.databaseCreated && migrateNew) await migrate(embedded.url);
  } catch (err) {
    embedded.release();
    throw err;
  }
  return { config: Object.freeze({ ...config, databaseUrl: embedded.url }), embedded, release: () => embedded.release() };
}
