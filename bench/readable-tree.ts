// The readable tree (by-user/...) at the size of a collector's archive (issue 32, docs/PERFORMANCE.md#readable-tree):
// what bringing it in line with the database costs at the end of every `download --once` / `archive --once` that
// stored a file, and in the worker when the tree is dirty. For each size, a database of its own holds a generated
// mirror (test/helpers/dashboard-load-mirror.ts: N works, 4 in 5 stored, each in a gallery folder, 1 in 7 in a
// collection too), and each way writes into a scratch archive folder of its own holding the stored files (empty), in
// one run:
// - the whole-tree rewrite every write did before the tree's record: every placement listed, every link checked,
//   the tree swept (src/storage/readable-tree.ts writeReadableTree); its first write, then a write with nothing changed;
// - the record's write (src/downloads/readable-links.ts changeLocalTree): its first write (a rebuild with a sweep),
//   then nothing changed, 10 files newly stored, one work renamed upstream, each comparing the works the mirror's
//   triggers marked; then nothing changed again, comparing every stored file (as every write did before the marks).
// Each write's wall time and the process's RSS growth over it. Reported, no goal.
// The whole-tree way runs up to --whole-up-to works (its two writes take about half an hour at a million).
// Run: node --import tsx bench/readable-tree.ts [--works 10000,100000] [--whole-up-to 100000]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createPgPool, dropDatabase } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { ReadableTreeRepository } from "../src/db/readable-tree.repository.ts";
import { changeLocalTree } from "../src/downloads/readable-links.ts";
import { Archive } from "../src/storage/archive.ts";
import { buildReadableLinks, MAX_FOLDER_DEPTH } from "../src/storage/links.ts";
import { LocalDisk } from "../src/storage/local-disk.ts";
import { writeReadableTree } from "../src/storage/readable-tree.ts";
import { fillLoadMirror } from "../test/helpers/dashboard-load-mirror.ts";
import { BENCH_PG_URL, machine, table } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: { works: { type: "string", default: "10000,100000" }, "whole-up-to": { type: "string", default: "100000" } },
});
const wholeUpTo = Number(args["whole-up-to"]);
const sizes = (args.works ?? "").split(",").map(Number);
if (sizes.some((n) => !(Number.isInteger(n) && n >= 100))) {
  process.stderr.write("readable-tree: --works expects whole numbers ≥ 100, comma-separated\n");
  process.exit(2);
}

type Timed = { s: number; rssMb: number; what: string };

/** Runs `run`, its wall time and the RSS growth over it (sampled every 20 ms: the peak above the start). */
async function timed(run: () => Promise<{ links?: number; written: number; removed: number }>): Promise<Timed> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const started = performance.now();
  const r = await run();
  const s = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { s, rssMb: (peak - start) / 2 ** 20, what: `${r.written} written, ${r.removed} removed` };
}

const cell = (t: Timed) => `${t.s.toFixed(2)} s (${t.what}; +${t.rssMb.toFixed(0)} MB)`;

console.log(`readable-tree: ${machine()}`);
const rows: string[][] = [];
for (const works of sizes) {
  const url = withDatabase(BENCH_PG_URL, `dvault_bench_readable_tree_${works}`);
  await dropDatabase(url).catch(() => undefined);
  await migrate(url, { createDatabase: true });
  const pool = createPgPool(url);
  const dirs = [mkdtempSync(path.join(os.tmpdir(), "dvault-bench-tree-")), mkdtempSync(path.join(os.tmpdir(), "dvault-bench-tree-"))];
  try {
    const account = await pool.query<{ id: number }>("INSERT INTO accounts (name, updated_at) VALUES ('collector', now()) RETURNING id");
    const mirror = await fillLoadMirror(pool, account.rows[0]?.id ?? 0, { works, messages: 1 });
    // Ten stored files the first writes do not see yet: "newly stored" below.
    const fresh = await pool.query<{ deviationid: string }>(
      "UPDATE downloads SET status = 'wanted', path = NULL WHERE id IN (SELECT id FROM downloads WHERE status = 'done' ORDER BY id DESC LIMIT 10) RETURNING deviationid",
    );
    const ids = fresh.rows.map((r) => r.deviationid);

    const [wholeDir, recordDir] = dirs as [string, string];
    // The originals the links point to, empty, in both folders: a link's target is resolved inside the archive,
    // which costs more when it does not exist.
    const { rows: paths } = await pool.query<{ path: string }>("SELECT DISTINCT path FROM downloads WHERE path IS NOT NULL");
    for (const dir of dirs) {
      for (const folder of new Set(paths.map((p) => path.dirname(p.path)))) mkdirSync(path.join(dir, folder), { recursive: true });
      for (const p of paths) writeFileSync(path.join(dir, p.path), "");
    }
    const whole = async () => {
      const links = buildReadableLinks(await new ReadableTreeRepository(pool).listPlacements(MAX_FOLDER_DEPTH), wholeDir);
      return { links: links.length, ...(await writeReadableTree(new LocalDisk({ root: wholeDir, fileMode: 0o644, dirMode: 0o755 }), links)) };
    };
    const record = () => changeLocalTree(pool, new Archive({ root: recordDir, minFreeBytes: 0 }));
    const wholeRuns = works <= wholeUpTo;
    const wholeFirst = wholeRuns ? await timed(whole) : undefined;
    const wholeAgain = wholeRuns ? await timed(whole) : undefined;
    const recordFirst = await timed(record);
    const recordAgain = await timed(record);
    const back = await pool.query<{ path: string }>(
      "UPDATE downloads SET status = 'done', path = 'originals/ff/' || md5(deviationid) || '.png' WHERE deviationid = ANY($1) RETURNING path",
      [ids],
    );
    for (const p of back.rows) {
      mkdirSync(path.join(recordDir, path.dirname(p.path)), { recursive: true });
      writeFileSync(path.join(recordDir, p.path), "");
    }
    const recordNew = await timed(record);
    await pool.query("UPDATE deviations SET title = 'Renamed upstream' WHERE deviationid = $1", [ids[0]]);
    const recordRenamed = await timed(record);
    // The same write comparing every stored file, as each write did before the marks (and as the first write after
    // the upgrade does): no format noted.
    await pool.query("UPDATE readable_tree_sweeps SET marked_format = NULL");
    const recordCompared = await timed(record);
    const links = await new ReadableTreeRepository(pool).linkCount();
    rows.push(
      [
        `${works} works, ${mirror.stored} stored, ${links} links`,
        "whole-tree rewrite",
        wholeFirst ? cell(wholeFirst) : `not run (--whole-up-to ${wholeUpTo})`,
        wholeAgain ? cell(wholeAgain) : "–",
        "–",
        "–",
      ],
      ["", "the record's write", cell(recordFirst), cell(recordAgain), cell(recordNew), cell(recordRenamed)],
      ["", "the record's write comparing every file (before the marks)", "–", cell(recordCompared), "–", "–"],
      ["", "record / whole, nothing changed", "", wholeAgain ? `${(recordAgain.s / wholeAgain.s).toFixed(3)} ×` : "–", "", ""],
      ["", "marks / every file compared, nothing changed", "", `${(recordAgain.s / recordCompared.s).toFixed(4)} ×`, "", ""],
    );
    console.log(
      rows
        .slice(-5)
        .map((r) => r.join(" | "))
        .join("\n"),
    );
  } finally {
    await pool.end();
    await dropDatabase(url).catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
console.log(table(["archive", "way", "first write", "nothing changed", "10 newly stored", "1 renamed"], rows));
