// The files the simulator's CDN serves: each one deterministic from its deviation, variant and version. An
// image file starts with a real picture (pictures.ts: drawn from the deviation at the announced aspect ratio,
// in its format) and is padded to the announced size by a seekable keystream (AES-128-CTR over zeros), which
// decoders ignore after the image's end; a video starts with its magic number. So a 1 GB original is streamed
// at any offset without ever being held in memory, and its sha256 computed by streaming too.
import { createCipheriv, createHash } from "node:crypto";
import type { SimDeviation } from "./dataset.ts";
import { PICTURE_FORMATS, pictureBytes, pictureKey, type PictureFormat, type PictureSpec } from "./pictures.ts";
import { hashString } from "./rng.ts";

/** original = /deviation/download's file; the others are the renditions in deviation objects. */
export type CdnVariant = "original" | "fullview" | "preview" | "thumb" | "video";

export const CDN_VARIANTS: readonly CdnVariant[] = ["original", "fullview", "preview", "thumb", "video"];

export type SimFile = {
  deviationid: string;
  variant: CdnVariant;
  /** Distinguishes renditions of one variant (thumb sizes, video qualities, blurred or not). */
  label: string;
  size: number;
  ext: string;
  contentType: string;
  /** Strong validator: changes whenever the bytes do (an edit bumps the deviation's version). */
  etag: string;
  /** 16-byte AES key the bytes are derived from. */
  key: Buffer;
  /** The picture at the head of an image file (absent for videos). */
  picture?: PictureSpec;
};

const MAGIC: Record<string, Buffer> = {
  jpg: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  gif: Buffer.from("GIF89a"),
  webp: Buffer.from("RIFF\0\0\0\0WEBP"),
  mp4: Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70]),
};

const CONTENT_TYPES: Record<string, string> = { jpg: "image/jpeg", png: "image/png", gif: "image/gif", webp: "image/webp", mp4: "video/mp4" };

/** The longest side a variant's picture is drawn at (halved until it fits the file's size). */
const PICTURE_LONG_SIDE: Record<Exclude<CdnVariant, "video">, number> = { original: 400, fullview: 400, preview: 256, thumb: 150 };

export function contentTypeFor(filename: string): string {
  const ext = filename.slice(filename.lastIndexOf(".") + 1).toLowerCase();
  return CONTENT_TYPES[ext] ?? "application/octet-stream";
}

/** The original's size: the recorded filesize (configurable per deviation). */
export function originalSize(d: SimDeviation): number {
  return d.image?.filesize ?? 0;
}

/** Renditions are smaller than the original, and distinct from each other. */
export function renditionSize(d: SimDeviation, variant: Exclude<CdnVariant, "original" | "video">, label = ""): number {
  const full = Math.max(2, originalSize(d) || 4096);
  const cap = (n: number) => Math.max(1, Math.min(full - 1, Math.floor(n)));
  if (variant === "fullview") return cap(full * 0.6);
  if (variant === "preview") return cap(full * 0.2);
  return cap(Math.min(full * 0.05, 16_384) + (hashString(label) % 2048));
}

/** The file behind a CDN path, or undefined when the deviation has no such file. */
export function simFile(d: SimDeviation, variant: CdnVariant, label: string, filename: string): SimFile | undefined {
  let size: number;
  let ext: string;
  if (variant === "original") {
    if (!d.image) return undefined;
    size = originalSize(d);
    ext = d.kind === "video" ? "mp4" : d.image.ext;
  } else if (variant === "video") {
    const quality = /-(\d+p)\.mp4$/.exec(filename)?.[1];
    const v = d.videos?.find((x) => x.quality === quality);
    if (!v) return undefined;
    size = v.filesize;
    ext = "mp4";
  } else {
    if (!d.image) return undefined;
    size = renditionSize(d, variant, label);
    ext = filename.slice(filename.lastIndexOf(".") + 1).toLowerCase() || "jpg";
  }
  // The original's bytes do not depend on the (possibly hostile) filename, only on the deviation.
  const seed = `${d.deviationid}:${variant}:${variant === "original" ? "" : label}:${d.version}`;
  const key = createHash("sha256").update(seed).digest().subarray(0, 16);
  const picture = variant === "video" ? undefined : pictureOf(d, variant, label, ext, size, seed);
  return {
    deviationid: d.deviationid,
    variant,
    label,
    size,
    ext,
    contentType: CONTENT_TYPES[ext] ?? "application/octet-stream",
    etag: `"${key.toString("hex").slice(0, 16)}-${size.toString(16)}"`,
    key,
    ...(picture ? { picture } : {}),
  };
}

