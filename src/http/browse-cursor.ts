// The archive browser's keyset cursor in a link (`after=`): the place of the last item of a page in the browser's
// order (src/db/archive-browser.repository.ts), so the next page is read from there instead of past an offset.
// Opaque to people (base64url of JSON); one that does not read back is ignored, and the page number's offset
// is used instead.
import type { BrowseCursor } from "../db/archive-browser.repository.ts";

export function encodeCursor(c: BrowseCursor): string {
  return Buffer.from(JSON.stringify([c.key, c.deviationid])).toString("base64url");
}

export function decodeCursor(value: string | undefined): BrowseCursor | undefined {
  if (!value || value.length > 400) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
    if (!Array.isArray(parsed) || parsed.length !== 2) return undefined;
    const [key, deviationid] = parsed as unknown[];
    if (typeof key !== "string" || typeof deviationid !== "string" || deviationid === "" || deviationid.length > 200) return undefined;
    if (key !== "-infinity" && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(key)) return undefined;
    return { key, deviationid };
  } catch {
    return undefined;
  }
}
