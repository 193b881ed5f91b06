// HTML with escaping by default, for the dashboard and the digest alike: every value interpolated into
// html`` is escaped unless it is itself the result of html`` (or raw() for markup dvault wrote), so text the
// service provided can never become markup.
import { neutralizeControls } from "./controls.ts";

const SAFE = Symbol("safe-html");

export type SafeHtml = { readonly [SAFE]: true; readonly text: string; toString(): string };

function safe(text: string): SafeHtml {
  return { [SAFE]: true, text, toString: () => text };
}

export function isSafe(value: unknown): value is SafeHtml {
  return typeof value === "object" && value !== null && (value as Partial<SafeHtml>)[SAFE] === true;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/**
 * Escapes text for element content and quoted attribute values (null and undefined become ""). Direction overrides are
 * made visible on the way (src/text/controls.ts): every text field of the dashboard, the digest and the pages dvault
 * stores passes here, so "Invoice \u202Efdp.exe" never shows as "Invoice exe.pdf", while right-to-left writing stays.
 */
export function escapeHtml(value: unknown): string {
  return neutralizeControls(String(value ?? "")).replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c);
}

export type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

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
