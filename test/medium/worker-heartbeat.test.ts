// The worker's heartbeat while its coordination store is away (on DVAULT_ENGINE=postgres, PostgreSQL alone): every
// beat fails, every 15 s; it said so at warn with a stack trace each time. Now one warning a minute names the store and
// the reason, no stack, the beats failed meanwhile at debug and counted in the next warning (src/queue/heartbeat.ts).
import { afterEach, expect, it } from "vitest";
import { postgresCoordinator } from "../../src/coord/postgres.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { createLogger } from "../../src/log.ts";
import { startHeartbeat } from "../../src/queue/heartbeat.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { startOutageProxy } from "../helpers/outage-proxy.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

type Line = { level: number; msg: string; err?: unknown; service?: string; reason?: string; repeatedMeanwhile?: number };

it("warns once a minute while PostgreSQL is away, naming it, without a stack trace, and beats again once it is back", async () => {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  const proxy = await startOutageProxy(db.url);
  cleanups.push(() => proxy.close());
  const pool = createPgPool(proxy.url);
  cleanups.push(() => pool.end());
  const coord = await postgresCoordinator(pool, { schema: "dvault_coord_heartbeat", sweepEveryMs: 0 });
  cleanups.push(() => coord.close());
  const lines: Line[] = [];
  const log = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  let clock = Date.parse("2026-11-30T12:00:00Z");
  // The timer never fires here: the test beats by hand, the clock moved 15 s each time as the timer would.
  const heartbeat = await startHeartbeat({ coord, key: "dvault-test:heartbeat:h1", id: "h1", log, everyMs: 3_600_000, now: () => clock });
  cleanups.push(async () => heartbeat.stop());
  const stored = async () => JSON.parse((await coord.get("dvault-test:heartbeat:h1")) ?? "null") as { at: string } | null;
  expect(await stored()).toEqual({ id: "h1", at: "2026-11-30T12:00:00.000Z" });

  await proxy.down();
  // 75 s away: six beats.
  for (let beat = 0; beat < 6; beat++, clock += 15_000) await heartbeat.beat();
  const failed = lines.filter((l) => l.msg === "heartbeat failed");
  expect(failed.map((l) => l.level)).toEqual([40, 20, 20, 20, 40, 20]);
  const warnings = failed.filter((l) => l.level === 40);
  for (const warning of warnings) {
    expect(warning.err).toBeUndefined();
    expect(warning.service).toMatch(/PostgreSQL/);
    expect(warning.reason).toMatch(/ECONNREFUSED|Connection terminated/);
  }
  expect(warnings[1]?.repeatedMeanwhile).toBe(3);

  await proxy.up();
  await heartbeat.beat();
  expect(await stored()).toEqual({ id: "h1", at: "2026-11-30T12:01:30.000Z" });
}, 30_000);
