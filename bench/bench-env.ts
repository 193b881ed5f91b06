// The shared set-up of the sync benchmarks: a scratch database `dvault_bench_*` migrated from the project's
// migrations, a unique Redis prefix, the simulator, services and the simulator's owner logged in (the same
// steps as test/helpers/sync-harness.ts, without vitest). close() drops the database and the Redis keys.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig, type Config, type Engine } from "../src/config.ts";
import { connectPg, quoteIdent } from "../src/db/connect.ts";
import { migrate } from "../src/db/migrate.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { createLogger } from "../src/log.ts";
import { createRedis, deleteKeysByPrefix } from "../src/queue/redis.ts";
import { createServices, type ServiceOverrides, type Services } from "../src/services.ts";
import { startSimulator, type RequestLogEntry, type Simulator, type SimulatorOptions } from "../src/simulator/server.ts";
import { storeOwnerGrant } from "../test/helpers/owner-grant.ts";

export const BENCH_PG_URL = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
export const BENCH_REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const SIM_CLIENT_ID = "1001";
export const SIM_CLIENT_SECRET = "sim-secret-1001";
export const API_ROUTE_PREFIX = "/api/v1/oauth2";

export type BenchEnv = {
  sim: Simulator;
  databaseUrl: string;
  prefix: string;
  archiveDir: string;
  /** Hex of the token-encryption key, for worker processes that open the same grant. */
  secretKeyHex: string;
  config: Config;
  services: Services;
  accountId: number;
  close(): Promise<void>;
};

/** The environment of a bench process; child workers build theirs from the same values. */
export function benchConfig(v: BenchVars): Config {
  return loadConfig(benchEnvVars(v));
}

type BenchVars = { databaseUrl: string; prefix: string; apiBase: string; archiveDir: string; extra?: Record<string, string> };

/** The environment variables of benchConfig, for a `dvault` command the bench runs as a process of its own. */
export function benchEnvVars(v: BenchVars): Record<string, string> {
  return {
    HOME: os.tmpdir(),
    DATABASE_URL: v.databaseUrl,
    REDIS_URL: BENCH_REDIS_URL,
    DVAULT_REDIS_PREFIX: v.prefix,
    DVAULT_API_BASE: v.apiBase,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    DVAULT_ARCHIVE_DIR: v.archiveDir,
    DVAULT_CONFIG_DIR: path.join(v.archiveDir, ".config"),
    DVAULT_MIN_FREE_BYTES: "64MiB",
    LOG_LEVEL: "silent",
    ...v.extra,
  };
}

export async function createBenchEnv(opts: { sim: SimulatorOptions; overrides?: ServiceOverrides; configExtra?: Record<string, string> }): Promise<BenchEnv> {
  const tag = randomBytes(5).toString("hex");
  const databaseUrl = withDatabase(BENCH_PG_URL, `dvault_bench_${tag}`);
  const prefix = `dvault-bench-${tag}`;
  const archiveDir = mkdtempSync(path.join(os.tmpdir(), "dvault-bench-archive-"));
  const sim = await startSimulator(opts.sim);
  const cleanup: Array<() => Promise<void>> = [async () => rmSync(archiveDir, { recursive: true, force: true }), () => sim.close()];
  try {
    await migrate(databaseUrl, { createDatabase: true });
    cleanup.unshift(() => dropDatabase(databaseUrl));
    cleanup.unshift(() => deletePrefix(prefix));
    const config = benchConfig({ databaseUrl, prefix, apiBase: sim.url, archiveDir, ...(opts.configExtra ? { extra: opts.configExtra } : {}) });
    const key = randomBytes(32);
    const services = await createServices({
      config,
      log: createLogger({ level: "silent" }),
      overrides: {
        now: () => sim.clock.now().getTime(),
        secretKey: { key, source: "env", created: false },
        transport: { retry: { baseDelayMs: 10 } },
        ...opts.overrides,
      },
    });
    cleanup.unshift(() => services.close());
    const { id: accountId } = await storeOwnerGrant(services, sim);
    return {
      sim,
      databaseUrl,
      prefix,
      archiveDir,
      secretKeyHex: key.toString("hex"),
      config,
      services,
      accountId,
      async close() {
        for (const step of cleanup) await step().catch((err: unknown) => process.stderr.write(`bench cleanup: ${String(err)}\n`));
      },
    };
  } catch (err) {
    for (const step of cleanup) await step().catch(() => undefined);
    throw err;
  }
}

async function dropDatabase(url: string): Promise<void> {
  const admin = await connectPg(BENCH_PG_URL);
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(new URL(url).pathname.slice(1))} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

async function deletePrefix(prefix: string): Promise<void> {
  const redis = createRedis(BENCH_REDIS_URL);
  await redis.connect();
  try {
    await deleteKeysByPrefix(redis, prefix);
  } finally {
    await redis.quit();
  }
}

/** `--engines`: redis, postgres or both, each once, in the order given (the order of the interleaved runs). */
export function parseEngines(arg: string): Engine[] {
  const engines = arg.split(",");
  if (engines.some((e) => e !== "redis" && e !== "postgres") || new Set(engines).size !== engines.length) {
    throw new Error(`--engines takes redis, postgres or both (redis,postgres), not ${arg}`);
  }
  return engines as Engine[];
}

export function isApiEntry(e: RequestLogEntry): boolean {
  return e.route.startsWith(API_ROUTE_PREFIX);
}

export function lastSeq(sim: Simulator): number {
  const log = sim.log();
  return log.length ? (log[log.length - 1]?.seq ?? 0) : 0;
}

/** Markdown table from a header and rows. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const right = header.map((_, i) => rows.every((r) => typeof r[i] === "number" || /^[\d.,×%–-]+$/.test(String(r[i] ?? ""))));
  const line = (cells: Array<string | number>) => `| ${cells.map(String).join(" | ")} |`;
  return [line(header), `|${right.map((r) => (r ? "---:" : "---")).join("|")}|`, ...rows.map(line)].join("\n");
}

/** Other work on the machine when the bench began (1, 5, 15 min): the pacing figures are timing-sensitive. */
const START_LOAD = os.loadavg();

export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  const load = START_LOAD.map((l) => l.toFixed(1)).join(" ");
  return `${cpu}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM; ${os.type()} ${os.release()}, Node ${process.version}; load average at the start ${load}`;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

/** The body of docs/PERFORMANCE.md's section `name` as the last run left it, or "" when there is none. */
export async function readDocSection(name: string): Promise<string> {
  const { readFileSync } = await import("node:fs");
  const text = readFileSync(path.join(import.meta.dirname, "..", "docs", "PERFORMANCE.md"), "utf8");
  return new RegExp(`<!-- ${name}:begin[^>]*-->([\\s\\S]*?)<!-- ${name}:end -->`).exec(text)?.[1] ?? "";
}

/** Replaces (or appends) the section between `<!-- name:begin ... -->` and `<!-- name:end -->` in docs/PERFORMANCE.md. */
export async function writeDocSection(name: string, body: string, bench = name): Promise<void> {
  const { readFileSync, writeFileSync } = await import("node:fs");
  const file = path.join(import.meta.dirname, "..", "docs", "PERFORMANCE.md");
  const text = readFileSync(file, "utf8");
  const section = `<!-- ${name}:begin (written by bench/${bench}.ts) -->\n${body.trim()}\n\n<!-- ${name}:end -->`;
  const re = new RegExp(`<!-- ${name}:begin[^>]*-->[\\s\\S]*?<!-- ${name}:end -->`);
  writeFileSync(file, re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`);
}
