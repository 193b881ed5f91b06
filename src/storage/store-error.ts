// What went wrong in a store, read from an error's fields and never from its message (which may carry an
// address): an S3 answer's code (NoSuchKey, AccessDenied...) and HTTP status, or a file system's errno code.

type StoreErrorFields = { name?: unknown; Code?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } };

/**
 * The error's code ("" when it has none) and HTTP status. An answer to HEAD has no body, so no code: the SDK
 * names it "Unknown" (or NotFound), and the status decides.
 */
export function storeErrorOf(err: unknown): { code: string; status: number | undefined } {
  const e = (typeof err === "object" && err !== null ? err : {}) as StoreErrorFields;
  const code = [e.Code, e.code, e.name].find((c): c is string => typeof c === "string" && c !== "" && c !== "Error" && c !== "Unknown") ?? "";
  const status = e.$metadata?.httpStatusCode;
  return { code, status: typeof status === "number" ? status : undefined };
}
