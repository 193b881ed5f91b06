// Thumbnails by content address: GET /thumb/s/<sha256>.webp (a grid tile, 320 px on the long side) and
// GET /thumb/m/<sha256>.webp (1280 px). Stored ones are served as they are, missing ones made on demand from
// the original and stored (src/storage/thumbnails.ts). A sha256 names its bytes for ever, so a WebP is cached
// as immutable; a file that cannot be decoded gets its placeholder SVG, cached for a shorter while (a later
// dvault may decode it), and a sha256 the archive does not hold a 404 with a quiet tile, so an <img> still
// shows something.
import type { Response } from "express";
import type express from "express";
import { placeholderSvg } from "../../storage/thumbnail-render.ts";
import { isSha256, THUMB_VARIANTS, type ThumbVariantName, Thumbnails } from "../../storage/thumbnails.ts";
import { openBlobStore } from "../../storage/store.ts";
import { type DashboardContext, FILE_CSP } from "../context.ts";

const IMMUTABLE = "public, max-age=31536000, immutable";
const PLACEHOLDER_CACHE = "public, max-age=3600";
const NOT_ARCHIVED_SVG = placeholderSvg({ ext: "", kind: "other" }).replace("FILE · file", "not archived");

export function thumbsRoutes(app: express.Express, ctx: DashboardContext): void {
  const send = thumbSender(ctx);
  app.get("/thumb/:variant/:file", (req, res) => send(res, String(req.params.variant), String(req.params.file)));
}

/** Answers with a thumbnail (variant "s" or "m", file "<sha256>.webp"): the dashboard's /thumb and the feeds' thumbnails. */
export function thumbSender(ctx: DashboardContext): (res: Response, variantParam: string, fileParam: string) => Promise<unknown> {
  const thumbs = new Thumbnails(openBlobStore(ctx.config));
  return async (res, variantParam, fileParam) => {
    const variant = variantParam as ThumbVariantName;
    const m = /^([0-9a-f]{64})\.webp$/.exec(fileParam);
    if (!(THUMB_VARIANTS as readonly string[]).includes(variant) || !m?.[1] || !isSha256(m[1])) {
      return res.status(404).type("text").send("no such thumbnail\n");
    }
    res.set({ "Content-Security-Policy": FILE_CSP, "X-Content-Type-Options": "nosniff" });
    const thumb = await thumbs.get(m[1], variant).catch((err: unknown) => {
      ctx.log.warn({ err, sha256: m[1] }, "thumbnail could not be made");
      return undefined;
    });
    if (!thumb) return res.status(404).set("Cache-Control", "no-store").type("image/svg+xml").send(NOT_ARCHIVED_SVG);
    if (thumb.type === "svg") return res.status(200).set("Cache-Control", PLACEHOLDER_CACHE).type("image/svg+xml").send(thumb.bytes);
    return res.status(200).set("Cache-Control", IMMUTABLE).type("image/webp").send(thumb.bytes);
  };
}
