// Scrubs secrets out of anything that may reach a log line, an error message or a job's failure
// reason in Redis: tokens in headers, query strings, JSON bodies, URL passwords and known values.

const REDACTED = "[redacted]";

/** Object keys whose values are always secret, compared case-insensitively without - and _. */
const SECRET_KEYS = new Set(
  [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "code_verifier",
    "password",
    "passwd",
    "secret",
    "secret_key",
    "token",
    "dvault_secret_key",
    "dvault_client_secret",
    "dvault_http_token",
    "smtp_pass",
    "dvault_ntfy_token",
    // A Discord webhook URL carries its token: whoever has the URL can post to the channel.
    "webhook_url",
    "dvault_discord_webhook_url",
    // S3 credentials, as the AWS SDK names them (secretAccessKey, sessionToken) and as dvault's variables do.
    "secret_access_key",
    "session_token",
    "dvault_s3_secret_access_key",
  ].map(normaliseKey),
);

function normaliseKey(key: string): string {
  return key.toLowerCase().replace(/[-_]/g, "");
}

/** Node and library error codes (ECONNREFUSED, ERR_NON_2XX_2XX_RESPONSE) are diagnostics, not OAuth codes. */
const ERROR_CODE = /^(E[A-Z0-9_]+|ERR_[A-Z0-9_]+|P\d{4})$/;

export function isSecretKey(key: string, value?: unknown): boolean {
  const k = normaliseKey(key);
  if (SECRET_KEYS.has(k)) return true;
  // An OAuth authorization `code` is secret; an error object's `code` is not.
  if (k === "code") return !(typeof value === "number" || (typeof value === "string" && ERROR_CODE.test(value)));
  return false;
}

const knownSecrets = new Set<string>();

/** Registers an exact value (a token, a client secret) to be masked wherever it appears in text. */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 6) knownSecrets.add(value);
}

const PARAM_NAMES =
  "access_token|refresh_token|id_token|client_secret|code|code_verifier|code_challenge|token|password|secret|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|policy|key-pair-id";

const SCRUBBERS: Array<[RegExp, string]> = [
  // Authorization header values written out as text.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{4,}/gi, `$1 ${REDACTED}`],
  // user:password@ inside any URL.
  [/([a-z][a-z0-9+.-]*:\/\/[^\s:/@"']*):[^\s@/"']*@/gi, `$1:***@`],
  // name=value in query strings and form bodies (`error_code=2` is left alone: it has no separator before `code`).
  [new RegExp(`((?:^|[?&#;\\s"'(])(?:${PARAM_NAMES})=)[^&#\\s"')]+`, "gi"), `$1${REDACTED}`],
  // "name": "value" inside JSON text (response bodies quoted in error messages).
  [/("(?:access_token|refresh_token|id_token|client_secret|code|code_verifier|password|secret|token)"\s*:\s*)"[^"]*"/gi, `$1"${REDACTED}"`],
  // Feed tokens (src/http/feeds/feed-token.ts), and whatever stands where a feed URL carries its token.
  [/\bdvf_[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/(\/feeds\/)[^/\s"'?#]+(?=\/)/g, `$1${REDACTED}`],
  // The token of a Discord webhook URL (/api/webhooks/<id>/<token>), configured or quoted by an answer.
  [/(\/api\/(?:v\d+\/)?webhooks\/\d+\/)[A-Za-z0-9_-]{8,}/g, `$1${REDACTED}`],
  // JWTs, as in signed CDN URLs.
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, REDACTED],
];

export function scrubString(text: string): string {
  let out = text;
  for (const secret of knownSecrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const [pattern, replacement] of SCRUBBERS) out = out.replace(pattern, replacement);
  return out;
}

/** Deep copy with secret keys masked and every string scrubbed. Handles cycles, Errors, Buffers, Maps. */
export function scrubValue(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === "string") return scrubString(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > 8) return "[depth limit]";
  if (seen.has(value)) return "[circular]";
  seen.add(value);
  if (value instanceof Error) return serializeError(value, depth, seen);
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  if (value instanceof URL) return scrubString(value.href);
  if (value instanceof Date) return value;
  if (value instanceof Map) return scrubValue(Object.fromEntries(value), depth, seen);
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = isSecretKey(key, inner) ? REDACTED : scrubValue(inner, depth + 1, seen);
  }
  return out;
}

/**
 * An Error as a plain object. HTTP client errors (got's RequestError) carry the request's options,
 * headers and URL: only the method, the scrubbed URL and the status survive.
 */
export function serializeError(err: Error, depth = 0, seen: WeakSet<object> = new WeakSet()): Record<string, unknown> {
  const out: Record<string, unknown> = {
    type: err.name,
    message: scrubString(err.message),
  };
  if (err.stack) out.stack = scrubString(err.stack);
  const anyErr = err as Error & Record<string, unknown>;
  const options = anyErr.options as { method?: string; url?: URL | string } | undefined;
  if (options && typeof options === "object") {
    if (options.method) out.method = options.method;
    if (options.url) out.url = scrubString(String(options.url));
  }
  const response = anyErr.response as { statusCode?: number } | undefined;
  if (response && typeof response === "object" && typeof response.statusCode === "number") {
    out.statusCode = response.statusCode;
  }
  const SKIP = new Set(["name", "message", "stack", "options", "response", "request", "timings", "input"]);
  for (const [key, inner] of Object.entries(anyErr)) {
    if (SKIP.has(key)) continue;
    out[key] = isSecretKey(key, inner) ? REDACTED : scrubValue(inner, depth + 1, seen);
  }
  if (err.cause !== undefined) out.cause = scrubValue(err.cause, depth + 1, seen);
  return out;
}

/**
 * A copy of an error that is safe to store (BullMQ keeps `message` and `stack` in Redis as the failure
 * reason) or print. Keeps the class's prototype so `instanceof` checks still hold.
 */
export function scrubError<E extends Error>(err: E): E {
  const safe = Object.create(Object.getPrototypeOf(err)) as E;
  for (const [key, inner] of Object.entries(err)) {
    if (key === "options" || key === "request" || key === "response" || key === "timings") continue;
    (safe as Record<string, unknown>)[key] = isSecretKey(key, inner) ? REDACTED : scrubValue(inner);
  }
  Object.defineProperty(safe, "message", { value: scrubString(err.message), enumerable: false, writable: true });
  Object.defineProperty(safe, "name", { value: err.name, enumerable: false, writable: true });
  if (err.stack) Object.defineProperty(safe, "stack", { value: scrubString(err.stack), enumerable: false, writable: true });
  return safe;
}

/** postgresql://user:secret@host/db → postgresql://user:***@host/db */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const key of [...u.searchParams.keys()]) {
      if (isSecretKey(key, u.searchParams.get(key))) u.searchParams.set(key, "***");
    }
    return u.toString();
  } catch {
    return scrubString(url);
  }
}
