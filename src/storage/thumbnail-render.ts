// Turning a stored file into its thumbnails: two WebP sizes with sharp (decoded once, at most the medium size,
// the small one made from it), or, for what sharp cannot or should not decode, a placeholder SVG tile that
// names the kind of file (a video, a PDF...) or shows the first lines of a text. Pure: bytes in, bytes out;
// where they are kept is thumbnails.ts.
import type SharpModule from "sharp";
import { escapeHtml } from "../text/html.ts";
import { htmlToText } from "../text/html-to-text.ts";

export const THUMB_VARIANTS = ["s", "m"] as const;
export type ThumbVariant = (typeof THUMB_VARIANTS)[number];

/** The long side of each variant: a grid tile, and the lightbox/item image. */
export const THUMB_LONG_SIDE: Record<ThumbVariant, number> = { s: 320, m: 1280 };
const QUALITY = 75;
/**
 * libwebp's effort (0–6, default 4): 2 costs about 40% less CPU for about 10% more bytes (measured on a
 * 2400×1600 picture, docs/PERFORMANCE.md#thumbnails), and a tile stays far within its budget.
 */
const EFFORT = 2;
/** A small tile never passes this (the grid's budget per tile); re-encoded lower when it would. */
export const MAX_TILE_BYTES = 100 * 1024;
/** Larger originals are not decoded (a tile is no reason to hold hundreds of MB in memory). */
export const MAX_DECODE_BYTES = 128 * 1024 * 1024;
/** Pixels sharp may decode (its default guard against decompression bombs, made explicit). */
const MAX_INPUT_PIXELS = 268_402_689;

const VIDEO = new Set(["mp4", "webm", "mov", "m4v", "mkv", "avi", "flv", "wmv", "mpg", "mpeg"]);
const TEXT = new Set(["txt", "html", "htm", "md", "rtf"]);
const AUDIO = new Set(["mp3", "ogg", "wav", "flac", "m4a", "aac"]);

export type FileKind = "image" | "video" | "text" | "audio" | "other";

export function kindOfExtension(ext: string): FileKind {
  const e = ext.toLowerCase();
  if (VIDEO.has(e)) return "video";
  if (TEXT.has(e)) return "text";
  if (AUDIO.has(e)) return "audio";
  if (["pdf", "zip", "rar", "7z", "psd", "swf", "bin"].includes(e)) return "other";
  return "image";
}

// sharp (and libvips) load with the first thumbnail, not with every command that reaches the job catalogue
// (start-up, docs/PERFORMANCE.md#start-up).
let sharpModule: Promise<typeof SharpModule> | undefined;
const loadSharp = () => {
  sharpModule ??= import("sharp").then((m) => m.default);
  return sharpModule;
};

export type RenderedThumbs = Record<ThumbVariant, Buffer>;

/** Both WebP variants of an image; throws when sharp cannot decode it. */
export async function renderThumbnails(input: Buffer): Promise<RenderedThumbs> {
  const side = THUMB_LONG_SIDE.m;
  const sharp = await loadSharp();
  const m = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" })
    .rotate()
    .resize({ width: side, height: side, fit: "inside", withoutEnlargement: true })
    .webp({ quality: QUALITY, effort: EFFORT })
    .toBuffer();
  let s = await small(m, QUALITY);
  for (let q = QUALITY - 20; s.length > MAX_TILE_BYTES && q > 10; q -= 20) s = await small(m, q);
  return { s, m };
}

async function small(from: Buffer, quality: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const side = THUMB_LONG_SIDE.s;
  return sharp(from).resize({ width: side, height: side, fit: "inside", withoutEnlargement: true }).webp({ quality, effort: EFFORT }).toBuffer();
}

/** Whether `bytes` decode as a WebP image. */
export async function isReadableWebp(bytes: Buffer): Promise<boolean> {
  try {
    const sharp = await loadSharp();
    const meta = await sharp(bytes).metadata();
    if (meta.format !== "webp") return false;
    await sharp(bytes).raw().toBuffer();
    return true;
  } catch {
    return false;
  }
}

/** The small thumbnail as JPEG, for mail readers that show no WebP. */
export async function jpegOf(webp: Buffer): Promise<Buffer> {
  const sharp = await loadSharp();
  return sharp(webp).flatten({ background: "#ffffff" }).jpeg({ quality: 80 }).toBuffer();
}

const PLACEHOLDER_STYLE =
  "<style>.bg{fill:#e8eee9}.band{fill:#d9e4de}.mark{fill:#c9d6ce}.play{fill:#5d6f64}.ink{fill:#3c4a42}" +
  "@media (prefers-color-scheme: dark){.bg{fill:#1c2420}.band{fill:#25302a}.mark{fill:#34423a}.play{fill:#9fb3a7}.ink{fill:#c3d0c8}}</style>";

const LABEL: Record<FileKind, string> = { image: "image", video: "video", text: "text", audio: "audio", other: "file" };

/**
 * A square tile naming the file (e.g. "MP4 · video"); for a text, its first lines. Everything in it is
 * escaped text: no script, link or external reference. Its dark colours apply when the page showing it is dark
 * (an SVG shown as an <img> follows that page's color-scheme: src/http/pages/svg.ts).
 */
export function placeholderSvg(args: { ext: string; kind: FileKind; lines?: readonly string[] }): string {
  const ext =
    args.ext
      .toUpperCase()
      .replace(/[^A-Z0-9]/g, "")
      .slice(0, 8) || "FILE";
  const label = `${ext} · ${LABEL[args.kind]}`;
  const lines = (args.lines ?? []).slice(0, 9);
  const body = lines.map((l, i) => `<text class="ink" x="24" y="${64 + i * 24}" font-size="15">${escapeHtml(l)}</text>`).join("");
  const icon =
    args.kind === "video"
      ? `<circle class="mark" cx="160" cy="150" r="44"/><path class="play" d="M148 128 L148 172 L184 150 Z"/>`
      : lines.length === 0
        ? `<rect class="mark" x="120" y="104" width="80" height="96" rx="8"/>`
        : "";
  return `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320" font-family="system-ui, sans-serif">${PLACEHOLDER_STYLE}<rect class="bg" width="320" height="320"/>${icon}${body}<rect class="band" x="0" y="272" width="320" height="48"/><text class="ink" x="160" y="302" font-size="16" font-weight="600" text-anchor="middle">${escapeHtml(label)}</text></svg>`;
}

/** The first lines of a text or HTML file, each cut to fit the tile. */
export function firstLines(bytes: Buffer, ext: string): string[] {
  const head = bytes.subarray(0, 16 * 1024).toString("utf8");
  const plain = /^html?$/i.test(ext) ? htmlToText(head) : head;
  return plain
    .split(/\r?\n/)
    .map((l) => l.replace(/\s+/g, " ").trim())
    .filter((l) => l.length > 0)
    .slice(0, 9)
    .map((l) => (l.length > 34 ? `${l.slice(0, 33)}…` : l));
}
