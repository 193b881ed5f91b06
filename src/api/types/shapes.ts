// How the service's bodies are read (docs/service-behaviour.md#object-shapes): the tolerant building blocks
// every schema uses. The two timestamp formats (docs/service-behaviour.md#timestamps) are src/timestamps.ts's.
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
export const StashIdSchema = z.union([z.string(), z.number(), z.bigint()]).transform((v) => (typeof v === "string" ? v : v.toString()));
