// The reading lists' keyset cursor in a link (`after=`): the sort key and id of the last row of a page
// (src/db/reading.repository.ts), so the next page is read from there, never past an offset, and the same address
// always shows the same rows (Back and reload return to the same place). Opaque to people (base64url of JSON); one
// that does not read back is a 400, said in one line.
import type { ListCursor } from "../db/reading.repository.ts";

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A cursor's time as dvault writes it (toISOString of a real instant, year 1 or later), or "-infinity" (an undated
 * row of a list newest first) or "infinity" (of the comments, oldest first): a forged 2024-13-45T25:61:61 or
 * 0000-01-01 would otherwise reach PostgreSQL, which refuses it (a 500).
 */
export function isCursorTime(key: string): boolean {
  if (key === "-infinity" || key === "infinity") return true;
  if (!TIME.test(key) || key.startsWith("0000")) return false;
  const at = new Date(key);
  return !Number.isNaN(at.getTime()) && at.toISOString() === key;
}

export function encodeListCursor(c: ListCursor): string {
  return Buffer.from(JSON.stringify([c.key, c.id])).toString("base64url");
}

/** The cursor of `value`; `timeKey` when the list is ordered by a time (else any short text, e.g. a lower-cased name). */
export function decodeListCursor(value: string | undefined, timeKey = true): ListCursor | "bad" | undefined {
  if (value === undefined) return undefined;
  if (value.length > 600) return "bad";
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
    if (!Array.isArray(parsed) || parsed.length !== 2) return "bad";
    const [key, id] = parsed as unknown[];
    if (typeof key !== "string" || typeof id !== "string" || id === "" || id.length > 200 || key.length > 200) return "bad";
    if (timeKey && !isCursorTime(key)) return "bad";
    return { key, id };
  } catch {
    return "bad";
  }
}

/** A page of `limit` rows out of the `limit + 1` read, and the cursor after its last row when more follow. */
export function pageOf<T extends { key: string }>(rows: T[], limit: number, idOf: (row: T) => string): { rows: T[]; next: string | undefined } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { rows: shown, next: rows.length > limit && last ? encodeListCursor({ key: last.key, id: idOf(last) }) : undefined };
}
