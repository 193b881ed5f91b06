// `dvault demo` (= npm run demo): the main job on an embedded default, then a report of what it archived.
import path from "node:path";
import type { Command } from "commander";
import { type Config, loadConfig } from "../config.ts";
import { ArchiveCountsRepository } from "../db/archive-counts.repository.ts";
import { connectPg } from "../db/connect.ts";
import { DEMO_QUERIES } from "../db/demo-queries.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { pgFields } from "../db/pg-fields.ts";
import { runDemo, type DemoReport } from "../demo/run-demo.ts";
import { cliLogger } from "./output/mode.ts";
import { printOut } from "./output/print.ts";
import { maskUrl } from "../redact.ts";
import { plural } from "../text/plural.ts";

export { DEMO_QUERIES };

async function searchTerm(databaseUrl: string): Promise<string> {
  const client = await connectPg(databaseUrl);
  try {
    return (await new ArchiveCountsRepository(client).mostCommonTitleWord()) ?? "study";
  } finally {
    await client.end();
  }
}

/**
 * Where the printed worker command serves the dashboard: DVAULT_HTTP_HOST and DVAULT_HTTP_PORT as this shell and
 * folder set them (the command sets neither), a wildcard address opened on loopback; and whether it needs the token.
 */
function dashboardOf(config: Config): { url: string; token: boolean } {
  const host = config.httpHost === "0.0.0.0" || config.httpHost === "::" ? "127.0.0.1" : config.httpHost;
  return { url: `http://${host.includes(":") ? `[${host}]` : host}:${config.httpPort}`, token: config.httpToken !== undefined };
}

function printReport(r: DemoReport, term: string, dashboard: { url: string; token: boolean }): void {
  const c = r.counts;
  const d = r.downloads;
  const env = `DATABASE_URL=${maskUrl(r.databaseUrl)} DVAULT_ARCHIVE_DIR=${r.archiveDir}`;
  const one = (n: number | undefined, word: string) => plural(n ?? 0, word);
  const lines = [
    "",
    `7/7 report  done in ${r.seconds.toFixed(0)} s. Archived for ${r.account}:`,
    `  ${one(c.deviations, "deviation")}, ${one(c.gallery_folders, "gallery folder")}, ${one(c.collection_folders, "collection")} (${one(c.folder_memberships, "placement")})`,
    `  ${one(c.messages, "message")}, ${one(c.notes, "note")}, ${one(c.comments, "comment")}, ${one(c.feed_items, "watch-feed item")}, ${one(c.users, "user")}`,
    `  files: ${c.originals} originals (the weekly quota), ${c.texts} journals and literature as HTML, ${c.degraded} free renditions whose`,
    `         originals follow from ${d.nextWindow?.toISOString().slice(0, 10) ?? "next week"}, ${c.not_downloadable} not downloadable (rendition kept), ${c.failed} failed; ${((c.stored_bytes ?? 0) / 1e6).toFixed(1)} MB`,
    `  in ${r.archiveDir}${d.links ? ` (readable links under ${path.join(r.archiveDir, "by-user")})` : ""}`,
    ...(r.digestPath ? [`  digest preview: ${r.digestPath}`] : []),
    "",
    `Query it (database "${pgFields(r.databaseUrl).database}"):`,
    ...DEMO_QUERIES.flatMap((q) => [`  -- ${q.what}`, `  psql "${maskUrl(r.databaseUrl)}" -c "${q.sql}"`]),
    "",
    "Browse it in the dashboard (the pictures are the simulator's, drawn for each work):",
    `  ${env} DVAULT_REDIS_PREFIX=${r.redisPrefix} DVAULT_WORKER_ROLES=http npx dvault worker`,
    `  then open ${dashboard.url}/archive${dashboard.token ? ` (DVAULT_HTTP_TOKEN is set: open ${dashboard.url}/login?token=<it> first)` : ""} (only the dashboard runs: nothing is synced or downloaded)`,
    "",
    "Search and inspect it:",
    `  ${env} npx dvault search ${term}`,
    `  ${env} npx dvault search ${term} --type journal`,
    `  ${env} DVAULT_REDIS_PREFIX=${r.redisPrefix} npx dvault status`,
    "",
    "Archive your real account:",
    "  1. Register an application on DeviantArt (its applications page gives a client_id and client_secret;",
    `     add the redirect URI http://127.0.0.1:8788/callback).`,
    "  2. export DVAULT_CLIENT_ID=<id> DVAULT_CLIENT_SECRET=<secret>",
    "  3. npx dvault migrate && npx dvault auth login",
    "  4. npx dvault worker          (or: docker compose up -d; see README)",
  ];
  printOut(lines.join("\n"));
}

export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("archive a simulated account end to end (login, sync, downloads, digest) into its own database and ./.demo")
    .option("--dir <dir>", "where the demo's archive and digest go", ".demo")
    .option("--deviations <n>", "size of the simulated account", (v) => Number.parseInt(v, 10), 400)
    .action(async (opts: { dir: string; deviations: number }) => {
      // DATABASE_URL=embedded: the demo's database on the server dvault runs, held until the report is printed.
      const { config, release } = await resolveDatabase(loadConfig(), { migrate: false });
      try {
        const log = cliLogger(config);
        const report = await runDemo({ config, log, dir: opts.dir, deviations: opts.deviations, out: printOut });
        printReport(report, await searchTerm(report.databaseUrl), dashboardOf(config));
      } finally {
        release();
      }
    });
}
