// The simulator's CDN under /_cdn/: signed, expiring URLs (JWT-shaped tokens like wixmp's) and
// deterministic bytes per deviation, so a downloader's checksums can be verified against the truth.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { SimDeviation } from "./dataset.ts";
import type { Reply } from "./http.ts";
import { hashString } from "./rng.ts";
import type { SimWorld } from "./world.ts";

export type CdnVariant = "original" | "fullview" | "preview" | "thumb";

/** How long signed URLs stay valid (a 2020 sample had 610 s). */
export const CDN_URL_TTL_S = 600;

function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString("base64url");
}

export function signCdnPath(world: SimWorld, path: string, ttlS = CDN_URL_TTL_S): string {
  const nowS = Math.floor(world.clock.nowMs() / 1000);
  const header = b64url(JSON.stringify({ typ: "JWT", alg: "HS256" }));
  const payload = b64url(JSON.stringify({ sub: "urn:app:sim", iss: "urn:app:sim", obj: [[{ path }]], aud: ["urn:service:file.download"], iat: nowS, exp: nowS + ttlS }));
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

const MAGIC: Record<string, Buffer> = {
  jpg: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  gif: Buffer.from("GIF89a"),
  mp4: Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70]),
};

/** Deterministic bytes of a deviation's file variant (the original's length is its recorded filesize). */
export function deviationBytes(d: SimDeviation, variant: CdnVariant = "original"): Buffer {
  const ext = d.kind === "video" && variant === "original" ? "mp4" : (d.image?.ext ?? "jpg");
  const full = d.image?.filesize ?? 4096;
  const size = variant === "original" ? full : variant === "fullview" ? Math.max(256, Math.floor(full * 0.6)) : variant === "preview" ? Math.max(256, Math.floor(full * 0.2)) : 2048;
  const buf = Buffer.allocUnsafe(size);
  let x = hashString(`${d.deviationid}:${variant}:${d.version}`) || 1;
  let i = 0;
  for (; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeUInt32LE(x >>> 0, i);
  }
  for (; i < size; i++) buf[i] = i & 0xff;
  (MAGIC[ext] ?? MAGIC.jpg!).copy(buf, 0, 0, Math.min(size, 8));
  return buf;
}

export function contentTypeFor(filename: string): string {
  if (filename.endsWith(".png")) return "image/png";
  if (filename.endsWith(".gif")) return "image/gif";
  if (filename.endsWith(".mp4")) return "video/mp4";
  return "image/jpeg";
}

export function originalFilename(d: SimDeviation, username: string): string {
  const ext = d.image?.ext ?? "jpg";
  return `${d.slug.toLowerCase().replace(/[^a-z0-9]+/g, "_")}_by_${username.toLowerCase()}_d${d.numericId.toString(36)}.${ext}`;
}

/** Paths: /_cdn/<variant>/<deviationid>/<filename>. */
export function cdnPath(d: SimDeviation, variant: CdnVariant, filename: string): string {
  return `/_cdn/${variant}/${d.deviationid.toLowerCase()}/${encodeURIComponent(filename)}`;
}

export type CdnRequest = { path: string; token: string | undefined; headers: Record<string, string | string[] | undefined> };

/**
 * Extension point for the downloads work (quotas, Range, mid-body resets): a hook that may answer a
 * CDN request itself before the default handler serves the whole file.
 */
export type CdnHook = (world: SimWorld, req: CdnRequest, deviation: SimDeviation, bytes: Buffer) => Reply | undefined;

export function serveCdn(world: SimWorld, req: CdnRequest, hooks: readonly CdnHook[] = []): Reply {
  const m = /^\/_cdn\/(original|fullview|preview|thumb)\/([0-9a-f-]{36})\/([^/]+)$/.exec(req.path);
  if (!m) return { status: 404, text: "Not Found", contentType: "text/plain" };
  const check = verifyCdnToken(world, req.path, req.token);
  if (!check.ok) {
    const status = check.reason === "missing" ? 401 : 403;
    return { status, text: `<Error><Code>AccessDenied</Code><Message>${check.reason === "expired" ? "Token expired" : "Unauthorized"}</Message></Error>`, contentType: "application/xml" };
  }
  const d = world.data.deviations.get((m[2] as string).toUpperCase());
  if (!d || d.isDeleted) return { status: 404, text: "Not Found", contentType: "text/plain" };
  const bytes = deviationBytes(d, m[1] as CdnVariant);
  for (const hook of hooks) {
    const reply = hook(world, req, d, bytes);
    if (reply) return reply;
  }
  return { status: 200, text: bytes, contentType: contentTypeFor(decodeURIComponent(m[3] as string)), headers: { "cache-control": "max-age=31536000", etag: `"${hashString(bytes.subarray(0, 64).toString("hex")).toString(16)}-${bytes.length}"` } };
}
