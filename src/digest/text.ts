// Small text helpers for digests: the service's HTML (comments, note bodies) reduced to plain text,
// HTML escaping, and shortening that never cuts a surrogate pair.
import { dropScriptBlocks, TAG } from "../http/html.ts";

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", "#39": "'" };

/** Decodes the entities the service uses (named basics and numeric ones). Unknown entities stay as they are. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[name.toLowerCase()] ?? whole;
  });
}

/** The readable text of a fragment of HTML: line breaks kept, tags and scripts dropped, whitespace collapsed. */
export function htmlToText(html: string | null | undefined): string {
  if (!html) return "";
  // Linear passes only: a comment or note body can be hostile (see dropScriptBlocks).
  const text = dropScriptBlocks(html)
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|li|blockquote|h[1-6])\s*>/gi, "\n")
    .replace(TAG, "");
  return decodeEntities(text)
    .split("\n")
    .map((line) => line.replace(/[ \t\u00a0]+/g, " ").trim())
    .filter((line, i, lines) => line !== "" || (i > 0 && lines[i - 1] !== ""))
    .join("\n")
    .trim();
}

/** At most `max` characters (code points), with an ellipsis when shortened. */
export function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return chars.slice(0, Math.max(1, max - 1)).join("").trimEnd() + "…";
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string | null | undefined): string {
  return (text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
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

/** 1536 → "1.5 KB"; binary units, one decimal from KiB up. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** "1 comment", "3 comments". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
