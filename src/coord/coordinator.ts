// The coordination seam (docs/ARCHITECTURE.md#the-coordination-seam): everything dvault keeps outside its mirror
// that is not a queue or the API's pace — single-flight locks, holder leases and the items they hold, worker
// heartbeats, the downloads' pause switch, paid download answers, small markers — as the few operations dvault
// needs. Two drivers: Redis (src/coord/redis.ts, the keys of today's installs) and PostgreSQL (src/coord/postgres.ts,
// tables of their own schema in the mirror's database). test/medium/coord-compliance.test.ts runs every behaviour
// against both.

/** Which driver: the engine of src/config.ts (DVAULT_ENGINE). */
export type CoordEngine = "redis" | "postgres";

/** What a key holds: nothing, a value (put/get), or something else (a hash or a set). */
export type KeyKind = "none" | "value" | "other";

/** One of the writes `writeTogether` applies all at once or not at all. */
export type CoordWrite =
  | { put: string; value: string; ttlMs?: number }
  | { remove: readonly string[] }
  | { hashPut: string; fields: Readonly<Record<string, string>> }
  | { hashRemove: string; fields: readonly string[] };

export interface Coordinator {
  readonly engine: CoordEngine;

  /** The value under `key`, undefined when there is none or it has expired. */
  get(key: string): Promise<string | undefined>;
  /** Several values at once, in the order asked. */
  getMany(keys: readonly string[]): Promise<(string | undefined)[]>;
  /** Stores a value, replacing any; `ttlMs`: it expires that long from now (else it stays). */
  put(key: string, value: string, options?: { ttlMs?: number }): Promise<void>;
  /** Stores a value only when none is there (an expired one counts as none); true when this call stored it. */
  putIfAbsent(key: string, value: string, options?: { ttlMs?: number }): Promise<boolean>;
  /** Removes keys of any kind; how many existed. */
  remove(...keys: string[]): Promise<number>;
  /** Whether anything (a live value, a hash, a set) is stored under `key`. */
  exists(key: string): Promise<boolean>;
  /** What `key` holds: a reader of a switch another version may have written differently reads it tolerantly. */
  kindOf(key: string): Promise<KeyKind>;
  /** Every key that starts with `prefix` (expired values left out). */
  keysStartingWith(prefix: string): Promise<string[]>;

  /** Removes the value only while it is exactly `expected` (a lock's owner token); true when it did. */
  removeIfEquals(key: string, expected: string): Promise<boolean>;
  /** Gives the value a new expiry, `ttlMs` from now, only while it is exactly `expected`; true when it did. */
  extendIfEquals(key: string, expected: string, ttlMs: number): Promise<boolean>;

  /** Sets fields of the hash under `key`. */
  hashPut(key: string, fields: Readonly<Record<string, string>>): Promise<void>;
  hashGet(key: string, field: string): Promise<string | undefined>;
  /** Every field of the hash (an empty object when there is none). */
  hashGetAll(key: string): Promise<Record<string, string>>;
  hashRemove(key: string, fields: readonly string[]): Promise<void>;

  setAdd(key: string, members: readonly string[]): Promise<void>;
  setRemove(key: string, members: readonly string[]): Promise<void>;
  setMembers(key: string): Promise<string[]>;

  /** Applies every write, all at once or none of them (a holder's registry entry with its lease). */
  writeTogether(writes: readonly CoordWrite[]): Promise<void>;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  /**
   * Calls `listener` when the connection is back after it was lost (what was written meanwhile may be gone, and a
   * lease should be renewed at once). Returns the call that stops it.
   */
  onReconnect(listener: () => void): () => void;
  /** Stops the driver's own timers and listeners; the connection stays its maker's to close. */
  close(): Promise<void>;
}
