// Turns names from the service (titles, folder names, usernames, filenames) into one safe path component:
// nothing that escapes the archive, hides itself, fools a reader or breaks a copy to another filesystem.

/** Bidi overrides, embeddings, isolates and marks: they make "gnp.exe" read as "exe.png". */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/gu;
/** C0 and C1 controls (NUL included) and DEL. */
const CONTROL_CHARS = /[\u0000-\u001F\u007F-\u009F]/gu;
/** Separators, plus what Windows/exFAT refuse, so the archive survives being copied there whole. */
const UNPORTABLE_CHARS = /[/\\<>:"|?*]/gu;
/** Reserved device names on Windows, with or without an extension (the part before the first dot decides). */
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[1-9¹²³]|lpt[1-9¹²³])$/iu;

export const DEFAULT_MAX_COMPONENT_BYTES = 150;

export type SanitizeOptions = {
  /** Cap in UTF-8 bytes (default 150: room under the usual 255-byte limit for temp prefixes). */
  maxBytes?: number;
  /** Used when nothing is left (default "untitled"). */
  fallback?: string;
};

/** Cuts `text` to at most `maxBytes` UTF-8 bytes on a code-point boundary. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  let out = "";
  let bytes = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch, "utf8");
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}

function trimEnds(text: string): string {
  // Leading whitespace is dropped; trailing dots and spaces too (Windows strips them, so "a." and "a" collide).
  return text.replace(/^\s+/u, "").replace(/[\s.]+$/u, "");
}

/**
 * One safe path component: no traversal ("." / ".." / separators), no control or bidi characters,
 * NFC-normalised, not hidden (a leading dot becomes "_"), not a Windows device name, capped in UTF-8
 * bytes. Empty results become `fallback`. Deterministic: the same input always gives the same output.
 */
export function sanitizeComponent(name: string, opts: SanitizeOptions = {}): string {
  const maxBytes = Math.max(1, opts.maxBytes ?? DEFAULT_MAX_COMPONENT_BYTES);
  const fallback = opts.fallback ?? "untitled";
  let s = String(name).normalize("NFC");
  s = s.replace(BIDI_CONTROLS, "");
  s = s.replace(CONTROL_CHARS, "_").replace(UNPORTABLE_CHARS, "_");
  // Collapse runs of whitespace (tabs were controls, already "_"); keeps names readable and single-line.
  s = s.replace(/\s+/gu, " ");
  s = trimEnds(s);
  // A name of only dots ("..", "...") was emptied by trimEnds; a leading dot would hide the file.
  if (s.startsWith(".")) s = `_${s.slice(1)}`;
  const base = s.split(".")[0] ?? "";
  if (WINDOWS_RESERVED.test(base.trim())) s = `_${s}`;
  s = trimEnds(truncateUtf8(s, maxBytes));
  if (s.length > 0) return s;
  return fallback === "untitled" ? truncateUtf8("untitled", maxBytes) : sanitizeComponent(fallback, { maxBytes });
}

/**
 * "<title> [<deviationid>].<ext>", sanitised as one component. The title part is shortened first so the
 * id and extension always survive: two deviations never share a name, whatever their titles.
 */
export function readableName(p: { title: string; deviationid: string; ext: string }, maxBytes = DEFAULT_MAX_COMPONENT_BYTES): string {
  const id = sanitizeComponent(p.deviationid, { fallback: "unknown" }).replace(/[\s[\]]/gu, "_");
  const ext = safeExtension(p.ext) ?? "bin";
  const suffix = ` [${id}].${ext}`;
  const room = Math.max(1, maxBytes - Buffer.byteLength(suffix, "utf8"));
  const title = sanitizeComponent(p.title, { maxBytes: room });
  return sanitizeComponent(title + suffix, { maxBytes: Math.max(maxBytes, Buffer.byteLength(title + suffix, "utf8")) });
}

/** A lowercase extension of letters and digits (1–10), or undefined. */
export function safeExtension(ext: string | undefined): string | undefined {
  if (ext === undefined) return undefined;
  const e = ext.trim().replace(/^\.+/u, "").toLowerCase();
  return /^[a-z0-9]{1,10}$/u.test(e) ? e : undefined;
}
