// The simulator's CDN under /_cdn/: signed, expiring URLs (JWT-shaped tokens like wixmp's), files with
// Content-Length, a strong ETag and byte ranges (If-Range honoured), streamed in chunks with an optional
// per-connection bandwidth cap and a reset mid-body on demand — so a downloader's resume, retry and
// checksums can be tested against the truth.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SimDeviation } from "./dataset.ts";
import { fileBuffer, openFile, simFile, type CdnVariant, type SimFile } from "./files.ts";
import type { Reply } from "./http.ts";
import type { CdnSettings, SimWorld } from "./world.ts";

/** How long signed URLs stay valid (a 2020 sample had 610 s: docs/service-behaviour.md#download-url-ttl). */
export const CDN_URL_TTL_S = 600;
/** Body chunks of the CDN (smaller under a bandwidth cap). */
const CHUNK_BYTES = 64 * 1024;

function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString("base64url");
}

export function signCdnPath(world: SimWorld, path: string, ttlS = CDN_URL_TTL_S): string {
  const nowS = Math.floor(world.clock.nowMs() / 1000);
  const header = b64url(JSON.stringify({ typ: "JWT", alg: "HS256" }));
  const payload = b64url(
    JSON.stringify({ sub: "urn:app:sim", iss: "urn:app:sim", obj: [[{ path }]], aud: ["urn:service:file.download"], iat: nowS, exp: nowS + ttlS }),
  );
  const sig = createHmac("sha256", world.cdnKey).update(`${header}.${payload}`).digest("base64url");
  return `${world.baseUrl}${path}?token=${header}.${payload}.${sig}`;
}

export type CdnTokenCheck = { ok: true } | { ok: false; reason: "missing" | "invalid" | "expired" | "wrong_path" };

export function verifyCdnToken(world: SimWorld, path: string, token: string | undefined): CdnTokenCheck {
  if (!token) return { ok: false, reason: "missing" };
  const [header, payload, sig] = token.split(".");
  if (!header || !payload || !sig) return { ok: false, reason: "invalid" };
  const expected = createHmac("sha256", world.cdnKey).update(`${header}.${payload}`).digest();
  const given = Buffer.from(sig, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "invalid" };
  let claims: { exp?: number; obj?: Array<Array<{ path?: string }>> };
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as typeof claims;
  } catch {
    return { ok: false, reason: "invalid" };
  }
  if (claims.obj?.[0]?.[0]?.path !== path) return { ok: false, reason: "wrong_path" };
  if (typeof claims.exp !== "number" || claims.exp * 1000 <= world.clock.nowMs()) return { ok: false, reason: "expired" };
  return { ok: true };
}

/** The filename /deviation/download reports (a hostile one when the dataset has one). */
export function originalFilename(d: SimDeviation, username: string): string {
  if (d.filename !== undefined) return d.filename;
  const ext = d.image?.ext ?? "jpg";
  return `${d.slug.toLowerCase().replace(/[^a-z0-9]+/g, "_")}_by_${username.toLowerCase()}_d${d.numericId.toString(36)}.${ext}`;
}

/** A path segment that URL parsers leave alone: hostile filenames only ever travel in JSON and headers. */
function pathSegment(filename: string): string {
  const safe = filename
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^\.+/, "_")
    .slice(0, 120);
  return safe === "" ? "file" : safe;
}

/**
 * Paths: /_cdn/<variant>/<deviationid>/<filename> for originals and videos, and
 * /_cdn/<variant>/<deviationid>/<ops>/<filename> for image renditions, where ops is wixmp-like
 * ("w_150,h_150,q_80", with ",blur_30" on blurred renditions).
 */
export function cdnPath(d: SimDeviation, variant: CdnVariant, filename: string, ops?: string): string {
  const opsPart = ops ? `${ops}/` : "";
  return `/_cdn/${variant}/${d.deviationid.toLowerCase()}/${opsPart}${pathSegment(filename)}`;
}

/** The bytes of a deviation's file variant (only for files small enough to hold; for tests). */
export function deviationBytes(d: SimDeviation, variant: CdnVariant = "original", filename = "", ops = ""): Promise<Buffer> {
  const file = simFile(d, variant, renditionLabel(ops, filename), filename);
  if (!file) throw new Error(`deviation ${d.deviationid} has no ${variant} file`);
  return fileBuffer(file);
}

function renditionLabel(ops: string, filename: string): string {
  return `${ops}/${filename}`;
}

export type CdnRequest = {
  method: string;
  path: string;
  token: string | undefined;
  headers: Record<string, string | string[] | undefined>;
};

/**
 * Extension point: a hook may answer a CDN request itself (after the token check) before the file is
 * served. `file` describes the bytes without holding them (openFile/fileBuffer read them).
 */
export type CdnHook = (world: SimWorld, req: CdnRequest, deviation: SimDeviation, file: SimFile) => Reply | undefined;

export type CdnResult =
  | { kind: "reply"; reply: Reply }
  | { kind: "file"; status: 200 | 206; headers: Record<string, string>; file: SimFile; start: number; end: number };

const PATH_RE = /^\/_cdn\/(original|fullview|preview|thumb|video)\/([0-9a-f-]{36})\/(?:([A-Za-z0-9_,.]+)\/)?([^/]+)$/;

function denied(status: number, message: string): CdnResult {
  return { kind: "reply", reply: { status, text: `<Error><Code>AccessDenied</Code><Message>${message}</Message></Error>`, contentType: "application/xml" } };
}

