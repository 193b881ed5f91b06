// How the service's bodies are read (docs/service-behaviour.md#object-shapes): the tolerant building blocks
// every schema uses, and the two timestamp formats (docs/service-behaviour.md#timestamps).
import { z } from "zod";

// ---- building blocks -------------------------------------------------------------------------------

export const str = () => z.string().nullish();
export const bool = () => z.boolean().nullish();
/** A decimal number written as a string ("12", " 3.5 "): PHP sends some counters that way (note folders' `count`). */
export const NUMERIC_STRING = /^\s*-?\d+(\.\d+)?\s*$/;
/** A numeric string becomes its number; anything else is left for the schema to judge. */
export const numericString = (v: unknown) => (typeof v === "string" && NUMERIC_STRING.test(v) ? Number(v) : v);
/** A number, also sent as a numeric string ("favourites": "12"); read as the number, so the mirror stores numbers. */
export const num = () => z.preprocess(numericString, z.number()).nullish();
export const arr = <T extends z.ZodType>(item: T) => z.array(item).nullish();

/** PHP serialises an empty associative array as `[]`; read that as `{}` so the object schema applies. */
export const emptyArrayAsObject = (v: unknown) => (Array.isArray(v) && v.length === 0 ? {} : v);

/** A nested, non-identity object: loose (unknown keys kept), `[]` accepted as `{}`, absent or null allowed. */
export const obj = <S extends z.core.$ZodLooseShape>(shape: S) => z.preprocess(emptyArrayAsObject, z.looseObject(shape)).nullish();

/**
 * An id the service sends as a string, also read when a client or model sends it as a number (comments,
 * messages, notes): kept as its decimal string (docs/service-behaviour.md#tolerant-reading).
 */
export const textId = () => z.union([z.string(), z.number().transform(String)]);

/** Epoch seconds: a string on deviations (`published_time`), an integer elsewhere (whofaved `time`). */
export const EpochSchema = z.union([z.string(), z.number()]);

/** Stash ids are 64-bit integers; kept as decimal strings. (Precision above 2^53 is already lost if the
 * JSON parser read them as numbers; see the transport.) */
export const StashIdSchema = z
  .union([z.string(), z.number(), z.bigint()])
  .transform((v) => (typeof v === "string" ? v : v.toString()));

// ---- timestamps (docs/service-behaviour.md#timestamps) ---------------------------------------------

/** Epoch seconds (number or numeric string) → Date; undefined for anything else. Never throws. */
export function parseEpochSeconds(value: unknown): Date | undefined {
  let seconds: number;
  if (typeof value === "number") seconds = value;
  else if (typeof value === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) seconds = Number(value);
  else return undefined;
  if (!Number.isFinite(seconds)) return undefined;
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * ISO 8601 string → Date; undefined for anything else. Never throws. Accepts the service's offsets
 * without a colon (`2020-09-14T10:21:28-0700`) and a date-only form (`2020-09-14`, read as UTC).
 */
export function parseIsoTime(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  const iso = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(trimmed);
  if (!iso) return undefined;
  const [, date, time, zone] = iso;
  if (!isCalendarDate(date as string)) return undefined;
  let normalised = time ? `${date}T${time}` : `${date}T00:00:00`;
  if (zone) normalised += zone.toUpperCase() === "Z" ? "Z" : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  else normalised += "Z";
  const ms = Date.parse(normalised);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Date.parse rolls 2020-02-31 over to March; reject impossible days instead. */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split("-").map(Number) as [number, number, number];
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}
