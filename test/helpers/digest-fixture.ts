// A small mirror for digest tests without the simulator: a fresh database and Redis prefix, one account
// whose messages baseline is set, services configured for digests (SMTP to a test server by default),
// and a clock the test moves.
import { randomBytes } from "node:crypto";
import type { WorkerContext } from "../../jobs/context.ts";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { makeUser, makeMessage, insertAccount } from "./mirror-fixtures.ts";
import { MessageRepository } from "../../src/db/message.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { createLogger } from "../../src/log.ts";
import { createServices, type Services } from "../../src/services.ts";
import { testConfig } from "./config.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { createTestRedis, type TestRedis } from "./redis.ts";

export type DigestFixture = {
  db: TestDatabase;
  redis: TestRedis;
  services: Services;
  accountId: number;
  clock: { now: number };
  /** Fave messages from `count` new users on one deviation, first seen at `at`. */
  addFaves(count: number, at: Date): Promise<void>;
  close(): Promise<void>;
};

export const BASELINE = new Date("2026-11-01T12:00:00Z");

export async function createDigestFixture(env: Record<string, string> = {}): Promise<DigestFixture> {
  const db = await createTestDatabase();
  const redis = await createTestRedis();
  const clock = { now: Date.parse("2026-11-03T08:00:05Z") };
  const config = testConfig({
    DATABASE_URL: db.url,
    DVAULT_REDIS_PREFIX: redis.prefix,
    DVAULT_ARCHIVE_DIR: "/tmp",
    DVAULT_SMTP_FROM: "dvault <dvault@example.org>",
    DVAULT_SMTP_TO: "me@example.org",
    ...env,
  });
  const services = await createServices({ config, log: createLogger({ level: "silent" }), overrides: { now: () => clock.now } });
  const accountId = await insertAccount(services.pool, "me", "U-ME");
  await services.pool.query("INSERT INTO digest_baselines (account_id, source, baseline_at) SELECT $1, s, $2 FROM unnest($3::text[]) AS s", [
    accountId,
    BASELINE,
    ["messages", "notes", "watch_feed", "profile", "collections"],
  ]);
  let seq = 0;
  let people = 1;
  return {
    db,
    redis,
    services,
    accountId,
    clock,
    async addFaves(count, at) {
      const users = Array.from({ length: count }, () => {
        const n = ++people;
        return makeUser(n, { username: `fan${n}-${randomBytes(2).toString("hex")}` });
      });
      await new UserRepository(services.pool).upsertUsers(users, at);
      const messages = users.map((u) => makeMessage(`fave:${++seq}`, { originator: u }));
      await new MessageRepository(services.pool).upsertMessages(accountId, "feedback", messages, at);
    },
    async close() {
      await services.close();
      await redis.cleanup();
      await db.drop();
    },
  };
}

export type DigestWorker = { host: WorkerHost<WorkerContext>; producer: WorkerContext["producer"]; close(): Promise<void> };

/** A worker of the digest queue on the fixture's services (one per simulated process), with its producer. */
export function digestWorker(f: DigestFixture, opts: { now?: () => number } = {}): DigestWorker {
  const log = createLogger({ level: "silent" });
  const producer = new Producer([...JOB_DEFINITIONS], f.services.queues);
  const host = new WorkerHost<WorkerContext>({
    entries: checkCatalogue<WorkerContext>(JOBS),
    backend: f.services.queues,
    log,
    queues: ["digest"],
    makeContext: (base) => ({ ...base, services: f.services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} }),
    ...(opts.now ? { now: opts.now } : {}),
  });
  return {
    host,
    producer,
    async close() {
      await host.close();
      await producer.close();
    },
  };
}
