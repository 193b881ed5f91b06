// One archived object answered from the blob store (src/storage/blob-store.ts), as res.sendFile answered a
// file of the archive folder before: the whole object, or one byte range of it (206 with Content-Range, 416
// outside it), with Content-Length, Accept-Ranges and an ETag (304 for a browser that has it). When the
// store hands out presigned URLs (an S3 bucket the browser can reach, DVAULT_S3_PRESIGN,
// docs/storage-readers.md), the answer is a 302 to one instead, so the bytes do not pass through this
// process at all.
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type express from "express";
import type { BlobStore } from "../storage/blob-store.ts";

export type SendBlobOptions = {
  store: BlobStore;
  /** How long a presigned URL stays good (DVAULT_S3_PRESIGN_TTL). */
  presignTtlSeconds: number;
  key: string;
  /** The stored MIME type; guessed from the key's extension when not known. */
  contentType: string | undefined;
  /** A file name to download as (Content-Disposition: attachment); shown inline when undefined. */
  attachment: string | undefined;
  /** The content's sha256: a strong ETag, since the bytes under a content address never change. */
  etag: string | undefined;
  headers: Record<string, string>;
};

/** The single range a request asks for, undefined for the whole object, or "unsatisfiable". */
function wantedRange(req: express.Request, size: number, etag: string | undefined): { start: number; end: number } | "unsatisfiable" | undefined {
  if (!req.headers.range) return undefined;
  // If-Range naming another version: the whole (current) object, as send() does.
  const ifRange = req.headers["if-range"];
  if (ifRange && (!etag || ifRange !== `"${etag}"`)) return undefined;
  const ranges = req.range(size, { combine: true });
  if (ranges === -1) return "unsatisfiable";
  // Malformed, or several ranges (no multipart answers): the whole object.
  if (ranges === undefined || ranges === -2 || ranges.length !== 1 || ranges.type !== "bytes") return undefined;
  const [r] = ranges;
  return r ? { start: r.start, end: r.end } : undefined;
}

export async function sendBlob(req: express.Request, res: express.Response, o: SendBlobOptions): Promise<void> {
  const notFound = () => void res.status(404).type("text").send("not in the archive\n");
  res.set(o.headers);
  // attachment() guesses a type from the name: the stored MIME type is set after it, and wins.
  if (o.attachment) res.attachment(o.attachment);
  res.type(o.contentType ?? (path.posix.extname(o.key) || "application/octet-stream"));
  const presigned = await o.store.presignGet(o.key, {
    ttlSeconds: o.presignTtlSeconds,
    ...(o.contentType ? { contentType: o.contentType } : {}),
    ...(o.attachment ? { filename: o.attachment } : {}),
  });
  if (presigned) {
    // A row whose object is gone gets dvault's 404, not the bucket's error page after the redirect.
    if (!(await o.store.stat(o.key))) return notFound();
    // Not cached: the URL expires long before the browser would reuse the answer.
    res.set("Cache-Control", "no-store");
    return res.redirect(302, presigned);
  }
  // The bytes under a content address never change: a browser holding this ETag has them.
  if (o.etag && req.headers["if-none-match"]?.split(/\s*,\s*/).includes(`"${o.etag}"`)) {
    res.removeHeader("Content-Disposition");
    return void res.status(304).set("ETag", `"${o.etag}"`).end();
  }
  let range: { start: number; end: number } | undefined;
  if (req.headers.range) {
    const info = await o.store.stat(o.key);
    if (!info) return notFound();
    const wanted = wantedRange(req, info.size, o.etag);
    if (wanted === "unsatisfiable") {
      res.removeHeader("Content-Disposition");
      return void res.status(416).set("Content-Range", `bytes */${info.size}`).type("text").send("range not satisfiable\n");
    }
    range = wanted;
  }
  const found = await o.store.openRead(o.key, range);
  if (!found) return notFound();
  res.set("Accept-Ranges", "bytes");
  if (o.etag) res.set("ETag", `"${o.etag}"`);
  if (found.range) {
    res.status(206).set({
      "Content-Range": `bytes ${found.range.start}-${found.range.end}/${found.size}`,
      "Content-Length": String(found.range.end - found.range.start + 1),
    });
  } else {
    res.status(200).set("Content-Length", String(found.size));
  }
  if (req.method === "HEAD") {
    (found.body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    return void res.end();
  }
  // A store that fails mid-body ends the connection: the client sees a short body, never a wrong one.
  await pipeline(found.body, res).catch(() => res.destroy());
}
