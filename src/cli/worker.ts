// `dvault worker`: the long-running daemon. Applies migrations, checks Redis, then runs until SIGTERM/SIGINT.
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { migrate } from "../db/migrate.ts";
import { createLogger } from "../log.ts";
import { checkRedis } from "../queue/redis.ts";
import { startWorker } from "../worker.ts";

export function registerWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description("run the background worker (schedulers, job processors, token refresher) until stopped")
    .action(async () => {
      const config = loadConfig();
      const log = createLogger({ level: config.logLevel });
      await checkRedis(config.redisUrl);
      const migrated = await migrate(config.databaseUrl);
      if (migrated.applied.length) log.info({ applied: migrated.applied }, "applied migrations");
      const worker = await startWorker({ config, log });
      await worker.untilStopped();
    });
}
