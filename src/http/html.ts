// Server-side HTML with escaping by default: every value interpolated into html`` is escaped unless it is
// itself the result of html`` (or raw() for markup dvault wrote). Service-provided text can't become markup.

const SAFE = Symbol("safe-html");

export type SafeHtml = { readonly [SAFE]: true; readonly text: string; toString(): string };

function safe(text: string): SafeHtml {
  return { [SAFE]: true, text, toString: () => text };
}

export function isSafe(value: unknown): value is SafeHtml {
  return typeof value === "object" && value !== null && (value as Partial<SafeHtml>)[SAFE] === true;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? "").replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c);
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map((v) => render(v as Interpolation)).join("");
  if (isSafe(value)) return value.text;
  return escapeHtml(value);
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return safe(out);
}

/** Markup dvault itself wrote (never service-provided text). */
export function raw(markup: string): SafeHtml {
  return safe(markup);
}

/**
 * Drops <script> and <style> blocks with their content in one linear pass; an opening that never closes is
 * dropped as a tag and the text after it kept (`<script` without a `>` is no tag: text). (The regex /<(script|style)[^>]*>[\s\S]*?<\/\1>/ rescans
 * the rest of the text from every unclosed opening: quadratic, seconds for a few hundred KB of hostile HTML.)
 */
export function dropScriptBlocks(input: string): string {
  const opening = /<(script|style)\b[^<>]*>/gi;
  const unclosed = new Set<string>();
  let out = "";
  let at = 0;
  for (let m = opening.exec(input); m; m = opening.exec(input)) {
    out += input.slice(at, m.index);
    const kind = m[1]!.toLowerCase();
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

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", "#39": "'" };

/** HTML from the service (descriptions, comments) as plain text: tags dropped, breaks kept, entities decoded. */
export function htmlToText(input: string | null | undefined): string {
  if (!input) return "";
  return dropScriptBlocks(input)
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|li|h[1-6])\s*>/gi, "\n")
    .replace(TAG, "")
    .replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, (whole, name: string) => {
      const known = ENTITIES[name.toLowerCase()];
      if (known) return known;
      const code = /^#x/i.test(name) ? parseInt(name.slice(2), 16) : name.startsWith("#") ? parseInt(name.slice(1), 10) : NaN;
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : whole;
    })
    .replace(/[ \t]+/g, " ")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
