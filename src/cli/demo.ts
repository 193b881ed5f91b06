// `dvault demo` (= npm run demo): the main job on an embedded default, then a report of what it archived.
import path from "node:path";
import type { Command } from "commander";
import { type Config, loadConfig } from "../config.ts";
import { ArchiveCountsRepository } from "../db/archive-counts.repository.ts";
import { connectPg } from "../db/connect.ts";
import { DEMO_QUERIES } from "../db/demo-queries.ts";
import { pgFields } from "../db/pg-fields.ts";
import { claimDemoDir } from "../demo/demo-dir.ts";
import { runDemo, type DemoReport } from "../demo/run-demo.ts";
import { urlWithoutPassword, writeDemoPassFile } from "../demo/pass-file.ts";
import { demoServers } from "../demo/servers.ts";
import { limitOption } from "./limit-option.ts";
import { cliLogger } from "./output/mode.ts";
import { printErr, printOut } from "./output/print.ts";
import { EXIT_INTERRUPTED } from "../errors.ts";
import { maskUrl } from "../redact.ts";
import { formatBytes } from "../text/bytes.ts";
import { plural } from "../text/plural.ts";
import { shellWord } from "../text/shell-word.ts";
import { PACKAGE_ROOT } from "../version.ts";

export { DEMO_QUERIES };

/**
 * How the printed commands run dvault: this checkout's bin/dvault.js by its whole path, so a line works pasted in
 * any folder. Not `npx dvault`: npm's first run of it links the project into its cache, saying nothing for 10–15 s,
 * and a Ctrl-C then leaves that cache broken for every later `npx dvault` (README.md#the-command-line).
 */
export const DVAULT_COMMAND = `node ${shellWord(path.join(PACKAGE_ROOT, "bin", "dvault.js"))}`;

/**
 * Ctrl-C (or SIGTERM) during the demo: one line that says what is left, then exit 130. Nothing the demo makes is worth
 * finishing (the next run starts over), and its own embedded server stops as the process exits
 * (src/db/embedded/attach.ts), once it has started: a stop while `starting()` still starts it waits for that (up to
 * START_WAIT_MS), so the exit stops it rather than leave it running. Returns the function that takes the handlers away.
 */
