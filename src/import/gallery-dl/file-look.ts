// What a file's bytes show, for telling whether it is the work it is named for: at a glance, the format of its
// first bytes and whether its first or (for a picture) last bytes are all zeros (a sparse file, or a download
// preallocated to its size and never finished); looked at, a picture's dimensions too, from a full decode
// (sharp, failing on any error) or, past DECODE_LIMIT, its header.
import fs from "node:fs/promises";
import type SharpModule from "sharp";
import { formatOfBytes, type FileFormat } from "./file-identity.ts";

export type FileLook = {
  format: FileFormat | null;
  /** Its first bytes are all zeros: no file format starts so. */
  zeros: boolean;
  /** A picture whose last bytes are all zeros: the formats pictures come in end otherwise. */
  zeroTail: boolean;
  /** For a picture: its dimensions as shown (EXIF orientation applied), or why it does not decode. */
  picture?: { width: number; height: number; decoded: boolean } | { error: string };
  /** The file as it was read: the adoption refuses it if it is another one by the time it is hashed. */
  stat: { ino: number; size: number; mtimeMs: number };
};

/** The first bytes read for the format and a header (a JPEG's EXIF and ICC segments can come before its size). */
const HEAD_BYTES = 1024 * 1024;
/** How many first (or last) bytes all zero make a file no file format (or a picture cut short). */
const ZERO_RUN = 4096;
/** Pictures up to this size are decoded whole (held in memory while decoded); larger ones by their header only. */
export const DECODE_LIMIT = 32 * 1024 * 1024;
/** Pictures of more pixels are decoded shrunk, never held whole (at sharp's limit of 268 MP that would be 800 MB). */
const SHRINK_ABOVE_PIXELS = 4_000_000;
/** Pixels sharp may decode (its own guard against decompression bombs, as the thumbnails set it). */
const MAX_INPUT_PIXELS = 268_402_689;

let sharpModule: Promise<typeof SharpModule> | undefined;
const loadSharp = () => {
  sharpModule ??= import("sharp").then((m) => m.default);
  return sharpModule;
};

type Opened = { read(offset: number, length: number): Promise<Buffer>; stat: FileLook["stat"] };

/**
 * Runs `use` on a user's file opened as a regular file: without following a link, without waiting on a FIFO,
 * anything but a regular file refused (code ENOTFILE). Small on purpose: the import's one safe way of opening a
 * user's file should take its place.
 */
async function withRegularFile<T>(abs: string, use: (file: Opened) => Promise<T>): Promise<T> {
  const handle = await fs.open(abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw Object.assign(new Error(`${abs} is not a regular file`), { code: "ENOTFILE" });
    const read = async (offset: number, length: number): Promise<Buffer> => {
      const bytes = Buffer.alloc(Math.max(0, Math.min(length, st.size - offset)));
      let got = 0;
      while (got < bytes.length) {
        const { bytesRead } = await handle.read(bytes, got, bytes.length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return bytes.subarray(0, got);
    };
    return await use({ read, stat: { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs } });
  } finally {
    await handle.close();
  }
}

const allZero = (bytes: Buffer) => bytes.length > 0 && bytes.every((b) => b === 0);

/** The format and the zeros of a file from its first and last bytes: cheap, read before it is hashed. */
export function glanceAtFile(abs: string): Promise<FileLook> {
  return withRegularFile(abs, async ({ read, stat }) => glance(await read(0, ZERO_RUN), () => read(Math.max(0, stat.size - ZERO_RUN), ZERO_RUN), stat));
}

/** The glance, and for a picture its decode (the whole file up to DECODE_LIMIT, else its header). */
export function lookAtFile(abs: string): Promise<FileLook> {
  return withRegularFile(abs, async ({ read, stat }) => {
    const whole = stat.size <= DECODE_LIMIT;
    const head = await read(0, whole ? stat.size : HEAD_BYTES);
    const look = await glance(
      head,
      async () => (whole ? head.subarray(Math.max(0, head.length - ZERO_RUN)) : read(Math.max(0, stat.size - ZERO_RUN), ZERO_RUN)),
      stat,
    );
    if (look.format?.picture) look.picture = await pictureOf(head, whole);
    return look;
  });
}

async function glance(head: Buffer, tail: () => Promise<Buffer>, stat: FileLook["stat"]): Promise<FileLook> {
  const format = formatOfBytes(head);
  const zeroTail = format?.picture === true && stat.size > ZERO_RUN && allZero(await tail());
  return { format, zeros: allZero(head.subarray(0, ZERO_RUN)), zeroTail, stat };
}

async function pictureOf(bytes: Buffer, decode: boolean): Promise<NonNullable<FileLook["picture"]>> {
  const sharp = await loadSharp();
  try {
    const meta = await sharp(bytes, { failOn: "error", limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    if (!meta.width || !meta.height) return { error: "no dimensions in its header" };
    // Orientations 5–8 turn the picture a quarter: the service announces it as shown.
    const turned = (meta.orientation ?? 1) >= 5;
    const shown = turned ? { width: meta.height, height: meta.width } : { width: meta.width, height: meta.height };
    // Every pixel decoded, so a cut or garbled body fails where its decoder can tell; a large picture into a
    // small one, streamed (its pixels never all held at once).
    if (decode) {
      const image = sharp(bytes, { failOn: "error", limitInputPixels: MAX_INPUT_PIXELS });
      await (meta.width * meta.height > SHRINK_ABOVE_PIXELS ? image.resize(256, 256, { fit: "inside" }) : image).raw().toBuffer();
    }
    return { ...shown, decoded: decode };
  } catch (err) {
    return { error: (err as Error).message.split("\n")[0]?.slice(0, 200) ?? "not decodable" };
  }
}
