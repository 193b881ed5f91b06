// The service's HTML (descriptions, comments, note bodies) as plain text, for the dashboard and the digest:
// one implementation, linear on hostile input.

/**
 * Drops <script> and <style> blocks with their content in one linear pass; an opening that never closes is
 * dropped as a tag and the text after it kept (`<script` without a `>` is no tag: text). (The regex
 * /<(script|style)[^>]*>[\s\S]*?<\/\1>/ rescans the rest of the text from every unclosed opening: quadratic,
 * seconds for a few hundred KB of hostile HTML.)
 */
export function dropScriptBlocks(input: string): string {
  const opening = /<(script|style)\b[^<>]*>/gi;
  const unclosed = new Set<string>();
  let out = "";
  let at = 0;
  for (let m = opening.exec(input); m; m = opening.exec(input)) {
    out += input.slice(at, m.index);
    const kind = (m[1] ?? "").toLowerCase();
    at = opening.lastIndex;
    if (unclosed.has(kind)) continue;
    const closing = new RegExp(`<\\/${kind}\\s*>`, "gi");
    closing.lastIndex = at;
    const end = closing.exec(input);
    if (!end) {
      unclosed.add(kind);
      continue;
    }
    at = opening.lastIndex = closing.lastIndex;
  }
  return out + input.slice(at);
}

/** Any tag: `<` up to the next `>`, never across another `<` (so the match is linear, and `a < b` is text). */
export const TAG = /<[^<>]*>/g;

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", "#39": "'" };

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

/**
 * The readable text of a fragment of HTML: tags and scripts dropped, entities decoded, a line per break or
 * block, each line's whitespace (no-break spaces included) collapsed and trimmed, at most one blank line in a row.
 */
export function htmlToText(input: string | null | undefined): string {
  if (!input) return "";
  const text = dropScriptBlocks(input)
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
