// The few reads and writes of BullMQ's PostgreSQL tables that its API has no call for (the queues live in their
// own schema, src/queue/backend.ts): the lock of an active job taken back from a dead holder (src/queue/requeue.ts),
// the queues' event log read from where the last scrape stopped (src/metrics.ts), and a scratch schema's removal.
import type pg from "pg";
import { tableExists } from "./catalog.ts";
import { quoteIdent } from "./connect.ts";

/** The pool: a scratch schema is held by a session of its own (holdScratch). */
type PoolLike = Pick<pg.Pool, "query" | "connect">;

/** The advisory lock a scratch schema's run holds on a session for as long as it runs (its process's life at most). */
const scratchLockKey = (schema: string) => `dvault_scratch:${schema}`;

export type QueueEventRow = { id: string; event: string; jobId: string | null; name: string | null };

export class QueueJobsRepository {
  private readonly schema: string;

  private readonly name: string;

  constructor(
    private readonly pool: PoolLike,
    schema: string,
  ) {
    this.name = schema;
    this.schema = quoteIdent(schema);
  }

  /**
   * The lock token of the job if it is still the activation `processedOn` by `holder`, taking `fresh` as its token
   * when it holds none (its lock lapsed); undefined when it is not (finished, or activated again meanwhile).
   */
  async lockOfActivation(queue: string, jobId: string, holder: string, processedOn: number, fresh: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ lock_token: string }>(
      `UPDATE ${this.schema}.job SET lock_token = COALESCE(lock_token, $5)
        WHERE queue = $1 AND id = $2 AND state = 'active' AND processed_by = $3 AND processed_at_ms = $4
        RETURNING lock_token`,
      [queue, jobId, holder, processedOn, fresh],
    );
    return rows[0]?.lock_token;
  }

  /** The id of the queue's newest event, "0" when it has none. */
  async lastEventId(queue: string): Promise<string> {
    const { rows } = await this.pool.query<{ max: string }>(`SELECT COALESCE(MAX(id), 0)::text AS max FROM ${this.schema}.event WHERE queue = $1`, [queue]);
    return rows[0]?.max ?? "0";
  }

  /** The queue's events after `afterId`, oldest first, each with the name of its job (null once the job is removed). */
  async eventsAfter(queue: string, afterId: string, limit: number): Promise<QueueEventRow[]> {
    const { rows } = await this.pool.query<{ id: string; event: string; job_id: string | null; name: string | null }>(
      `SELECT e.id::text AS id, e.event, e.data->>'jobId' AS job_id, j.name
         FROM ${this.schema}.event e
         LEFT JOIN ${this.schema}.job j ON j.queue = e.queue AND j.id = e.data->>'jobId'
        WHERE e.queue = $1 AND e.id > $2::bigint
        ORDER BY e.id
        LIMIT $3`,
      [queue, afterId, limit],
    );
    return rows.map((r) => ({ id: r.id, event: r.event, jobId: r.job_id, name: r.name }));
  }

  /**
   * Marks this (scratch) schema as in use by this process, before it is made: a session of its own holds an advisory
   * lock until the returned call (or the process's end, however it ends) lets it go. sweepDeadScratches drops only
   * schemas whose lock nobody holds.
   */
  async holdScratch(): Promise<() => Promise<void>> {
    const client = await this.pool.connect();
    try {
      await client.query("SELECT pg_advisory_lock(hashtext($1))", [scratchLockKey(this.name)]);
    } catch (err) {
      client.release(true);
      throw err;
    }
    return async () => {
      const ok = await client.query("SELECT pg_advisory_unlock(hashtext($1))", [scratchLockKey(this.name)]).then(
        () => true,
        () => false,
      );
      client.release(!ok);
    };
  }

  /**
   * Drops the scratch schemas of this schema (`<schema>_once_<random>`) that no live process holds: those of `--once`
   * runs killed outright, which never dropped their own. How many it dropped.
   */
  async sweepDeadScratches(): Promise<number> {
    const { rows } = await this.pool.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1) AND nspname ~ '_once_[0-9a-f]+$'",
      [`${this.name}_once_`],
    );
    let dropped = 0;
    for (const { nspname } of rows) {
      const client = await this.pool.connect();
      try {
        const got = await client.query<{ got: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS got", [scratchLockKey(nspname)]);
        if (!got.rows[0]?.got) continue;
        try {
          await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(nspname)} CASCADE`);
          dropped++;
        } finally {
          await client.query("SELECT pg_advisory_unlock(hashtext($1))", [scratchLockKey(nspname)]);
        }
      } finally {
        client.release();
      }
    }
    return dropped;
  }

  /** Whether BullMQ's migration ledger is in this schema (src/db/catalog.ts says why not a plain read). */
  async migrated(): Promise<boolean> {
    return tableExists(this.pool, this.name, "migration");
  }

  /** Drops the schema and every queue in it (run-now's scratch queues, a test's). */
  async dropSchema(): Promise<void> {
    await this.pool.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`);
  }
}
