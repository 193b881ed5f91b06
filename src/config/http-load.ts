// The dashboard under load and the database pool: the fragment of the environment schema src/config.ts merges
// in. How many requests of one page run at once and how many wait (src/http/route-gate.ts), and how many
// PostgreSQL connections the process opens (src/services.ts). README.md#the-dashboard-under-load.
import type { z } from "zod";
import { durationSetting, parseDuration, wholeNumber } from "./fields.ts";

export const HTTP_LOAD_ENV = {
  DVAULT_HTTP_CONCURRENCY: wholeNumber(1, 256, "expects 1 to 256 requests of one page at once", 16),
  DVAULT_HTTP_QUEUE: wholeNumber(0, 100_000, "expects 0 to 100000 waiting requests per page", 256),
  DVAULT_HTTP_QUEUE_WAIT: durationSetting("15s"),
  DVAULT_DB_POOL_SIZE: wholeNumber(2, 1000, "expects 2 to 1000 connections (PostgreSQL's max_connections bounds every process's together)", 7),
};

type HttpLoadEnv = { [K in keyof typeof HTTP_LOAD_ENV]: z.infer<(typeof HTTP_LOAD_ENV)[K]> };

export type HttpLoadConfig = {
  /**
   * The dashboard under load (src/http/route-gate.ts): requests of one page run at once (DVAULT_HTTP_CONCURRENCY),
   * may wait for a turn (DVAULT_HTTP_QUEUE) for so long (DVAULT_HTTP_QUEUE_WAIT); past that, 503 with Retry-After.
   */
  httpLoad: Readonly<{ concurrency: number; queue: number; queueWaitMs: number }>;
  /** PostgreSQL connections this process opens at most (DVAULT_DB_POOL_SIZE), shared by every part of it. */
  dbPoolSize: number;
};

export function httpLoadFrom(e: HttpLoadEnv): HttpLoadConfig {
  return {
    httpLoad: Object.freeze({
      concurrency: e.DVAULT_HTTP_CONCURRENCY,
      queue: e.DVAULT_HTTP_QUEUE,
      queueWaitMs: parseDuration(e.DVAULT_HTTP_QUEUE_WAIT) ?? 15_000,
    }),
    dbPoolSize: e.DVAULT_DB_POOL_SIZE,
  };
}
