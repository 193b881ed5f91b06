// `dvault demo` (= npm run demo): the main job on an embedded default, then a report of what it archived.
import path from "node:path";
import type { Command } from "commander";
import pg from "pg";
import { loadConfig } from "../config.ts";
import { pgFields } from "../db/pg-fields.ts";
import { runDemo, type DemoReport } from "../demo/run-demo.ts";
import { createLogger } from "../log.ts";
import { maskUrl } from "../redact.ts";

/** Three questions people ask their archive, as SQL that runs against the demo's database. */
export const DEMO_QUERIES: Array<{ what: string; sql: string }> = [
  {
    what: "whose work fills my favourites",
    sql: "SELECT u.username, count(*) AS faves FROM folder_members fm JOIN deviations d USING (deviationid) JOIN users u ON u.userid = d.author_userid WHERE fm.kind = 'collection' AND fm.removed_at IS NULL GROUP BY u.username ORDER BY faves DESC LIMIT 5",
  },
  {
    what: "unread notes, newest first",
    sql: "SELECT n.ts::date AS day, u.username AS sender, n.subject FROM notes n LEFT JOIN users u ON u.userid = n.sender_userid WHERE n.unread ORDER BY n.ts DESC LIMIT 5",
  },
  {
    what: "what is on disk, and in what form",
    sql: "SELECT dl.status, dl.kind, count(*) AS files, pg_size_pretty(sum(dl.size)) AS size FROM downloads dl GROUP BY dl.status, dl.kind ORDER BY files DESC",
  },
];

async function searchTerm(databaseUrl: string): Promise<string> {
  const client = new pg.Client(pgFields(databaseUrl));
  await client.connect();
  try {
    const { rows } = await client.query<{ word: string }>(
      "SELECT w AS word FROM deviations, regexp_split_to_table(lower(title), '[^a-z]+') AS w WHERE length(w) >= 5 GROUP BY w ORDER BY count(*) DESC, w LIMIT 1",
    );
    return rows[0]?.word ?? "study";
  } finally {
    await client.end();
  }
}

function printReport(r: DemoReport, term: string): void {
  const c = r.counts;
  const d = r.downloads;
  const env = `DATABASE_URL=${maskUrl(r.databaseUrl)} DVAULT_ARCHIVE_DIR=${r.archiveDir}`;
  const lines = [
    "",
    `Done in ${r.seconds.toFixed(0)} s. Archived for ${r.account}:`,
    `  ${c.deviations} deviations, ${c.gallery_folders} gallery folders, ${c.collection_folders} collections (${c.folder_memberships} placements)`,
    `  ${c.messages} messages, ${c.notes} notes, ${c.comments} comments, ${c.feed_items} watch-feed items, ${c.users} users`,
    `  files: ${c.originals} originals (the weekly quota), ${c.texts} journals and literature as HTML, ${c.degraded} free renditions whose`,
    `         originals follow from ${d.nextWindow?.toISOString().slice(0, 10) ?? "next week"}, ${c.not_downloadable} not downloadable (rendition kept), ${c.failed} failed; ${((c.stored_bytes ?? 0) / 1e6).toFixed(1)} MB`,
    `  in ${r.archiveDir}${d.links ? ` (readable links under ${path.join(r.archiveDir, "by-user")})` : ""}`,
    ...(r.digestPath ? [`  digest preview: ${r.digestPath}`] : []),
    "",
    `Query it (database "${pgFields(r.databaseUrl).database}"):`,
    ...DEMO_QUERIES.flatMap((q) => [`  -- ${q.what}`, `  psql "${maskUrl(r.databaseUrl)}" -c "${q.sql}"`]),
    "",
    "Search and inspect it:",
    `  ${env} npx dvault search ${term}`,
    `  ${env} npx dvault search ${term} --type journal`,
    `  DATABASE_URL=${maskUrl(r.databaseUrl)} npx dvault status`,
    "",
    "Archive your real account:",
    "  1. Register an application on DeviantArt (its applications page gives a client_id and client_secret;",
    `     add the redirect URI http://127.0.0.1:8788/callback).`,
    "  2. export DVAULT_CLIENT_ID=<id> DVAULT_CLIENT_SECRET=<secret>",
    "  3. npx dvault migrate && npx dvault auth login",
    "  4. npx dvault worker          (or: docker compose up -d; see README)",
  ];
  process.stdout.write(lines.join("\n") + "\n");
}

export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("archive a simulated account end to end (login, sync, downloads, digest) into its own database and ./.demo")
    .option("--dir <dir>", "where the demo's archive and digest go", ".demo")
    .option("--deviations <n>", "size of the simulated account", (v) => Number.parseInt(v, 10), 400)
    .action(async (opts: { dir: string; deviations: number }) => {
      const config = loadConfig();
      const log = createLogger({ level: config.logLevel === "info" ? "warn" : config.logLevel });
      const report = await runDemo({ config, log, dir: opts.dir, deviations: opts.deviations });
      printReport(report, await searchTerm(report.databaseUrl));
    });
}