function notFound(): CdnResult {
  return { kind: "reply", reply: { status: 404, text: "Not Found", contentType: "text/plain" } };
}

function header(req: CdnRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** One `bytes=a-b`, `bytes=a-` or `bytes=-n` range; "ignore" for anything else (served whole, as RFC 9110 allows). */
function parseRange(value: string, size: number): { start: number; end: number } | "unsatisfiable" | "ignore" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(value.trim());
  if (!m || (m[1] === "" && m[2] === "")) return "ignore";
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size };
  }
  const start = Number(m[1]);
  const last = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return "ignore";
  if (start >= size) return "unsatisfiable";
  return { start, end: last + 1 };
}

export function serveCdn(world: SimWorld, req: CdnRequest, hooks: readonly CdnHook[] = []): CdnResult {
  const m = PATH_RE.exec(req.path);
  if (!m) return notFound();
  const check = verifyCdnToken(world, req.path, req.token);
  if (!check.ok) return check.reason === "missing" ? denied(401, "Unauthorized") : denied(403, check.reason === "expired" ? "Token expired" : "Unauthorized");
  const d = world.data.deviations.get((m[2] as string).toUpperCase());
  if (!d || d.isDeleted) return notFound();
  const variant = m[1] as CdnVariant;
  const segment = m[4] as string;
  const file = simFile(d, variant, renditionLabel(m[3] ?? "", segment), segment);
  if (!file) return notFound();
  for (const hook of hooks) {
    const reply = hook(world, req, d, file);
    if (reply) return { kind: "reply", reply };
  }
  const lastModified = new Date(d.publishedTime * 1000).toUTCString();
  const etag = world.cdn.weakEtags ? `W/"${file.size.toString(16)}"` : file.etag;
  const headers: Record<string, string> = {
    "content-type": file.contentType,
    etag,
    "last-modified": lastModified,
    "cache-control": "max-age=31536000",
    "accept-ranges": world.cdn.ranges ? "bytes" : "none",
  };
  if (variant === "original") {
    const author = world.data.users.get(d.authorId);
    const name = originalFilename(d, author?.username ?? "unknown");
    const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
    headers["content-disposition"] = `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
  }
  const range = header(req, "range");
  if (world.cdn.ranges && range !== undefined) {
    const ifRange = header(req, "if-range");
    // A validator that no longer matches: the client's partial copy is stale, so it gets the whole file.
    const current = ifRange === undefined || (ifRange.startsWith('"') || ifRange.startsWith("W/") ? ifRange === etag : ifRange === lastModified);
    if (current) {
      const r = parseRange(range, file.size);
      if (r === "unsatisfiable") {
        return {
          kind: "reply",
          reply: { status: 416, text: "", contentType: "text/plain", headers: { "content-range": `bytes */${file.size}`, etag } },
        };
      }
      if (r !== "ignore") {
        headers["content-range"] = `bytes ${r.start}-${r.end - 1}/${file.size}`;
        if (!world.cdn.etagOnPartial) delete headers.etag;
        return { kind: "file", status: 206, headers, file, start: r.start, end: r.end };
      }
    }
  }
  return { kind: "file", status: 200, headers, file, start: 0, end: file.size };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves when the response can take more (drain) or is gone (close); true if it is gone. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (gone: boolean) => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(gone);
    };
    const onDrain = () => done(false);
    const onClose = () => done(true);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}

/**
 * Streams a file result: headers with Content-Length, then the bytes in chunks with backpressure, paced
 * to `settings.bytesPerSecond` (read for every chunk, so a change applies mid-transfer). With
 * `resetAfter`, the socket is destroyed once that many body bytes have been flushed.
 */
export async function sendCdnFile(args: {
  req: IncomingMessage;
  res: ServerResponse;
  result: Extract<CdnResult, { kind: "file" }>;
  settings: CdnSettings;
  resetAfter?: number;
}): Promise<void> {
  const { req, res, result, settings } = args;
  const length = result.end - result.start;
  // The picture is drawn (or taken from the cache) before the status line goes out.
  const reader = req.method === "HEAD" ? undefined : await openFile(result.file, result.start);
  res.writeHead(result.status, { ...result.headers, "content-length": String(length) });
  if (!reader) {
    res.end();
    return;
  }
  const limit = args.resetAfter === undefined ? length : Math.max(0, Math.min(length, args.resetAfter));
  let sent = 0;
  let windowStart = performance.now();
  let windowSent = 0;
  let windowRate = settings.bytesPerSecond;
  while (sent < limit) {
    if (res.destroyed) return;
    const rate = settings.bytesPerSecond;
    if (rate !== windowRate) {
      windowRate = rate;
      windowStart = performance.now();
      windowSent = 0;
    }
    const size = Math.min(CHUNK_BYTES, limit - sent, rate ? Math.max(1024, Math.floor(rate / 50)) : CHUNK_BYTES);
    const chunk = reader.read(size);
    sent += chunk.length;
    windowSent += chunk.length;
    const last = sent >= limit;
    if (last && limit < length) {
      // Flush what the client is meant to get, then cut the connection mid-body.
      await new Promise<void>((resolve) => res.write(chunk, () => resolve()));
      res.socket?.destroy();
      res.destroy();
      return;
    }
    if (!res.write(chunk) && (await drained(res))) return;
    if (rate && rate > 0) {
      const due = windowStart + (windowSent / rate) * 1000;
      const wait = due - performance.now();
      if (wait >= 1) await sleep(wait);
    }
  }
  if (limit === 0 && length > 0) {
    res.socket?.destroy();
    res.destroy();
    return;
  }
  res.end();
}
