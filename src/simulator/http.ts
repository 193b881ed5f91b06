// Request parsing and response helpers shared by every simulator route: query and form params kept as
// sent (bracket keys included), minimal multipart, and the service's error bodies.
import type { IncomingMessage } from "node:http";

export type ParamMap = Record<string, string | string[]>;

export type UploadedFile = { field: string; filename: string; contentType: string; data: Buffer };

export type ParsedBody = {
  form: ParamMap;
  files: UploadedFile[];
  /** "form", "multipart", "json" (not parsed: the service does not read JSON bodies), "other" or "none". */
  kind: "form" | "multipart" | "json" | "other" | "none";
  raw: Buffer;
};

export type Reply =
  | { status: number; json: unknown; headers?: Record<string, string> }
  | { status: number; text: string | Buffer; contentType: string; headers?: Record<string, string> }
  | { status: number; redirect: string };

export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers ? { status, json: body, headers } : { status, json: body };
}

/** The service's error body (docs/service-behaviour.md#error-body): `error` and `error_code` are the stable parts. */
export function errorBody(error: string, description: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { error, error_description: description, ...extra, status: "error" };
}

export function apiError(status: number, error: string, description: string, extra: Record<string, unknown> = {}): Reply {
  return json(status, errorBody(error, description, extra));
}

export const ERR = {
  /** docs/service-behaviour.md#endpoint-removed */
  notFound: () => apiError(404, "invalid_request", "Api endpoint not found."),
  validation: (details: Record<string, string>) => apiError(400, "invalid_request", "Request field validation failed.", { error_details: details }),
  limitRange: () => ERR.validation({ limit: "limit is not within the allowed range" }),
  required: (field: string) => ERR.validation({ [field]: `${field} is required` }),
  /** docs/service-behaviour.md#access-token-expired (and #client-token-on-user-endpoint) */
  expiredToken: () => apiError(401, "invalid_token", "Expired oAuth2 user token. The client should request a new one with an access code or a refresh token."),
  /** docs/service-behaviour.md#insufficient-scope */
  insufficientScope: (scope: string) =>
    apiError(
      403,
      "insufficient_scope",
      "The requested resource requires a higher scope than the user has allowed the client to access, client needs to re-authorize.",
      { scope },
    ),
  /** docs/service-behaviour.md#user-error-codes (also a renamed user's old name). */
  userNotFound: () => apiError(400, "invalid_request", "User not found.", { error_code: 2 }),
  /** docs/service-behaviour.md#user-error-codes: a deactivated account. */
  accountInactive: () => apiError(400, "invalid_request", "Account is inactive.", { error_code: 1 }),
  /** docs/service-behaviour.md#user-error-codes: a suspended account (the code is documented, this wording is UNCERTAIN). */
  accountSuspended: () => apiError(400, "invalid_request", "Account is suspended.", { error_code: 0 }),
  invalid: (description: string, errorCode?: number) => apiError(400, "invalid_request", description, errorCode === undefined ? {} : { error_code: errorCode }),
};

export function parseParams(search: URLSearchParams): ParamMap {
  const out: ParamMap = {};
  for (const [key, value] of search) {
    const prev = out[key];
    if (prev === undefined) out[key] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[key] = [prev, value];
  }
  return out;
}

export async function readBody(req: IncomingMessage, maxBytes = 64 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > maxBytes) throw new Error("request body too large");
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

export function parseBody(raw: Buffer, contentType: string | undefined): ParsedBody {
  const type = (contentType ?? "").toLowerCase();
  if (raw.length === 0) return { form: {}, files: [], kind: "none", raw };
  if (type.startsWith("application/x-www-form-urlencoded") || type === "") {
    return { form: parseParams(new URLSearchParams(raw.toString("utf8"))), files: [], kind: "form", raw };
  }
  if (type.startsWith("multipart/form-data")) {
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType ?? "");
    const b = boundary?.[1] ?? boundary?.[2];
    if (b) return { ...parseMultipart(raw, b.trim()), kind: "multipart", raw };
  }
  if (type.includes("json")) return { form: {}, files: [], kind: "json", raw };
  return { form: {}, files: [], kind: "other", raw };
}

function parseMultipart(raw: Buffer, boundary: string): { form: ParamMap; files: UploadedFile[] } {
  const form: ParamMap = {};
  const files: UploadedFile[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = raw.indexOf(delimiter);
  while (pos !== -1) {
    const start = pos + delimiter.length;
    if (raw.subarray(start, start + 2).toString() === "--") break;
    const next = raw.indexOf(delimiter, start);
    if (next === -1) break;
    // Part = CRLF headers CRLF CRLF body CRLF
    const part = raw.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf("\r\n\r\n");
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString("utf8");
      const data = part.subarray(headerEnd + 4);
      const name = /name="([^"]*)"/i.exec(headers)?.[1];
      const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
      const ctype = /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1] ?? "application/octet-stream";
      if (name !== undefined) {
        if (filename !== undefined) files.push({ field: name, filename, contentType: ctype.trim(), data: Buffer.from(data) });
        else addParam(form, name, data.toString("utf8"));
      }
    }
    pos = next;
  }
  return { form, files };
}

function addParam(map: ParamMap, key: string, value: string): void {
  const prev = map[key];
  if (prev === undefined) map[key] = value;
  else if (Array.isArray(prev)) prev.push(value);
  else map[key] = [prev, value];
}

/** Reads request parameters the way the service does: query and form merged, form winning. */
export class Params {
  constructor(
    readonly query: ParamMap,
    readonly form: ParamMap,
  ) {}

  get(name: string): string | undefined {
    const v = this.form[name] ?? this.query[name];
    if (v === undefined) return undefined;
    return Array.isArray(v) ? v[0] : v;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** `name[]=a&name[]=b`, `name[0]=a&name[1]=b` or repeated `name=a&name=b`. */
  array(name: string): string[] {
    const out: string[] = [];
    for (const source of [this.query, this.form]) {
      const indexed: Array<[number, string]> = [];
      for (const [key, value] of Object.entries(source)) {
        const values = Array.isArray(value) ? value : [value];
        if (key === name || key === `${name}[]`) out.push(...values);
        else {
          const m = /^(.+)\[(\d+)\]$/.exec(key);
          if (m && m[1] === name) for (const v of values) indexed.push([Number(m[2]), v]);
        }
      }
      indexed.sort((a, b) => a[0] - b[0]);
      out.push(...indexed.map(([, v]) => v));
    }
    return out;
  }

  /** `name[key]=value` pairs, e.g. `watch[friend]=1`. */
  record(name: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const source of [this.query, this.form]) {
      for (const [key, value] of Object.entries(source)) {
        const m = /^(.+)\[([^\]]+)\]$/.exec(key);
        if (m && m[1] === name && !/^\d+$/.test(m[2] ?? "")) out[m[2] as string] = Array.isArray(value) ? (value[0] ?? "") : value;
      }
    }
    return out;
  }

  bool(name: string, fallback = false): boolean {
    const v = this.get(name);
    if (v === undefined || v === "") return fallback;
    return v === "1" || v.toLowerCase() === "true" || v.toLowerCase() === "yes";
  }

  int(name: string): number | undefined | "invalid" {
    const v = this.get(name);
    if (v === undefined || v === "") return undefined;
    if (!/^-?\d+$/.test(v)) return "invalid";
    return Number(v);
  }
}
