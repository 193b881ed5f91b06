// The pictures behind the simulator's image files: a small real image per file, drawn from its deviation (a
// gradient, a few shapes and its title, all chosen by a generator seeded with the deviation, its variant and
// version), at the aspect ratio the API announces for it, in its format (JPEG, PNG, GIF or WebP). The CDN puts
// it at the head of the file and pads it to the announced size (files.ts): decoders stop at the image's end
// and ignore what follows. Each picture is encoded once and kept in memory, so Range requests, sha256 and
// multi-megabyte originals cost no more than they did.
import type SharpModule from "sharp";
import { createRng, hashString } from "./rng.ts";

export type PictureFormat = "jpg" | "png" | "gif" | "webp";

export const PICTURE_FORMATS: readonly PictureFormat[] = ["jpg", "png", "gif", "webp"];

export type PictureSpec = {
  format: PictureFormat;
  /** The dimensions the API announces for this file: the picture has their aspect ratio, not their size. */
  width: number;
  height: number;
  /** The longest side drawn, in pixels, before it is halved to fit `budget`. */
  longSide: number;
  /** The file's size: the encoded picture must fit in it (the rest is padding). */
  budget: number;
  title: string;
  /** Seeds every drawing choice (the deviation, variant, rendition and version). */
  seed: string;
  /** Whether the work has transparency: the background is left out (formats with an alpha channel). */
  transparent: boolean;
  /** Blur radius of the rendition (mature or locked works: the ",blur_NN" of its path), 0 for none. */
  blur: number;
};

/** Below this the picture is a few pixels only: the file keeps its magic number and padding instead. */
const MIN_LONG_SIDE = 8;
/** Encoded pictures kept in memory across every simulator of the process (the same spec draws the same bytes). */
const CACHE_BYTES = 64 * 1024 * 1024;

let sharpModule: Promise<typeof SharpModule> | undefined;
const loadSharp = () => {
  sharpModule ??= import("sharp").then((m) => m.default);
  return sharpModule;
};

const cache = new Map<string, { bytes: Promise<Buffer | undefined>; size: number }>();
let cachedBytes = 0;

/** The spec as a cache key (and a stable part of ETags and sha256 cache keys). */
export function pictureKey(spec: PictureSpec): string {
  return JSON.stringify([spec.format, spec.width, spec.height, spec.longSide, spec.budget, spec.title, spec.seed, spec.transparent, spec.blur]);
}

/**
 * The encoded picture of a spec, no larger than its budget; undefined when even the smallest does not fit
 * (a file of a few hundred bytes) or the encoder failed, and the file then keeps its magic number only.
 */
export function pictureBytes(spec: PictureSpec): Promise<Buffer | undefined> {
  const key = pictureKey(spec);
  const hit = cache.get(key);
  if (hit) {
    // Most recently used last: eviction takes the oldest first.
    cache.delete(key);
    cache.set(key, hit);
    return hit.bytes;
  }
  const entry = { bytes: encodeWithin(spec), size: 0 };
  cache.set(key, entry);
  void entry.bytes.then((b) => {
    if (cache.get(key) !== entry) return;
    entry.size = b?.length ?? 0;
    cachedBytes += entry.size;
    for (const [k, e] of cache) {
      if (cachedBytes <= CACHE_BYTES) break;
      cache.delete(k);
      cachedBytes -= e.size;
    }
  });
  return entry.bytes;
}

/**
 * Bytes an encoded scene takes, about: a header plus a cost per pixel (measured on these scenes, rounded up), so
 * a small file's picture is drawn small at once instead of encoded large and halved.
 */
const WEIGHT: Record<PictureFormat, { header: number; perPixel: number }> = {
  jpg: { header: 700, perPixel: 0.12 },
  png: { header: 300, perPixel: 0.45 },
  gif: { header: 200, perPixel: 0.12 },
  webp: { header: 100, perPixel: 0.1 },
};

/** The longest side whose picture should fit the budget (at most the spec's own). */
function sideFor(spec: PictureSpec): number {
  const { header, perPixel } = WEIGHT[spec.format];
  const ratio = Math.min(spec.width, spec.height) / Math.max(1, spec.width, spec.height);
  const fits = Math.floor(Math.sqrt(Math.max(0, spec.budget - header) / (perPixel * Math.max(ratio, 0.01))));
  return Math.max(MIN_LONG_SIDE, Math.min(spec.longSide, fits));
}

