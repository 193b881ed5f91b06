// Ingest rate of the set-based mirror writes against a hand-written multi-row INSERT ... ON CONFLICT DO
// UPDATE of the same rows through pg: deviations + metadata, pages of 24, one transaction per page.
// Run: npx tsx bench/ingest.ts [--count 5000] [--page 24] [--url postgresql://postgres@127.0.0.1:5432/postgres]
// It creates scratch databases next to the one in --url (from the project's migrations) and drops them.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type pg from "pg";
import { DeviationSchema, MetadataSchema, type Deviation, type Metadata } from "../src/api/types.ts";
import { connectPg, createPgPool, quoteIdent } from "../src/db/connect.ts";
import { DeviationRepository } from "../src/db/deviation.repository.ts";
import { migrate } from "../src/db/migrate.ts";
import { deviationType, epochTime, sortedTags } from "../src/db/mirror-rows.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { withTransaction } from "../src/db/with-transaction.ts";

const { values: args } = parseArgs({
  options: {
    count: { type: "string", default: "5000" },
    page: { type: "string", default: "24" },
    url: { type: "string", default: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
  },
});
const COUNT = Number(args.count);
const PAGE = Number(args.page);
const BASE_URL = args.url as string;

// ---- data: shaped like the service's answers (and the simulator's) -------------------------------

function uuid(n: number, prefix: string): string {
  return `${prefix.padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`.toUpperCase();
}

function signed(path: string, token: string): string {
  return `https://images-wixmp-ed30a86b8c4ca887773594c2.wixmp.com/f/${path}?token=${token}`;
}

function makeDeviation(n: number, token: string): Deviation {
  const author = n % 40;
  const img = (variant: string, w: number, h: number) => ({
    src: signed(`${uuid(n, "f")}/d${n}-${variant}.jpg`, token),
    width: w,
    height: h,
    transparency: false,
  });
  return DeviationSchema.parse({
    deviationid: uuid(n, "0"),
    printid: null,
    url: `https://www.deviantart.com/artist${author}/art/work-${n}-${900000 + n}`,
    title: `Work number ${n}`,
    is_favourited: false,
    is_deleted: false,
    is_published: true,
    is_blocked: false,
    author: { userid: uuid(author, "u"), username: `artist${author}`, usericon: `https://a.deviantart.net/avatars/a/${author}.png`, type: "regular" },
    stats: { comments: n % 13, favourites: n % 101 },
    published_time: String(1600000000 + n * 3600),
    allows_comments: true,
    preview: img("pre", 1024, 768),
    content: { ...img("fullview", 1920, 1440), filesize: 400000 + n },
    thumbs: [img("150", 150, 113), img("200h", 267, 200), img("300w", 300, 225)],
    is_mature: n % 9 === 0,
    is_downloadable: true,
    download_filesize: 2000000 + n,
  });
}

function makeMetadata(n: number, token: string): Metadata {
  return MetadataSchema.parse({
    deviationid: uuid(n, "0"),
    printid: null,
    author: { userid: uuid(n % 40, "u"), username: `artist${n % 40}`, usericon: "https://a.deviantart.net/avatars/a.png", type: "regular" },
    is_watching: false,
    title: `Work number ${n}`,
    description: `<p>Painted over a few evenings. Number ${n}. <img src="${signed(`${uuid(n, "f")}/inline.jpg`, token)}"> Thanks for looking!</p>`,
    license: "No License",
    allows_comments: true,
    tags: ["digitalart", "painting", "landscape", `series${n % 17}`, "sky", "light", `t${n % 5}`].map((tag_name) => ({
      tag_name,
      sponsored: false,
      sponsor: "",
    })),
    is_favourited: false,
    is_mature: n % 9 === 0,
    submission: {
      creation_time: "2024-05-01T10:00:00-0700",
      category: "digitalart/paintings/landscapes",
      file_size: "2 MB",
      resolution: "3000x2250",
      submitted_with: { app: "DeviantArt", url: "https://www.deviantart.com" },
    },
    stats: { views: n * 7, views_today: n % 3, favourites: n % 101, comments: n % 13, downloads: n % 11, downloads_today: 0 },
    camera: [],
  });
}

// ---- the baseline: a plain multi-row INSERT ... ON CONFLICT DO UPDATE ----------------------------

const DEVIATION_COLUMNS = [
  "deviationid",
  "url",
  "title",
  "author_userid",
  "published_at",
  "type",
  "is_mature",
  "is_downloadable",
  "download_filesize",
  "is_deleted",
  "is_favourited",
  "stats_favourites",
  "stats_comments",
  "stats_sampled_at",
  "tier_access",
  "premium",
  "printid",
  "raw",
  "first_seen_at",
  "last_seen_at",
] as const;
const METADATA_COLUMNS = [
  "deviationid",
  "description",
  "license",
  "tags",
  "mature_level",
  "mature_classification",
  "allows_comments",
  "submission",
  "camera",
  "stats",
  "stats_sampled_at",
  "raw",
  "first_seen_at",
  "fetched_at",
] as const;

function multiRowUpsert(table: string, columns: readonly string[], rows: unknown[][], casts: Record<string, string>): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const tuples = rows.map(
    (row) =>
      `(${row
        .map((v, i) => {
          values.push(v);
          const cast = casts[columns[i] as string];
          return `$${values.length}${cast ? `::${cast}` : ""}`;
        })
        .join(", ")})`,
  );
  const updates = columns.filter((c) => c !== "deviationid" && c !== "first_seen_at").map((c) => `${c} = EXCLUDED.${c}`);
  return {
    text: `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${tuples.join(", ")} ON CONFLICT (deviationid) DO UPDATE SET ${updates.join(", ")}`,
    values,
  };
}

