// `dvault worker`: the long-running daemon. Applies pending migrations to a database that exists (the Docker image
// relies on it at start-up) but never creates one, checks Redis, then runs until SIGTERM/SIGINT.
import { type Command, InvalidArgumentError } from "commander";
import { loadConfig } from "../config.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { migrate } from "../db/migrate.ts";
import { createLogger } from "../log.ts";
import { checkRedis } from "../queue/redis.ts";
import { assertSafeBind } from "../http/server.ts";
import { startWorker } from "../worker.ts";

export function registerWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description("run the background worker (schedulers, job processors, token refresher) until stopped; DVAULT_WORKER_ROLES picks what it runs")
    .addHelpText(
      "after",
      "\nSIGTERM or SIGINT stops it gracefully. SIGHUP (kill -HUP <pid>) re-reads the settings file's schedules (DVAULT_SCHEDULE_*)\nand reschedules only the sources whose schedule changed; other settings apply at the next start.",
    )
    .option("--http", "also serve the web dashboard, /healthz and /metrics (adds the http role)")
    .option("--http-host <address>", "the dashboard's address (default DVAULT_HTTP_HOST or 127.0.0.1); any other than loopback needs DVAULT_HTTP_TOKEN")
    .option("--http-port <port>", "the dashboard's port (default DVAULT_HTTP_PORT or 8787)", (v) => {
      if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError("expects a port from 0 to 65535 (0: any free port)");
      return Number(v);
    })
    .action(async (opts: { http?: boolean; httpHost?: string; httpPort?: number }) => {
      const configured = loadConfig();
      const log = createLogger({ level: configured.logLevel });
      const http =
        opts.http || opts.httpHost || opts.httpPort !== undefined || configured.workerRoles.includes("http")
          ? { host: opts.httpHost ?? configured.httpHost, port: opts.httpPort ?? configured.httpPort, token: configured.httpToken }
          : undefined;
      // Refuse an exposed dashboard without a token before migrating or connecting anything.
      if (http) assertSafeBind(http.host, http.token);
      // On PostgreSQL alone no Redis is opened (src/services.ts), so none need answer.
      if (configured.engine === "redis") await checkRedis(configured.redisUrl);
      // DATABASE_URL=embedded: the server dvault runs, held until the worker stops (src/db/embedded/resolve.ts).
      const { config, release } = await resolveDatabase(configured);
      try {
        // A database that does not exist (a typo in DATABASE_URL) is refused with exit code 3, not created empty.
        const migrated = await migrate(config.databaseUrl);
        if (migrated.applied.length) log.info({ applied: migrated.applied }, "applied migrations");
        const worker = await startWorker({ config, log, ...(http ? { http } : {}) });
        await worker.untilStopped();
      } finally {
        release();
      }
    });
}
