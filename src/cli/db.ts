// `dvault db status` and `dvault db stop`: the embedded PostgreSQL server (DATABASE_URL=embedded,
// src/db/embedded/), shown or stopped without starting it or taking a lease on it.
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { type EmbeddedStatus, embeddedStatus, stopEmbedded } from "../db/embedded/status.ts";
import { embeddedUrl } from "../db/embedded/ensure.ts";
import { embeddedLayout } from "../db/embedded/layout.ts";
import { maskUrl } from "../redact.ts";
import { printOut } from "./output/print.ts";

function statusLines(s: EmbeddedStatus, databaseUrl: string, dataDir: string): string[] {
  const binaries = "major" in s.binaries ? `PostgreSQL ${s.binaries.major}` : `not usable: ${s.binaries.problem}`;
  const uses = databaseUrl === "embedded" ? "DATABASE_URL=embedded: dvault uses it" : `DATABASE_URL=${maskUrl(databaseUrl)}: dvault does not use it`;
  const lines = [`embedded PostgreSQL server (${uses})`];
  if (!s.made) return [...lines, `  data folder: ${s.folder} (not made yet: dvault migrate makes it)`, `  binaries:    ${binaries}`];
  const mismatch = "major" in s.binaries && s.folderMajor !== s.binaries.major ? " (another major: refused)" : "";
  return [
    ...lines,
    `  data folder: ${s.folder} (PostgreSQL ${s.folderMajor}${mismatch})`,
    `  binaries:    ${binaries}`,
    s.running
      ? `  running:     yes, pid ${s.running.pid}, port ${s.running.port} (${embeddedUrl(s.running.port)}; its password: ${embeddedLayout(dataDir).passwordFile})`
      : `  running:     no${s.port ? ` (it starts on port ${s.port} with the next command)` : ""}`,
    `  leases:      ${s.holders.length ? `processes ${s.holders.join(", ")} (the last to end stops the server)` : "none"}`,
  ];
}

export function registerDbCommand(program: Command): void {
  const db = program.command("db").description("the embedded PostgreSQL server (DATABASE_URL=embedded): its status, or stop it");
  db.command("status")
    .description("the embedded server's data folder, PostgreSQL major, whether it runs and on which port, and the processes holding a lease on it")
    .action(() => {
      const config = loadConfig();
      printOut(statusLines(embeddedStatus(config), config.databaseUrl, config.dataDir).join("\n"));
    });
  db.command("stop")
    .description("stop the embedded server (pg_ctl stop -m fast); refused while another dvault process holds a lease on it, unless --force")
    .option("--force", "stop it even while other processes use it (they lose their connections)")
    .action((opts: { force?: boolean }) => {
      const config = loadConfig();
      const outcome = stopEmbedded({ dataDir: config.dataDir, force: opts.force === true });
      if (!outcome.stopped) return printOut(`the embedded server in ${outcome.folder} is not running: nothing to stop`);
      const under = outcome.holders.length ? `; processes ${outcome.holders.join(", ")} lost their connections` : "";
      printOut(`stopped the embedded server in ${outcome.folder}${under}`);
    });
}
