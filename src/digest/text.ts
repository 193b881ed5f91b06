// Small text helpers for digests: shortening that never cuts a surrogate pair, service text cleaned.
// HTML escaping, HTML to text, plurals, byte sizes and visible controls are the foundation's (src/text).
import { neutralizeControls } from "../text/controls.ts";

/** At most `max` characters (code points), with an ellipsis when shortened. */
export function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars
    .slice(0, Math.max(1, max - 1))
    .join("")
    .trimEnd()}…`;
}

/** A service-provided string made safe to show: controls neutralized, whitespace tidied. (Escape separately.) */
export function clean(text: string | null | undefined): string {
  return neutralizeControls((text ?? "").replace(/\s+/g, " ").trim());
}
