// "Sync now" (the dashboard's button, and a connected account's first sync): one sync.source job for every source of every account that can sync,
// through the Producer, so the definition's dedupe key folds it into a run already waiting.
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import type { Producer } from "../queue/producer.ts";
import type { Services } from "../services.ts";
import type { SourceDefinition, SourceName } from "./source.ts";

export async function enqueueSyncNow({
  services,
  producer,
  sources,
  accountId,
}: {
  services: Pick<Services, "pool" | "accounts">;
  producer: Producer;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  /** Only this account (the dashboard's Connect starts a new account's first sync); default every account. */
  accountId?: number | undefined;
}): Promise<number> {
  const tracked = new TrackedUserRepository(services.pool);
  let queued = 0;
  for (const row of await services.accounts.list()) {
    if (row.kind !== "user" || row.state === "needs_reauth" || row.state === "revoked") continue;
    if (accountId !== undefined && row.id !== accountId) continue;
    for (const source of sources.values()) {
      const keys = source.name === "tracked" ? (await tracked.listTrackedUsers(row.id)).map((t) => t.username) : [""];
      for (const key of keys) {
        await producer.enqueue("sync.source", { accountId: row.id, source: source.name, key });
        queued++;
      }
    }
  }
  return queued;
}

/** The tracked source's runs of these users (the dashboard's "Track an artist"): one sync.source job each, deduped as "Sync now"'s. */
export async function enqueueTrackedSync({
  producer,
  accountId,
  usernames,
}: {
  producer: Producer;
  accountId: number;
  usernames: readonly string[];
}): Promise<number> {
  for (const key of usernames) await producer.enqueue("sync.source", { accountId, source: "tracked", key });
  return usernames.length;
}