async function rawPage(tx: pg.PoolClient, devs: Deviation[], metas: Metadata[], at: Date): Promise<void> {
  const d = multiRowUpsert(
    "deviations",
    DEVIATION_COLUMNS,
    devs.map((x) => [
      x.deviationid,
      x.url,
      x.title,
      x.author?.userid ?? null,
      epochTime(x.published_time),
      deviationType(x),
      x.is_mature ?? null,
      x.is_downloadable ?? null,
      x.download_filesize ?? null,
      x.is_deleted === true,
      x.is_favourited ?? null,
      x.stats?.favourites ?? null,
      x.stats?.comments ?? null,
      at,
      x.tier_access ?? null,
      null,
      x.printid ?? null,
      JSON.stringify(x),
      at,
      at,
    ]),
    { type: "deviation_type", raw: "jsonb", premium: "jsonb" },
  );
  await tx.query(d.text, d.values);
  const m = multiRowUpsert(
    "deviation_metadata",
    METADATA_COLUMNS,
    metas.map((x) => [
      x.deviationid,
      x.description ?? null,
      x.license ?? null,
      sortedTags((x.tags ?? []).map((t) => t.tag_name)),
      x.mature_level ?? null,
      x.mature_classification ?? [],
      x.allows_comments ?? null,
      JSON.stringify(x.submission ?? null),
      JSON.stringify(x.camera ?? null),
      JSON.stringify(x.stats ?? null),
      at,
      JSON.stringify(x),
      at,
      at,
    ]),
    { submission: "jsonb", camera: "jsonb", stats: "jsonb", raw: "jsonb" },
  );
  await tx.query(m.text, m.values);
}

async function repositoryPage(tx: pg.PoolClient, devs: Deviation[], metas: Metadata[], at: Date): Promise<void> {
  const repo = new DeviationRepository(tx);
  await repo.upsertDeviations(devs, at);
  await repo.upsertMetadata(metas, at);
}

// ---- the run -----------------------------------------------------------------------------------------

type Pass = "insert" | "update";
type Writer = (tx: pg.PoolClient, devs: Deviation[], metas: Metadata[], at: Date) => Promise<void>;

async function timePass(pool: pg.Pool, write: Writer, token: string, at: Date, from = 0): Promise<number> {
  const pages: Array<[Deviation[], Metadata[]]> = [];
  for (let start = 0; start < COUNT; start += PAGE) {
    const ns = Array.from({ length: Math.min(PAGE, COUNT - start) }, (_, i) => from + start + i);
    pages.push([ns.map((n) => makeDeviation(n, token)), ns.map((n) => makeMetadata(n, token))]);
  }
  const t0 = process.hrtime.bigint();
  for (const [devs, metas] of pages) await withTransaction(pool, (tx) => write(tx, devs, metas, at));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return COUNT / seconds;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const suffix = randomBytes(4).toString("hex");
  const template = `dvault_bench_tpl_${suffix}`;
  const dbs = { raw: `dvault_bench_raw_${suffix}`, repo: `dvault_bench_repo_${suffix}` };
  const admin = await connectPg(BASE_URL);
  try {
    await migrate(withDatabase(BASE_URL, template), { createDatabase: true });
    for (const name of Object.values(dbs)) await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
    const pools = { raw: createPgPool(withDatabase(BASE_URL, dbs.raw), 1), repo: createPgPool(withDatabase(BASE_URL, dbs.repo), 1) };
    const results: Record<string, Record<Pass, number>> = {};
    try {
      const writers = [
        ["raw multi-row INSERT", rawPage, pools.raw],
        ["repository (set-based)", repositoryPage, pools.repo],
      ] as const;
      // Warm-up on another id range (JIT, plan and catalog caches), then alternate the writers.
      for (const [, write, pool] of writers) await timePass(pool, write, "warm", new Date("2024-12-01T00:00:00Z"), 1_000_000);
      const inserts: Record<string, number> = {};
      for (const [name, write, pool] of writers) inserts[name] = await timePass(pool, write, "tokA", new Date("2025-01-01T00:00:00Z"));
      const updates: Record<string, number[]> = {};
      for (let round = 0; round < 3; round++) {
        for (const [name, write, pool] of writers) {
          const day = new Date(Date.UTC(2025, 0, 2 + round));
          (updates[name] ??= []).push(await timePass(pool, write, `tok${round}`, day));
        }
      }
      for (const [name] of writers) results[name] = { insert: inserts[name] as number, update: median(updates[name] ?? []) };
    } finally {
      await Promise.all(Object.values(pools).map((p) => p.end()));
    }
    const raw = results["raw multi-row INSERT"] as Record<Pass, number>;
    const repo = results["repository (set-based)"] as Record<Pass, number>;
    console.log(`${COUNT} deviations + metadata, pages of ${PAGE}, one transaction per page (deviations/s)`);
    console.log(`${"".padEnd(26)}${"first load".padStart(12)}${"re-sync".padStart(14)}   (re-sync: median of 3 passes, new signed URLs and counters)`);
    for (const [name, r] of Object.entries(results)) console.log(`${name.padEnd(26)}${r.insert.toFixed(0).padStart(12)}${r.update.toFixed(0).padStart(14)}`);
    console.log(`${"repository / raw".padEnd(26)}${(repo.insert / raw.insert).toFixed(2).padStart(12)}${(repo.update / raw.update).toFixed(2).padStart(14)}`);
  } finally {
    for (const name of [...Object.values(dbs), template]) await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

await main();
