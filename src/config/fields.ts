// Pieces of the environment schema that more than one of the config's fragments use (src/config/*.ts).
import { z } from "zod";

const emptyAsUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

export function isHttpUrl(v: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}

/** An optional http:// or https:// URL (empty counts as unset); `message` says what is expected. */
export function optionalHttpUrl(message: string) {
  return z.preprocess(emptyAsUndefined, z.string().refine(isHttpUrl, { message }).optional());
}
