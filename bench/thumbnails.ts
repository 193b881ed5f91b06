// Thumbnail generation rate: files/s and CPU seconds per 1 000 files (process.cpuUsage, so libvips' worker
// threads count) for the thumbnails.backfill job's work (src/storage/thumbnails.ts: both WebP sizes through the
// archive's BlobStore), over generated pictures of the sizes an archive holds, one set per kind. Also what a
// grid page weighs with tiles instead of originals.
//
//   node --import tsx bench/thumbnails.ts [--per-kind 20] [--no-write]
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { Archive } from "../src/storage/archive.ts";
import { backfillThumbnails, thumbKey, Thumbnails } from "../src/storage/thumbnails.ts";
import { type ImageFormat, makeImage } from "../test/helpers/image-fixtures.ts";
import { machine, table, writeDocSection } from "./bench-env.ts";

const { values } = parseArgs({ options: { "per-kind": { type: "string", default: "20" }, "no-write": { type: "boolean", default: false } } });
const PER_KIND = Math.max(2, Number(values["per-kind"]));
/** A grid page of the dashboard shows this many tiles (src/http/routes/archive.ts PAGE_SIZE). */
const GRID_TILES = 48;

type Kind = { label: string; format: ImageFormat; width: number; height: number };
const KINDS: Kind[] = [
  { label: "photo, JPEG 4000×3000", format: "jpg", width: 4000, height: 3000 },
  { label: "digital art, JPEG 2400×1600", format: "jpg", width: 2400, height: 1600 },
  { label: "digital art, PNG 1600×2200", format: "png", width: 1600, height: 2200 },
  { label: "pixel art / animation, GIF 640×480", format: "gif", width: 640, height: 480 },
  { label: "WebP 2000×2000", format: "webp", width: 2000, height: 2000 },
];

type Row = { kind: Kind; files: number; seconds: number; cpuSeconds: number; originalBytes: number; sBytes: number; mBytes: number; maxS: number };

async function measure(kind: Kind, dir: string): Promise<Row> {
  const archive = new Archive({ root: path.join(dir, kind.label.replace(/\W+/g, "-")), minFreeBytes: 0 });
  let originalBytes = 0;
  for (let i = 0; i < PER_KIND; i++) {
    const stored = await archive.storeBytes({ bytes: await makeImage(kind.format, kind.width, kind.height, i + 1), ext: kind.format });
    originalBytes += stored.size;
  }
  const thumbs = new Thumbnails(archive.blobs);
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = await backfillThumbnails(thumbs);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  if (result.generated !== PER_KIND) throw new Error(`${kind.label}: ${result.generated} of ${PER_KIND} made (${result.failures.join("; ")})`);
  let sBytes = 0;
  let mBytes = 0;
  let maxS = 0;
  for await (const o of thumbs.originals()) {
    const s = (await archive.blobs.stat(thumbKey(o.sha256, o.size, "s")))?.size ?? 0;
    sBytes += s;
    maxS = Math.max(maxS, s);
    mBytes += (await archive.blobs.stat(thumbKey(o.sha256, o.size, "m")))?.size ?? 0;
  }
  return { kind, files: PER_KIND, seconds, cpuSeconds: (used.user + used.system) / 1e6, originalBytes, sBytes, mBytes, maxS };
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-bench-thumbs-"));
const rows: Row[] = [];
try {
  for (const kind of KINDS) {
    const r = await measure(kind, dir);
    rows.push(r);
    process.stdout.write(`${kind.label}: ${(r.files / r.seconds).toFixed(1)} files/s, ${((r.cpuSeconds / r.files) * 1000).toFixed(0)} CPU s per 1000 files\n`);
  }
} finally {
  await fs.rm(dir, { recursive: true, force: true });
}

/** libwebp's effort, the one encoder setting that moves CPU much: the 1280 px and 320 px pair at 4 (default) and 2. */
async function effortRows(): Promise<Array<Array<string | number>>> {
  const input = await makeImage("jpg", 2400, 1600, 99);
  const out: Array<Array<string | number>> = [];
  for (const effort of [4, 2]) {
    const cpu = process.cpuUsage();
    let bytes = 0;
    const runs = 8;
    for (let i = 0; i < runs; i++) {
      const m = await sharp(input).resize({ width: 1280, height: 1280, fit: "inside" }).webp({ quality: 75, effort }).toBuffer();
      const s = await sharp(m).resize({ width: 320, height: 320, fit: "inside" }).webp({ quality: 75, effort }).toBuffer();
      bytes = m.length + s.length;
    }
    const used = process.cpuUsage(cpu);
    out.push([effort === 2 ? "2 (dvault's)" : "4 (libwebp's default)", ((used.user + used.system) / runs / 1000).toFixed(0), (bytes / 1024).toFixed(0)]);
  }
  return out;
}
const efforts = await effortRows();

const kb = (n: number) => (n / 1024).toFixed(0);
const mb = (n: number) => (n / 1024 ** 2).toFixed(2);
const all = rows.reduce(
  (a, r) => ({ files: a.files + r.files, seconds: a.seconds + r.seconds, cpu: a.cpu + r.cpuSeconds, orig: a.orig + r.originalBytes, s: a.s + r.sBytes }),
  { files: 0, seconds: 0, cpu: 0, orig: 0, s: 0 },
);
const rateTable = table(
  ["originals", "files", "files/s", "CPU s per 1 000 files", "original (mean MB)", "tile s (mean KB)", "tile s (max KB)", "m (mean KB)"],
  [
    ...rows.map((r) => [
      r.kind.label,
      r.files,
      (r.files / r.seconds).toFixed(1),
      ((r.cpuSeconds / r.files) * 1000).toFixed(0),
      mb(r.originalBytes / r.files),
      kb(r.sBytes / r.files),
      kb(r.maxS),
      kb(r.mBytes / r.files),
    ]),
    [
      "all",
      all.files,
      (all.files / all.seconds).toFixed(1),
      ((all.cpu / all.files) * 1000).toFixed(0),
      mb(all.orig / all.files),
      kb(all.s / all.files),
      "",
      "",
    ],
  ],
);
const gridBefore = (all.orig / all.files) * GRID_TILES;
const gridAfter = (all.s / all.files) * GRID_TILES;
const body = `<a id="thumbnails"></a>
### Thumbnails: generation rate

\`node --import tsx bench/thumbnails.ts --per-kind ${PER_KIND}\` on ${machine()}. Each set of generated pictures (noise under a gradient, so
the encoders have real detail) is stored in a fresh archive, then the thumbnails.backfill job's work runs over it:
read through the BlobStore, decoded once by sharp at most 1280 px on the long side (JPEG shrink-on-load), a
1280 px WebP and a 320 px WebP from it, both written through the BlobStore. CPU is the process's
(process.cpuUsage: libvips' threads included), so with 2 cores it can pass the wall time.

${rateTable}

A grid page of ${GRID_TILES} tiles of this mix: ${mb(gridBefore)} MB of originals before, ${mb(gridAfter)} MB of small tiles after
(${(gridBefore / Math.max(1, gridAfter)).toFixed(0)}× less). Every tile stayed within the 100 KB budget (largest in the table).

Why WebP effort 2 (src/storage/thumbnail-render.ts), on one 2400×1600 JPEG, both sizes:

${table(["effort", "CPU ms per file", "both sizes (KB)"], efforts)}`;
process.stdout.write(`\n${body}\n`);
if (!values["no-write"]) await writeDocSection("thumbnails", body);
