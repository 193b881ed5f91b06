// The downloads' pause switch (src/downloads/disk-guard.ts sets it) as every reader finds it. Its key was
// `<prefix>:downloads:paused` until this version, which is also the name BullMQ gives the downloads queue's
// "paused" list under the same prefix: a job's state check (the producer's ensure) and obliterate read it as a
// list and failed (WRONGTYPE) while downloads were paused. The switch now has a key of its own; a switch an
// older version left under the old name is still read (and cleared) as long as that key holds a plain value.
import type { Coordinator } from "./coordinator.ts";

/** The switch: JSON {reason, since, cause, …} while paused. */
export function downloadsPausedKey(prefix: string): string {
  return `${prefix}:switch:downloads-paused`;
}

/** Where versions before this one kept it (BullMQ's paused-list name: read only while it holds a plain value). */
export function legacyDownloadsPausedKey(prefix: string): string {
  return `${prefix}:downloads:paused`;
}

/** The switch's value, under its key or an older version's; undefined when downloads are not paused. */
export async function readDownloadsPause(coord: Coordinator, prefix: string): Promise<string | undefined> {
  const current = await coord.get(downloadsPausedKey(prefix));
  if (current !== undefined) return current;
  const legacy = legacyDownloadsPausedKey(prefix);
  return (await coord.kindOf(legacy)) === "value" ? await coord.get(legacy) : undefined;
}

/** The switch as every reader takes it (status, the dashboard, the digest and its alerts). */
export type DownloadsPause = { paused: boolean; reason?: string; since?: Date; cause?: "disk" | "archive_link" | "storage" };

/** Values that say "not paused" (any case, spaces around). */
const OFF_VALUES = ["", "0", "false", "no"];

/**
 * The switch, read tolerantly: absent or an off value is not paused; JSON {reason, since | at, cause} as
 * src/downloads/disk-guard.ts writes it (`paused: false` turns it off); plain words are the reason; another kind of
 * key under its name (not dvault's writing) is paused without a reason.
 */
export async function readDownloadsPauseState(coord: Coordinator, prefix: string): Promise<DownloadsPause> {
  if ((await coord.kindOf(downloadsPausedKey(prefix))) === "other") return { paused: true };
  return parseDownloadsPause(await readDownloadsPause(coord, prefix));
}

function parseDownloadsPause(raw: string | undefined): DownloadsPause {
  const text = (raw ?? "").trim();
  if (OFF_VALUES.includes(text.toLowerCase())) return { paused: false };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { paused: true, reason: text };
  }
  if (!value || typeof value !== "object") return { paused: true };
  const v = value as { reason?: unknown; since?: unknown; at?: unknown; paused?: unknown; cause?: unknown };
  if (v.paused === false) return { paused: false };
  const since = typeof v.since === "string" ? v.since : typeof v.at === "string" ? v.at : undefined;
  return {
    paused: true,
    ...(typeof v.reason === "string" ? { reason: v.reason } : {}),
    ...(v.cause === "disk" || v.cause === "archive_link" || v.cause === "storage" ? { cause: v.cause } : {}),
    ...(since && !Number.isNaN(Date.parse(since)) ? { since: new Date(since) } : {}),
  };
}

/** Clears the switch (and an older version's, never BullMQ's list); how many keys held it. */
export async function clearDownloadsPause(coord: Coordinator, prefix: string): Promise<number> {
  const legacy = legacyDownloadsPausedKey(prefix);
  const old = (await coord.kindOf(legacy)) === "value" ? await coord.remove(legacy) : 0;
  return (await coord.remove(downloadsPausedKey(prefix))) + old;
}

/**
 * Moves an older version's switch to its own key, so that BullMQ can use its paused-list name again (obliterate
 * fails on a plain value there), keeping the switch: downloads stay paused. The current key wins if both are set.
 */
export async function settleLegacyDownloadsPause(coord: Coordinator, prefix: string): Promise<void> {
  const legacy = legacyDownloadsPausedKey(prefix);
  if ((await coord.kindOf(legacy)) !== "value") return;
  const value = await coord.get(legacy);
  if (value !== undefined && (await coord.get(downloadsPausedKey(prefix))) === undefined) await coord.put(downloadsPausedKey(prefix), value);
  await coord.remove(legacy);
}
