// The coordination seam on PostgreSQL (src/coord/coordinator.ts): rows of the dvault_coord schema in the mirror's
// database (src/db/coord.repository.ts holds the statements). A value's expiry is a time in the row, judged on
// every read against this driver's clock, so an expired lock is free the moment it expires whatever the sweep
// (every minute) has done; the sweep only reclaims the space. The driver's clock is the server's, as Redis's TTLs
// are: the offset of the server's clock from this host's, measured at open and again at every sweep, is added to
// this host's, so workers on hosts whose clocks disagree judge a lock's expiry alike. The pool reconnects by itself: onReconnect's
// listeners run after a statement that failed for want of a connection is followed by one that succeeds.
import { CoordRepository, COORD_SCHEMA, migrateCoordSchema } from "../db/coord.repository.ts";
import type { PgPool } from "../db/connect.ts";
import { withTransaction } from "../db/with-transaction.ts";
import type { Coordinator, CoordWrite } from "./coordinator.ts";

const SWEEP_EVERY_MS = 60_000;

export type PostgresCoordinatorOptions = {
  /** Default dvault_coord; the compliance tests give each test a schema of its own. */
  schema?: string;
  /** Epoch ms against which expiries are set and judged, instead of the server's clock; tests move it instead of waiting. */
  now?: () => number;
  /** This host's clock (Date.now), which the server's offset corrects; a test gives one that is wrong. */
  hostClock?: () => number;
  /** How often expired rows are deleted; 0: never (a test sweeps by hand). */
  sweepEveryMs?: number;
};

/**
 * A lost connection: a socket error (no SQLSTATE), a connection exception (class 08) or the server shutting
 * down or restarting (57P01–57P03). Any other SQLSTATE is an answer from a server that is there.
 */
const connectionLost = (err: unknown) => {
  const code = String((err as { code?: unknown })?.code ?? "");
  return !/^[0-9A-Z]{5}$/.test(code) || code.startsWith("08") || ["57P01", "57P02", "57P03"].includes(code);
};

/**
 * The server's clock as this host reads it: the host's clock plus the server's offset from it, read at the middle
 * of a round trip (its error: half the round trip); measure() reads the offset again.
 */
async function serverClock(pool: PgPool, schema: string, hostClock: () => number): Promise<{ now: () => number; measure(): Promise<void> }> {
  let offset = 0;
  const measure = async () => {
    // On a connection of its own, taken before the clock is read: a wait for one of the pool's would count as
    // half a round trip and put the clock ahead by half that wait.
    const client = await pool.connect();
    try {
      const sent = hostClock();
      const server = await new CoordRepository(client, schema).serverTimeMs();
      offset = Math.round(server - (sent + hostClock()) / 2);
    } finally {
      client.release();
    }
  };
  await measure();
  return { now: () => hostClock() + offset, measure };
}

/** Creates or upgrades the schema (src/db/coord.repository.ts#migrateCoordSchema), then the driver. */
export async function postgresCoordinator(pool: PgPool, options: PostgresCoordinatorOptions = {}): Promise<Coordinator & { sweep(): Promise<number> }> {
  const schema = options.schema ?? COORD_SCHEMA;
  const client = await pool.connect();
  try {
    await migrateCoordSchema(client, schema);
  } finally {
    client.release();
  }
  const repo = new CoordRepository(pool, schema);
  const clock = options.now ? { now: options.now, measure: async () => undefined } : await serverClock(pool, schema, options.hostClock ?? Date.now);
  const now = clock.now;
  const listeners = new Set<() => void>();
  let lost = false;
  /** Runs one statement, noting a lost connection and telling the listeners once one works again. */
  const run = async <T>(statement: () => Promise<T>): Promise<T> => {
    try {
      const result = await statement();
      if (lost) {
        lost = false;
        for (const listener of listeners) listener();
      }
      return result;
    } catch (err) {
      if (connectionLost(err)) lost = true;
      throw err;
    }
  };
  const expiry = (ttlMs: number | undefined) => (ttlMs === undefined ? null : now() + ttlMs);
  const sweep = () =>
    run(async () => {
      await clock.measure();
      return repo.sweepExpired(now());
    });
  const everyMs = options.sweepEveryMs ?? SWEEP_EVERY_MS;
  const timer = everyMs > 0 ? setInterval(() => void sweep().catch(() => undefined), everyMs) : undefined;
  timer?.unref();

  return {
    engine: "postgres",
    sweep,
    get: (key) => run(() => repo.readValue(key, now())),
    async getMany(keys) {
      if (keys.length === 0) return [];
      const found = await run(() => repo.readValues(keys, now()));
      return keys.map((k) => found.get(k));
    },
    put: (key, value, { ttlMs } = {}) => run(() => repo.writeValue(key, value, expiry(ttlMs))),
    putIfAbsent: (key, value, { ttlMs } = {}) => run(() => repo.writeValueIfAbsent(key, value, expiry(ttlMs), now())),
    remove: async (...keys) => (keys.length === 0 ? 0 : run(() => repo.deleteKeys(keys, now()))),
    exists: async (key) => (await run(() => repo.kindOfKey(key, now()))) !== "none",
    kindOf: (key) => run(() => repo.kindOfKey(key, now())),
    keysStartingWith: (prefix) => run(() => repo.listKeysStartingWith(prefix, now())),
    removeIfEquals: (key, expected) => run(() => repo.deleteValueIfEquals(key, expected, now())),
    extendIfEquals: (key, expected, ttlMs) => run(() => repo.extendValueIfEquals(key, expected, now() + ttlMs, now())),
    hashPut: (key, fields) => run(() => repo.writeHashFields(key, fields)),
    hashGet: (key, field) => run(() => repo.readHashField(key, field)),
    hashGetAll: (key) => run(() => repo.readHashFields(key)),
    hashRemove: (key, fields) => run(() => repo.deleteHashFields(key, fields)),
    setAdd: (key, members) => run(() => repo.addSetMembers(key, members)),
    setRemove: (key, members) => run(() => repo.deleteSetMembers(key, members)),
    setMembers: (key) => run(() => repo.readSetMembers(key)),
    writeTogether: (writes) =>
      run(() =>
        withTransaction(pool, async (tx) => {
          const inTx = new CoordRepository(tx, schema);
          for (const w of writes) await applyWrite(inTx, w, expiry, now());
        }),
      ),
    ping: () => run(() => repo.ping()),
    onReconnect(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      if (timer) clearInterval(timer);
      listeners.clear();
    },
  };
}

async function applyWrite(repo: CoordRepository, w: CoordWrite, expiry: (ttlMs: number | undefined) => number | null, now: number): Promise<void> {
  if ("put" in w) await repo.writeValue(w.put, w.value, expiry(w.ttlMs));
  else if ("remove" in w) {
    if (w.remove.length > 0) await repo.deleteKeys(w.remove, now);
  } else if ("hashPut" in w) await repo.writeHashFields(w.hashPut, w.fields);
  else await repo.deleteHashFields(w.hashRemove, w.fields);
}
