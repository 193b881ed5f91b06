// Listing keys by pattern (SCAN, never KEYS) on a single Redis or a Redis Cluster, where SCAN sees one node's
// keys only (src/queue/redis.ts makes the cluster client).
import { Cluster, type Redis } from "ioredis";

/** Every key matching `pattern`; on a cluster each master is scanned in turn. */
export async function scanKeys(redis: Redis, pattern: string, count = 500): Promise<string[]> {
  const nodes = redis instanceof Cluster ? (redis as Cluster).nodes("master") : [redis];
  const keys: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, batch] = await node.scan(cursor, "MATCH", pattern, "COUNT", count);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== "0");
  }
  return [...new Set(keys)];
}

/** `text` matched literally by SCAN's MATCH (a prefix set by hand may hold * ? [ ] or \). */
export function globEscaped(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