async function encodeWithin(spec: PictureSpec): Promise<Buffer | undefined> {
  try {
    for (let side = sideFor(spec); side >= MIN_LONG_SIDE; side = Math.floor(side / 2)) {
      const bytes = await encode(spec, side);
      if (bytes.length <= spec.budget) return bytes;
    }
  } catch {
    // The simulator keeps serving: the file falls back to its magic number and padding.
  }
  return undefined;
}

/** The announced dimensions scaled so the longer side is `side` pixels, each side rounded to a whole pixel. */
export function drawnSize(spec: Pick<PictureSpec, "width" | "height">, side: number): { width: number; height: number } {
  const w = Math.max(1, spec.width);
  const h = Math.max(1, spec.height);
  const f = side / Math.max(w, h);
  return { width: Math.max(1, Math.round(w * f)), height: Math.max(1, Math.round(h * f)) };
}

async function encode(spec: PictureSpec, side: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const { width, height } = drawnSize(spec, side);
  let img = sharp(Buffer.from(pictureSvg(spec, width, height)));
  if (spec.blur > 0) img = img.blur(1 + spec.blur / 10);
  switch (spec.format) {
    case "jpg":
      return img.flatten({ background: "#ffffff" }).jpeg({ quality: 80 }).toBuffer();
    case "png":
      return img.png({ compressionLevel: 6 }).toBuffer();
    // Few colours, no dithering and the least effort: a palette search over a gradient is otherwise 10× slower.
    case "gif":
      return img.gif({ colours: 16, dither: 0, effort: 1 }).toBuffer();
    case "webp":
      return img.webp({ quality: 80, effort: 2 }).toBuffer();
  }
}

/** The scene: a gradient (left out for transparent works), shapes, and the title on a band at the bottom. */
export function pictureSvg(spec: PictureSpec, width: number, height: number): string {
  const rng = createRng(hashString(spec.seed));
  const hue = rng.int(0, 359);
  const colour = () => `hsl(${rng.int(0, 359)},${rng.int(45, 85)}%,${rng.int(30, 70)}%)`;
  const short = Math.min(width, height);
  const parts: string[] = [];
  parts.push(
    `<defs><linearGradient id="g" x1="0" y1="0" x2="${rng.next().toFixed(2)}" y2="1"><stop offset="0" stop-color="hsl(${hue},60%,25%)"/><stop offset="1" stop-color="hsl(${(hue + rng.int(60, 180)) % 360},65%,70%)"/></linearGradient></defs>`,
  );
  if (!spec.transparent) parts.push(`<rect width="${width}" height="${height}" fill="url(#g)"/>`);
  for (let i = rng.int(3, 7); i > 0; i--) {
    const x = rng.int(0, width);
    const y = rng.int(0, height);
    const r = Math.max(2, Math.round(short * (0.08 + rng.next() * 0.3)));
    const fill = `fill="${colour()}" fill-opacity="${(0.55 + rng.next() * 0.45).toFixed(2)}"`;
    const shape = rng.int(0, 2);
    if (shape === 0) parts.push(`<circle cx="${x}" cy="${y}" r="${r}" ${fill}/>`);
    else if (shape === 1)
      parts.push(`<rect x="${x - r}" y="${y - r / 2}" width="${2 * r}" height="${r}" transform="rotate(${rng.int(0, 89)} ${x} ${y})" ${fill}/>`);
    else parts.push(`<polygon points="${x},${y - r} ${x + r},${y + r} ${x - r},${y + r}" ${fill}/>`);
  }
  // A sans-serif letter is about 0.6 em wide: the title takes at most nine tenths of the width, or is cut.
  const title = svgChars(spec.title);
  const fontSize = Math.max(6, Math.min(Math.round(short / 7), Math.floor((width * 0.9) / (0.6 * Math.max(1, title.length)))));
  const text = escapeXml(
    title
      .slice(0, Math.max(4, Math.floor((width * 0.9) / (fontSize * 0.6))))
      .join("")
      .trim(),
  );
  if (text && height >= 2 * fontSize) {
    parts.push(`<rect y="${height - Math.round(fontSize * 1.6)}" width="${width}" height="${Math.round(fontSize * 1.6)}" fill="#000" fill-opacity="0.45"/>`);
    parts.push(
      `<text x="${Math.round(width / 2)}" y="${height - Math.round(fontSize * 0.5)}" font-family="sans-serif" font-size="${fontSize}" fill="#fff" text-anchor="middle">${text}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${parts.join("")}</svg>`;
}

/** A title's characters that SVG text may hold: control, format (bidi) and non-XML characters left out. */
function svgChars(title: string): string[] {
  return [...title.replace(/[\p{Cc}\p{Cf}\p{Cs}\uFFFE\uFFFF]/gu, "")].slice(0, 200);
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
