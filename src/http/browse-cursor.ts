// The archive browser's keyset cursor in a link (`after=` the next page, `before=` the previous): the place of
// an item in the browser's order (src/db/archive-browser.repository.ts), so a page is read from there instead
// of past an offset, at any depth, and a link or a reload returns to the same tiles. It carries the item's
// position in the filtered listing too (1 = the newest), so the page's "49–96 of N" and the tiles' positions
// need no count of what comes before. Opaque to people (base64url of JSON); one that does not read back is
// ignored (the first page is shown).
import type { BrowseCursor } from "../db/archive-browser.repository.ts";
import { isCursorTime } from "./reading-cursor.ts";

/** A cursor and the position of its item in the listing (0 when unknown). */
export type PlacedCursor = BrowseCursor & { pos: number };

export function encodeCursor(c: BrowseCursor, pos = 0): string {
  return Buffer.from(JSON.stringify([c.key, c.deviationid, pos])).toString("base64url");
}

export function decodeCursor(value: string | undefined): PlacedCursor | undefined {
  if (!value || value.length > 400) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
    if (!Array.isArray(parsed) || parsed.length < 2 || parsed.length > 3) return undefined;
    const [key, deviationid, pos = 0] = parsed as unknown[];
    if (typeof key !== "string" || typeof deviationid !== "string" || deviationid === "" || deviationid.length > 200) return undefined;
    if (!isCursorTime(key)) return undefined;
    if (typeof pos !== "number" || !Number.isSafeInteger(pos) || pos < 0) return undefined;
    return { key, deviationid, pos };
  } catch {
    return undefined;
  }
}
