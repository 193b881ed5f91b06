// What the downloads' counters (migration 20261129060000_download_counts) cost the rows' own writes: batches of 32
// stored files written by DownloadRepository.markDownloadsStored (one statement and one commit each, as
// src/downloads/group-commit.ts writes a batch) from `--clients` connections at once, no files on disk, with the
// triggers off, on, and on with every total in one row instead of 16 shards (the hot spot the shards avoid). The three
// take turns on one database; each round stores every row again. Prints rows/s per way, medians.
//
//   node --import tsx bench/download-counters.ts [--rows 6400] [--clients 1,8] [--rounds 3]
import { parseArgs } from "node:util";
import { connectPg, createPgPool, dropDatabase } from "../src/db/connect.ts";
import { DownloadRepository } from "../src/db/download.repository.ts";
import type { StoredFile } from "../src/db/download-files.ts";
import { migrate } from "../src/db/migrate.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { BENCH_PG_URL, median } from "./bench-env.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "6400" },
    clients: { type: "string", default: "1,8" },
    rounds: { type: "string", default: "3" },
  },
});
const ROWS = Math.max(320, Number(values.rows));
const ROUNDS = Math.max(1, Number(values.rounds));
const BATCH = 32;
const WAYS = ["off", "sharded", "one row"] as const;
type Way = (typeof WAYS)[number];
const url = withDatabase(BENCH_PG_URL, "dvault_bench_download_counters");

await dropDatabase(url);
await migrate(url, { createDatabase: true });
const admin = await connectPg(url);
const at = new Date();
/** Every 20th file has the content of the one before it: a content-addressed file two rows share. */
const file = (id: string, i: number, round: number): StoredFile => {
  const n = i % 20 === 0 && i > 0 ? i - 1 : i;
  const sha256 = `${round.toString(16).padStart(4, "0")}${n.toString(16).padStart(60, "0")}`;
  return {
    id,
    status: "done",
    rendition: "original",
    path: `originals/${sha256.slice(0, 2)}/${sha256}.png`,
    size: 100_000 + n,
    sha256,
    mime: "image/png",
    bytes: 100_000,
    at,
  };
};
try {
  await admin.query(`INSERT INTO deviations (deviationid, title, raw) SELECT 'd' || i, 't', '{}' FROM generate_series(1, $1::int) i`, [ROWS]);
  await admin.query(`INSERT INTO downloads (deviationid, kind, status) SELECT 'd' || i, 'original', 'queued' FROM generate_series(1, $1::int) i`, [ROWS]);
  const ids = (await admin.query<{ id: string }>("SELECT id::text AS id FROM downloads ORDER BY id")).rows.map((r) => r.id);
  const sharded = (await admin.query<{ d: string }>("SELECT pg_get_functiondef('dvault_download_counts_trigger'::regproc) AS d")).rows[0]?.d ?? "";
  const oneRow = sharded.replace("(pg_backend_pid() % 16)::smallint", "0::smallint");
  if (oneRow === sharded) throw new Error("the trigger function has no shard expression: this bench no longer fits it");

  for (const clients of values.clients.split(",").map(Number)) {
    const pool = createPgPool(url, clients);
    const rates = new Map<Way, number[]>(WAYS.map((w) => [w, []]));
    try {
      for (let round = 0; round < ROUNDS * WAYS.length; round++) {
        // Each way in turn, the order turning each time round: a busy machine slows each alike.
        const way = WAYS[(round + Math.floor(round / WAYS.length)) % WAYS.length] as Way;
        await admin.query(way === "one row" ? oneRow : sharded);
        await admin.query("ALTER TABLE downloads DISABLE TRIGGER USER");
        await admin.query("UPDATE downloads SET status = 'queued', path = NULL, sha256 = NULL, size = NULL, rendition = NULL, done_at = NULL");
        await admin.query(`ALTER TABLE downloads ${way === "off" ? "DISABLE" : "ENABLE"} TRIGGER USER`);
        await admin.query("VACUUM downloads");
        let next = 0;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: clients }, async () => {
            const repo = new DownloadRepository(pool);
            for (let from = next; from < ids.length; from = next) {
              next += BATCH;
              await repo.markDownloadsStored(ids.slice(from, from + BATCH).map((id, k) => file(id, from + k, round)));
            }
          }),
        );
        rates.get(way)?.push((ROWS / (performance.now() - started)) * 1000);
      }
    } finally {
      await pool.end();
    }
    const off = median(rates.get("off") ?? []);
    const line = WAYS.map((w) => `${w} ${median(rates.get(w) ?? []).toFixed(0)} (${(median(rates.get(w) ?? []) / off).toFixed(2)})`).join(", ");
    process.stdout.write(`${clients} connection(s), ${ROWS} rows in batches of ${BATCH}, rows/s (÷ off), medians of ${ROUNDS}: ${line}\n`);
  }
} finally {
  await admin.end();
  await dropDatabase(url);
}