function exitOnSignal(starting: () => Promise<unknown> | undefined): () => void {
  const onSignal = () => {
    printErr("dvault demo: stopped; its folder and database are half made: run dvault demo again, which starts over");
    const pending = starting();
    if (!pending) process.exit(EXIT_INTERRUPTED);
    setTimeout(() => process.exit(EXIT_INTERRUPTED), START_WAIT_MS);
    pending.then(
      () => process.exit(EXIT_INTERRUPTED),
      () => process.exit(EXIT_INTERRUPTED),
    );
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}

/** How long a stop waits for the demo's servers to finish starting before it exits anyway. */
const START_WAIT_MS = 30_000;

/** The largest simulated account the demo makes: it is a demonstration, synced and drawn in one run. */
export const DEMO_MAX_DEVIATIONS = 10_000;

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

/**
 * The demo's database as a printed command names it: its URL without the password, and PGPASSFILE naming the demo's
 * password file when the URL has one (src/demo/pass-file.ts), so the command runs as pasted and no password is printed.
 */
function printedDatabase(r: DemoReport, passFile: string | undefined): { url: string; passEnv: string } {
  return { url: maskUrl(urlWithoutPassword(r.databaseUrl)), passEnv: passFile ? `PGPASSFILE=${shellWord(passFile)} ` : "" };
}

/**
 * How a later command reaches the demo's database: its URL (and password file), or, on the demo's own embedded
 * server (which stops with the demo, so its port means nothing afterwards), DATABASE_URL=embedded and that server's
 * data folder.
 */
export function databaseEnv(r: DemoReport, { ownServer, engine, passFile }: Pick<ReportContext, "ownServer" | "engine" | "passFile">): string {
  const { url, passEnv } = printedDatabase(r, passFile);
  const database = ownServer ? `DATABASE_URL=embedded DVAULT_DATA_DIR=${shellWord(ownServer)}` : `${passEnv}DATABASE_URL=${shellWord(url)}`;
  return `${database}${engine === "postgres" ? " DVAULT_ENGINE=postgres" : ""}`;
}

/** The queries, as psql commands on a server that stays; on the demo's own, as SQL for the address `db status` gives. */
export function queryLines(r: DemoReport, { ownServer, passFile }: Pick<ReportContext, "ownServer" | "passFile">, dbEnv: string): string[] {
  if (!ownServer) {
    const { url, passEnv } = printedDatabase(r, passFile);
    return [
      `Query it (database "${pgFields(r.databaseUrl).database}"):`,
      ...DEMO_QUERIES.flatMap((q) => [`  -- ${q.what}`, `  ${passEnv}psql ${shellWord(url)} -c "${q.sql}"`]),
    ];
  }
  return [
    `Query it (database "${pgFields(r.databaseUrl).database}" on the demo's own server, which runs while a dvault command uses it,`,
    `such as the dashboard command below; then ${dbEnv} ${DVAULT_COMMAND} db status prints its address for psql):`,
    ...DEMO_QUERIES.flatMap((q) => [`  -- ${q.what}`, `  ${q.sql}`]),
  ];
}

type ReportContext = {
  term: string;
  dashboard: { url: string; token: boolean };
  ownServer: string | undefined;
  engine: Config["engine"];
  /** The demo's password file, when DATABASE_URL has a password (src/demo/pass-file.ts). */
  passFile: string | undefined;
};

function printReport(r: DemoReport, context: ReportContext): void {
  const { term, dashboard } = context;
  const c = r.counts;
  const d = r.downloads;
  const dbEnv = databaseEnv(r, context);
  const env = `${dbEnv} DVAULT_ARCHIVE_DIR=${shellWord(r.archiveDir)}`;
  const one = (n: number | undefined, word: string) => plural(n ?? 0, word);
  const lines = [
    "",
    `7/7 report  done in ${r.seconds.toFixed(0)} s. Archived for ${r.account}:`,
    `  ${one(c.deviations, "deviation")}, ${one(c.gallery_folders, "gallery folder")}, ${one(c.collection_folders, "collection")} (${one(c.folder_memberships, "placement")})`,
    `  ${one(c.messages, "message")}, ${one(c.notes, "note")}, ${one(c.comments, "comment")}, ${one(c.feed_items, "watch-feed item")}, ${one(c.users, "user")}`,
    `  files: ${c.originals} originals (the weekly quota), ${c.texts} journals and literature as HTML, ${c.degraded} free renditions whose`,
    `         originals follow from ${d.nextWindow?.toISOString().slice(0, 10) ?? "next week"}, ${c.not_downloadable} not downloadable (rendition kept), ${c.failed} failed; ${formatBytes(c.stored_bytes ?? 0)}`,
    `  in ${r.archiveDir}${d.links ? ` (readable links under ${path.join(r.archiveDir, "by-user")})` : ""}`,
    ...(r.digestPath ? [`  digest preview: ${r.digestPath}`] : []),
    "",
    ...queryLines(r, context, dbEnv),
    "",
    "Browse it in the dashboard (the pictures are the simulator's, drawn for each work):",
    `  ${env} DVAULT_REDIS_PREFIX=${r.redisPrefix} DVAULT_WORKER_ROLES=http ${DVAULT_COMMAND} worker`,
    `  then open ${dashboard.url}/archive${dashboard.token ? ` (DVAULT_HTTP_TOKEN is set: open ${dashboard.url}/login?token=<it> first)` : ""} (only the dashboard runs: nothing is synced or downloaded)`,
    "",
    "Search and inspect it:",
    `  ${env} ${DVAULT_COMMAND} search ${term}`,
    `  ${env} ${DVAULT_COMMAND} search ${term} --type journal`,
    `  ${env} DVAULT_REDIS_PREFIX=${r.redisPrefix} ${DVAULT_COMMAND} status`,
    "",
    "Archive your real account:",
    "  1. Register an application on DeviantArt (its applications page gives a client_id and client_secret;",
    `     add the redirect URI http://127.0.0.1:8788/callback).`,
    "  2. export DVAULT_CLIENT_ID=<id> DVAULT_CLIENT_SECRET=<secret>",
    `  3. ${DVAULT_COMMAND} migrate && ${DVAULT_COMMAND} auth login`,
    `  4. ${DVAULT_COMMAND} worker   (or: docker compose up -d; see README)`,
  ];
  printOut(lines.join("\n"));
}

export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("archive a simulated account end to end (login, sync, downloads, digest) into its own database and ./.demo")
    .option("--dir <dir>", "the demo's own folder (its archive, digest and server): new, empty, or an earlier demo's; emptied on every run", ".demo")
    .option("--deviations <n>", `size of the simulated account (1-${DEMO_MAX_DEVIATIONS})`, limitOption(DEMO_MAX_DEVIATIONS, "--deviations"), 400)
    .action(async (opts: { dir: string; deviations: number }) => {
      const install = loadConfig();
      // Before anything is started in it or removed from it: the folder must be the demo's own (src/demo/demo-dir.ts).
      claimDemoDir(opts.dir, install);
      let starting: Promise<unknown> | undefined;
      const stop = exitOnSignal(() => starting);
      // The servers (src/demo/servers.ts): an embedded one, the install's or the demo's own, held until the report is printed.
      const servers = await (starting = demoServers(install, process.env, opts.dir));
      try {
        const { config } = servers;
        printOut(servers.line);
        const log = cliLogger(config);
        const ownDatabase = servers.ownServer !== undefined;
        const report = await runDemo({ config, install, ownDatabase, log, dir: opts.dir, deviations: opts.deviations, out: printOut });
        const context = {
          term: await searchTerm(report.databaseUrl),
          dashboard: dashboardOf(config),
          ownServer: servers.ownServer,
          engine: config.engine,
          passFile: servers.ownServer ? undefined : writeDemoPassFile(report.dir, report.databaseUrl),
        };
        printReport(report, context);
      } finally {
        stop();
        servers.release();
      }
    });
}
