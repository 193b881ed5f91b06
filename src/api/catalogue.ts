// Every operation of the service's API (both listings: docs/service-behaviour.md#catalogue-listings): the
// single source of method, path, token kind, scopes, paging, page-size limit, error codes and response schema
// for the client, the transport and the tests. The entries live by area in src/api/catalogue/*.ts.
import type { z } from "zod";
import { BROWSE_ENTRIES, CURATED_ENTRIES, DATA_ENTRIES, UTIL_ENTRIES } from "./catalogue/browse.ts";
import { COMMENTS_ENTRIES, DEVIATION_ENTRIES } from "./catalogue/deviation.ts";
import { COLLECTIONS_ENTRIES, GALLERY_ENTRIES } from "./catalogue/gallery.ts";
import { FEED_ENTRIES, MESSAGES_ENTRIES, NOTES_ENTRIES } from "./catalogue/messages.ts";
import { STASH_ENTRIES } from "./catalogue/stash.ts";
import { USER_ENTRIES } from "./catalogue/user.ts";
import type { Operation } from "./catalogue/operation.ts";

export type {
  Deprecation,
  ErrorCodes,
  ErrorMeaning,
  HttpMethod,
  ItemsKey,
  Listing,
  Operation,
  Paging,
  Removal,
  Scope,
  TokenKind,
} from "./catalogue/operation.ts";
export { USER_ERROR_CODES } from "./catalogue/operation.ts";

const ENTRIES = [
  ...BROWSE_ENTRIES,
  ...COLLECTIONS_ENTRIES,
  ...COMMENTS_ENTRIES,
  ...CURATED_ENTRIES,
  ...DATA_ENTRIES,
  ...DEVIATION_ENTRIES,
  ...FEED_ENTRIES,
  ...GALLERY_ENTRIES,
  ...MESSAGES_ENTRIES,
  ...NOTES_ENTRIES,
  ...STASH_ENTRIES,
  ...USER_ENTRIES,
  ...UTIL_ENTRIES,
] as const;

type CatalogueEntry = (typeof ENTRIES)[number];
export type OperationId = CatalogueEntry["id"];

/** The body type of `id` as its schema reads it; for listings, one page. */
export type ResponseOf<Id extends OperationId> = z.infer<Extract<CatalogueEntry, { id: Id }>["response"]>;

export const CATALOGUE = Object.freeze(
  ENTRIES.map((e) =>
    Object.freeze({
      matureContent: false,
      removed: false,
      deprecated: false,
      paging: "none",
      ...e,
    }),
  ),
) as readonly (Operation & { id: OperationId })[];

const BY_ID: ReadonlyMap<string, Operation> = new Map(CATALOGUE.map((op) => [op.id, op]));

export function isOperationId(id: string): id is OperationId {
  return BY_ID.has(id);
}

/** The catalogue entry for `id`; throws on an unknown id (a typo must not become a silent no-op). */
export function operation(id: OperationId | (string & {})): Operation {
  const op = BY_ID.get(id);
  if (!op) throw new Error(`unknown API operation "${id}": it is not in src/api/catalogue.ts`);
  return op;
}

/** The catalogue entry for `id`, or undefined for an id the catalogue does not know (error classification). */
export function operationIfKnown(id: string): Operation | undefined {
  return BY_ID.get(id);
}

const PLACEHOLDER = /\{([A-Za-z0-9_]+)\}/g;

/** The placeholder names of a path template, in order: "/gallery/{folderid}" → ["folderid"]. */
export function pathParams(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] as string);
}

/**
 * Fills `{name}` placeholders from `params`, URL-encoding each value as one path segment (so a `/` in a
 * username cannot change the route). Throws when a placeholder has no value or an empty one: an empty
 * segment would address a different endpoint (e.g. `/user/friends/` instead of `/user/friends/{username}`).
 */
export function expandPath(template: string, params: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === null || value === "") {
      throw new Error(`path ${template} needs a value for {${name}}`);
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "bigint") {
      throw new Error(`path ${template}: {${name}} must be a string or a number, got ${typeof value}`);
    }
    // encodeURIComponent leaves "." and ".." as they are, and a URL resolves them as the directory: /deviation/..
    // would call /api/v1/oauth2/ itself (an id from the service, or `dvault api --param`, naming another endpoint).
    if (value === "." || value === "..") throw new Error(`path ${template}: {${name}} cannot be "${value}"`);
    return encodeURIComponent(String(value));
  });
}
