// Small text helpers for digests: shortening that never cuts a surrogate pair, controls made visible, plurals.
// (HTML escaping, HTML to text and byte sizes are the foundation's, in src/text.)
// HTML to text lives with the other text helpers of the foundation (src/text); re-exported for the digest's readers.
export { htmlToText } from "../text/html-to-text.ts";

/** At most `max` characters (code points), with an ellipsis when shortened. */
export function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return chars.slice(0, Math.max(1, max - 1)).join("").trimEnd() + "…";
}

/**
 * Bidirectional overrides and other invisible controls can disguise a title ("Evil \u202Egnp.exe"): shown
 * as visible escapes instead of being applied by the mail client.
 */
export function neutralizeControls(text: string): string {
  return text.replace(/[\u202A-\u202E\u2066-\u2069\u200E\u200F]/g, (c) => `[U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}]`);
}

/** A service-provided string made safe to show: controls neutralized, whitespace tidied. (Escape separately.) */
export function clean(text: string | null | undefined): string {
  return neutralizeControls((text ?? "").replace(/\s+/g, " ").trim());
}

/** "1 comment", "3 comments". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
