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

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", "#39": "'" };

/** HTML from the service (descriptions, comments) as plain text: tags dropped, breaks kept, entities decoded. */
export function htmlToText(input: string | null | undefined): string {
  if (!input) return "";
  return input
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1\s*>/gi, "")
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|li|h[1-6])\s*>/gi, "\n")
    .replace(/<[^>]*>/g, "")
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
