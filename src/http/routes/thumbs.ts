// Thumbnails by content address: GET /thumb/s/<sha256>.webp (a grid tile, 320 px on the long side) and
// GET /thumb/m/<sha256>.webp (1280 px). Stored ones are served as they are, missing ones made on demand from
// the original and stored (src/storage/thumbnails.ts). A sha256 names its bytes for ever, so a WebP is cached
// as immutable; a file that cannot be decoded gets its placeholder SVG, cached for a shorter while (a later
// dvault may decode it), a sha256 the archive does not hold a 404 with a quiet tile, so an <img> still shows
// something, and a storage that fails the read a 503 with a tile that says so. A digest's links carry a signature instead of the dashboard's token (signedThumbRoutes).
import type { Response } from "express";
import type express from "express";
import { placeholderSvg } from "../../storage/thumbnail-render.ts";
import { isSha256, THUMB_VARIANTS, type ThumbVariantName, Thumbnails } from "../../storage/thumbnails.ts";
import { thisWriterTag } from "../../queue/holder.ts";
import { openBlobStore } from "../../storage/store.ts";
import { existingSecretKey } from "../../secret-key.ts";
import type { DashboardContext } from "../context.ts";
import { FILE_CSP, one } from "../respond.ts";
import { THUMB_SIG_PARAM, thumbLinkKey, thumbSigValid } from "../../storage/thumb-link.ts";

const IMMUTABLE = "public, max-age=31536000, immutable";
const PLACEHOLDER_CACHE = "public, max-age=3600";
const NOT_ARCHIVED_SVG = placeholderSvg({ ext: "", kind: "other" }).replace("FILE · file", "not archived");
/** The archive's storage failed the read (a bucket down, a disk error): the picture may well be archived. */
const UNAVAILABLE_SVG = placeholderSvg({ ext: "", kind: "other" }).replace("FILE · file", "storage not answering");

export function thumbsRoutes(app: express.Express, ctx: DashboardContext): void {
  const send = thumbSender(ctx);
  app.get("/thumb/:variant/:file", (req, res) => send(res, String(req.params.variant), String(req.params.file)));
}

/**
 * The digests' signed thumbnail links (src/storage/thumb-link.ts), installed as the feeds are: after the Host
 * check and before the dashboard token's. A signature valid for exactly this variant and sha256 stands in
 * for the token and opens that one thumbnail; a request with a wrong signature, or none, goes on to the
 * token's check like any other (a 401 when the dashboard has a token).
 */
export function signedThumbRoutes(app: express.Express, ctx: DashboardContext): void {
  const send = thumbSender(ctx);
  let linkKey: Buffer | undefined;
  // Read when a signed link first comes, never created here: without a key nothing was ever signed.
  const keyOf = (): Buffer | undefined => {
    if (linkKey) return linkKey;
    const secret = existingSecretKey(ctx.config);
    if (secret) linkKey = thumbLinkKey(secret.key);
    return linkKey;
  };
  app.get("/thumb/:variant/:file", (req, res, next) => {
    const sig = one(req.query[THUMB_SIG_PARAM]);
    const variant = String(req.params.variant);
    const file = String(req.params.file);
    const sha256 = /^([0-9a-f]{64})\.webp$/.exec(file)?.[1];
    if (!sig || !sha256 || !isVariant(variant)) return next();
    let key: Buffer | undefined;
    try {
      key = keyOf();
    } catch (err) {
      // An unreadable key file (a UserError saying what to fix) is the operator's to see, not the caller's.
      ctx.log.warn({ err }, "dashboard: the secret key cannot be read, so signed thumbnail links are not honoured");
      return next();
    }
    if (!key || !thumbSigValid(key, variant, sha256, sig)) {
      ctx.log.debug({ path: req.path }, "dashboard: a thumbnail link's signature does not match");
      return next();
    }
    return send(res, variant, file);
  });
}

function isVariant(value: string): value is ThumbVariantName {
  return (THUMB_VARIANTS as readonly string[]).includes(value);
}

/** Answers with a thumbnail (variant "s" or "m", file "<sha256>.webp"): the dashboard's /thumb and the feeds' thumbnails. */
export function thumbSender(ctx: DashboardContext): (res: Response, variantParam: string, fileParam: string) => Promise<unknown> {
  // Named as this process's writes, so that a start removes the partial file of one killed mid-thumbnail.
  const thumbs = new Thumbnails(openBlobStore(ctx.config, { writer: thisWriterTag() }));
  return async (res, variantParam, fileParam) => {
    const variant = variantParam;
    const m = /^([0-9a-f]{64})\.webp$/.exec(fileParam);
    if (!isVariant(variant) || !m?.[1] || !isSha256(m[1])) {
      return res.status(404).type("text").send("no such thumbnail\n");
    }
    res.set({ "Content-Security-Policy": FILE_CSP, "X-Content-Type-Options": "nosniff" });
    const thumb = await thumbs.get(m[1], variant).catch((err: unknown) => {
      ctx.log.warn({ err, sha256: m[1] }, "thumbnail could not be made");
      return "failed" as const;
    });
    // A failed read is a 503, never the 404 of a picture the archive does not hold.
    if (thumb === "failed") return res.status(503).set({ "Cache-Control": "no-store", "Retry-After": "30" }).type("image/svg+xml").send(UNAVAILABLE_SVG);
    if (!thumb) return res.status(404).set("Cache-Control", "no-store").type("image/svg+xml").send(NOT_ARCHIVED_SVG);
    if (thumb.type === "svg") return res.status(200).set("Cache-Control", PLACEHOLDER_CACHE).type("image/svg+xml").send(thumb.bytes);
    return res.status(200).set("Cache-Control", IMMUTABLE).type("image/webp").send(thumb.bytes);
  };
}
