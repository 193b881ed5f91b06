// Archived files for tests that need them without the downloads worker: real PNG images written into the
// archive directory (content-addressed, like src/storage/archive.ts) and recorded as 'done' downloads.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import type { Queryable } from "../../src/db/with-transaction.ts";

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

function hsl(h: number, s: number, l: number): [number, number, number] {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/**
 * A small abstract artwork as a PNG: a two-colour gradient sky, a sun and layered hills, its palette
 * derived from `seed` so every deviation gets its own picture.
 */
export function artworkPng(seed: number, width = 360, height = 360): Buffer {
  let x = seed * 2654435761 || 1;
  const rnd = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) % 10_000) / 10_000;
  };
  for (let i = 0; i < 8; i++) rnd(); // decorrelate neighbouring seeds
  const hue = rnd() * 360;
  const top = hsl(hue, 0.65, 0.72);
  const bottom = hsl((hue + 40) % 360, 0.7, 0.5);
  const sun = hsl((hue + 180) % 360, 0.85, 0.65);
  const sunX = width * (0.2 + rnd() * 0.6);
  const sunY = height * (0.2 + rnd() * 0.25);
  const sunR = width * (0.08 + rnd() * 0.08);
  const hills = Array.from({ length: 3 }, (_, i) => ({
    base: height * (0.55 + i * 0.13),
    amp: height * (0.04 + rnd() * 0.06),
    freq: (1 + rnd() * 2.5) / width,
    phase: rnd() * 6.28,
    color: hsl((hue + 200 + i * 25) % 360, 0.45, 0.42 - i * 0.1),
  }));
  const rows: Buffer[] = [];
  for (let yy = 0; yy < height; yy++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let xx = 0; xx < width; xx++) {
      const t = yy / height;
      let c: [number, number, number] = [0, 1, 2].map((i) => Math.round(top[i]! * (1 - t) + bottom[i]! * t)) as [number, number, number];
      if ((xx - sunX) ** 2 + (yy - sunY) ** 2 < sunR ** 2) c = sun;
      for (const h of hills) if (yy > h.base + Math.sin(xx * h.freq * 6.28 + h.phase) * h.amp) c = h.color;
      row[1 + xx * 3] = c[0];
      row[2 + xx * 3] = c[1];
      row[3 + xx * 3] = c[2];
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

export type ArchivedFile = { deviationid: string; relPath: string; absPath: string; sha256: string; size: number; downloadId: string };

/** Writes `bytes` under originals/ab/cd/<sha256>.<ext> and records the deviation's original as done. */
export async function archiveFile(
  db: Queryable,
  archiveDir: string,
  deviationid: string,
  bytes: Buffer,
  ext = "png",
  mime = "image/png",
): Promise<ArchivedFile> {
  // A PNG says its size in IHDR.
  const isPng = bytes.subarray(1, 4).toString("ascii") === "PNG";
  const [width, height] = isPng ? [bytes.readUInt32BE(16), bytes.readUInt32BE(20)] : [null, null];
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const relPath = path.join("originals", sha256.slice(0, 2), sha256.slice(2, 4), `${sha256}.${ext}`);
  const absPath = path.join(archiveDir, relPath);
  await fs.mkdir(path.dirname(absPath), { recursive: true });
  await fs.writeFile(absPath, bytes);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO downloads (deviationid, kind, status, path, size, sha256, mime, width, height, done_at, updated_at)
     VALUES ($1, 'original', 'done', $2, $3, $4, $5, $6, $7, now(), now())
     ON CONFLICT (deviationid, kind) DO UPDATE SET status = 'done', path = EXCLUDED.path, size = EXCLUDED.size,
       sha256 = EXCLUDED.sha256, mime = EXCLUDED.mime, width = EXCLUDED.width, height = EXCLUDED.height, done_at = now(), updated_at = now()
     RETURNING id::text`,
    [deviationid, relPath, bytes.length, sha256, mime, width, height],
  );
  return { deviationid, relPath, absPath, sha256, size: bytes.length, downloadId: rows[0]!.id };
}
