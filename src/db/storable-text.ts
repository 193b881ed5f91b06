// Text from the service as PostgreSQL can hold it: NUL and lone UTF-16 surrogates become U+FFFD on the way
// in (docs/service-behaviour.md#hostile-answers, docs/schema.md#text-from-the-service). One answer holding
// either would otherwise fail its whole page, and the source with it, on every run. Every connection dvault
// opens is a StorableTextClient (createPgPool, connectPg), so every string parameter passes here, Kysely's
// included; jsonb parameters, where NUL arrives as the escape `\u0000`, are written with storableJson.
import pg from "pg";

/** NUL, or a surrogate without its other half. No `u` flag: the match is on UTF-16 code units. */
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, "g");

/**
 * In JSON.stringify's output, the escapes jsonb refuses: `\u0000` and a lone surrogate (a valid pair is
 * written as itself, never escaped). `\\` is matched as well so that an escaped backslash followed by the
 * letters "u0000" (text that says \u0000) is stepped over, not taken for an escape.
 */
const JSON_UNSTORABLE = /\\u(?:0000|d[89a-f])/;
const JSON_ESCAPES = /\\\\|\\u(?:0000|d[89a-f][0-9a-f]{2})/g;

/** `text` with NUL and lone surrogates replaced by U+FFFD; the same string when it has none. */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, "\ufffd") : text;
}

/** JSON text of `value` for a jsonb parameter, with NUL and lone surrogates (keys too) as U+FFFD. */
export function storableJson(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  return JSON_UNSTORABLE.test(text) ? text.replace(JSON_ESCAPES, (sequence) => (sequence === "\\\\" ? sequence : "\\ufffd")) : text;
}

/**
 * `value` with every string in it, through arrays and plain objects, made storable; anything else (Date,
 * bytes, class instances) as it is. The same value when nothing changed, so the common case copies nothing.
 * Query parameters go through it (arrays are text[] columns, plain objects pg writes as JSON).
 */
export function storableDeep<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((inner: unknown, i) => {
      const safe = storableDeep(inner);
      if (safe === inner) return;
      out ??= [...value];
      out[i] = safe;
    });
    return (out ?? value) as T;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | undefined;
  for (const [key, inner] of Object.entries(value)) {
    const safe = storableDeep(inner);
    if (safe === inner) continue;
    out ??= { ...(value as Record<string, unknown>) };
    out[key] = safe;
  }
  return (out ?? value) as T;
}

/**
 * pg's client with storable string parameters, whichever form `query` is called in: (text, values),
 * (config with values), or a submittable (cursor, stream), whose values are
 * replaced in place because it must stay the object the caller holds.
 */
export class StorableTextClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg.Client.query has a dozen overloads; this forwards them all unchanged.
  override query(...args: any[]): any {
    const [first, values] = args;
    if (Array.isArray(values)) {
      args[1] = storableDeep(values);
    } else if (first !== null && typeof first === "object" && Array.isArray(first.values)) {
      const safe = storableDeep(first.values);
      if (safe !== first.values) {
        if (typeof first.submit === "function") first.values = safe;
        else args[0] = { ...first, values: safe };
      }
    }
    return super.query(...(args as [string, unknown[]]));
  }
}