/**
 * What an image file's picture shows: the original at the deviation's dimensions, a rendition at the ones its
 * path announces (the "w_,h_" its JSON gives as width and height), blurred when its path says so.
 */
function pictureOf(d: SimDeviation, variant: Exclude<CdnVariant, "video">, label: string, ext: string, size: number, seed: string): PictureSpec | undefined {
  if (!d.image || !(PICTURE_FORMATS as readonly string[]).includes(ext)) return undefined;
  const ops = /w_(\d+),h_(\d+)/.exec(label);
  const width = ops ? Number(ops[1]) : d.image.width;
  const height = ops ? Number(ops[2]) : d.image.height;
  const format = ext as PictureFormat;
  return {
    format,
    width,
    height,
    longSide: Math.min(PICTURE_LONG_SIDE[variant], Math.max(width, height)),
    budget: size,
    title: d.title,
    seed,
    transparent: d.image.transparency && format !== "jpg",
    blur: Number(/,blur_(\d+)/.exec(label)?.[1] ?? 0),
  };
}

const ZEROS = Buffer.alloc(1024 * 1024 + 16);

export type FileReader = {
  /** The next `n` bytes (n ≤ 1 MiB). */
  read(n: number): Buffer;
};

/**
 * Reads a file from byte `start`: its head (the picture, or the magic number) and then the keystream, which is
 * seekable, so a Range costs nothing extra. Async only for the picture, drawn once and cached.
 */
export async function openFile(file: SimFile, start = 0): Promise<FileReader> {
  const head = (file.picture ? await pictureBytes(file.picture) : undefined) ?? MAGIC[file.ext];
  const block = Math.floor(start / 16);
  let skip = start % 16;
  const iv = Buffer.alloc(16);
  iv.writeBigUInt64BE(BigInt(block), 8);
  const cipher = createCipheriv("aes-128-ctr", file.key, iv);
  let pos = start;
  return {
    read(n: number): Buffer {
      if (n > ZEROS.length - 16) throw new RangeError("openFile().read() takes at most 1 MiB at a time");
      const count = Math.max(0, Math.min(n, file.size - pos));
      const raw = cipher.update(ZEROS.subarray(0, count + skip));
      const out = skip > 0 ? raw.subarray(skip) : raw;
      skip = 0;
      if (head && pos < head.length) head.copy(out, 0, pos, Math.min(head.length, pos + out.length));
      pos += out.length;
      return out;
    },
  };
}

/** The whole file in memory: only for small files (tests comparing bytes). */
export async function fileBuffer(file: SimFile, maxBytes = 256 * 1024 * 1024): Promise<Buffer> {
  if (file.size > maxBytes) throw new RangeError(`file of ${file.size} bytes is too large to hold in memory; use fileSha256()`);
  const reader = await openFile(file);
  const parts: Buffer[] = [];
  for (let left = file.size; left > 0; ) {
    const chunk = reader.read(Math.min(left, 1024 * 1024));
    parts.push(chunk);
    left -= chunk.length;
  }
  return Buffer.concat(parts, file.size);
}

const shaCache = new Map<string, Promise<string>>();

/** sha256 (hex) of a file, streamed in 1 MiB chunks and yielding to the event loop; cached per content. */
export function fileSha256(file: SimFile): Promise<string> {
  const cacheKey = `${file.key.toString("hex")}:${file.size}:${file.picture ? pictureKey(file.picture) : ""}`;
  const hit = shaCache.get(cacheKey);
  if (hit) return hit;
  const computed = (async () => {
    const hash = createHash("sha256");
    const reader = await openFile(file);
    let done = 0;
    while (done < file.size) {
      const chunk = reader.read(Math.min(file.size - done, 1024 * 1024));
      hash.update(chunk);
      done += chunk.length;
      // Keep the simulator's own server responsive while hashing a large file.
      if (done % (32 * 1024 * 1024) === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return hash.digest("hex");
  })();
  shaCache.set(cacheKey, computed);
  if (shaCache.size > 10_000) shaCache.delete(shaCache.keys().next().value as string);
  return computed;
}
