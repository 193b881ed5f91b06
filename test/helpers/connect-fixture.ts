// A first run for the dashboard's "Connect DeviantArt" (src/http/routes/connect.ts): an empty database (no
// account), the simulator with an application whose redirect whitelist holds the dashboard's callback (as a
// person registers it, docs/service-behaviour.md#redirect-whitelist), and the dashboard with "Sync now"
// through the producer, as the worker starts it. No worker runs: a first sync stays visible as waiting.
import { randomBytes } from "node:crypto";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { freePort } from "../../src/free-port.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { Producer } from "../../src/queue/producer.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createServices, type Services } from "../../src/services.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../../src/simulator/server.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { enqueueSyncNow } from "../../src/sync/sync-now.ts";
import { testConfig } from "./config.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { createTestRedis, type TestRedis } from "./redis.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "./sync-harness.ts";

export type ConnectFixture = {
  sim: Simulator;
  db: TestDatabase;
  redis: TestRedis;
  services: Services;
  admin: QueueAdmin;
  dash: RunningDashboard;
  /** The dashboard's callback, whitelisted for the simulator's application. */
  callbackUrl: string;
  close(): Promise<void>;
};

export async function createConnectFixture(sim: Omit<SimulatorOptions, "clients"> = {}): Promise<ConnectFixture> {
  const port = await freePort();
  const callbackUrl = `http://127.0.0.1:${port}/oauth/callback`;
  const simulator = await startSimulator({
    seed: 3,
    dataset: { deviations: 6 },
    ...sim,
    clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, redirectUris: ["http://127.0.0.1:8788/callback", callbackUrl] }],
  });
  const db = await createTestDatabase();
  const redis = await createTestRedis();
  const config = testConfig({
    DATABASE_URL: db.url,
    DVAULT_REDIS_PREFIX: redis.prefix,
    DVAULT_API_BASE: simulator.url,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
  });
  const services = await createServices({
    config,
    log: createLogger({ level: "silent" }),
    overrides: { now: () => simulator.clock.now().getTime(), secretKey: { key: randomBytes(32), source: "env", created: false } },
  });
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  const sources = new Map(SOURCES.map((s) => [s.name, s]));
  const actions = {
    syncNow: (accountId?: number) => enqueueSyncNow({ services, producer, sources, accountId }),
    downloadNow: async () => 0,
  };
  const dash = await startDashboard({ ...services, actions }, { host: "127.0.0.1", port });
  const admin = new QueueAdmin(services.queues);
  return {
    sim: simulator,
    db,
    redis,
    services,
    admin,
    dash,
    callbackUrl,
    async close() {
      await dash.close();
      await admin.close();
      await producer.close();
      await services.close();
      await simulator.close();
      await redis.cleanup();
      await db.drop();
    },
  };
}
