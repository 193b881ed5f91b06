// Notices that Redis lost what the worker installed in it (restarted without its data, flushed, failed over
// to an empty replica) and has it rebuilt from PostgreSQL: checked on every reconnect and every few seconds,
// because a restart with an empty data set looks like any other reconnect from the client's side.
// On PostgreSQL alone (src/queue/backend.ts) the schedulers sit in the mirror's own database, so no restart loses
// them without the tables they are rebuilt from; the same sentinel is still checked every few seconds (through
// BullMQ's API, the same on both engines), which catches what does take them alone: a restore of dvault's tables
// into a database whose queue schema is new, or the queue schema emptied by hand. There is no reconnect to watch.
import type { Redis } from "ioredis";
import type { Logger } from "../log.ts";
import { failureKind } from "./outage.ts";

export type RedisLossGuard = {
  /** Checks now (and rebuilds if needed); resolves when done. Never rejects: a failure is logged and retried later. */
  check(): Promise<void>;
  stop(): void;
};

const LOST_ON_REDIS = "Redis no longer holds the schedules (restarted without its data?): rebuilding them and the download queue from PostgreSQL";
const LOST_ON_POSTGRES = "the queues no longer hold the schedules (their schema restored or emptied?): rebuilding them and the download queue from the mirror";

export type RedisLossGuardOptions = {
  /** The queues' Redis command connection; its "ready" event (each reconnect) triggers a check. None on PostgreSQL. */
  redis?: Redis | undefined;
  /**
   * On PostgreSQL alone: the coordination store's reconnect notice (src/coord/postgres.ts), the queues living in the
   * same database. A restart there leaves what Redis's reconnect leaves: a row claimed whose job never reached the
   * queue (the claim committed, the job's insert met the outage), queued in the table and in no queue.
   */
  onReconnect?: ((listener: () => void) => () => void) | undefined;
  /** True while Redis still holds what was installed (e.g. a sentinel job scheduler). */
  isIntact: () => Promise<boolean>;
  rebuild: () => Promise<void>;
  /**
   * After a reconnect to a Redis that kept its data: whatever an outage can have left half-done (a row
   * claimed in PostgreSQL whose job never reached the queue) is repaired here.
   */
  afterReconnect?: () => Promise<void>;
  everyMs: number;
  log: Logger;
};

export function watchRedisLoss({ redis, onReconnect, isIntact, rebuild, afterReconnect, everyMs, log }: RedisLossGuardOptions): RedisLossGuard {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let reconnected = false;
  /**
   * What the failing checks are warned of, undefined once one passes: a store away for an hour is one warning, not one
   * every check (everyMs); a check failing otherwise (a rebuild refused once the store is back) is warned of at once.
   */
  let failing: string | undefined;

  const once = async () => {
    const repair = reconnected;
    reconnected = false;
    try {
      if (await isIntact()) {
        if (repair) await afterReconnect?.();
        return;
      }
    } catch (err) {
      reconnected ||= repair; // still owed: the next check repairs
      throw err;
    }
    const started = Date.now();
    log.warn(redis ? LOST_ON_REDIS : LOST_ON_POSTGRES);
    await rebuild();
    log.warn({ ms: Date.now() - started }, "schedules and download queue rebuilt from PostgreSQL");
  };

  // One check at a time; a trigger during a check runs one more after it.
  const check = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await once().then(
          () => void (failing = undefined),
          (err: unknown) => {
            const why = failureKind(err);
            log[failing === why ? "debug" : "warn"]({ err }, "could not check Redis for lost schedules; will try again");
            failing = why;
          },
        );
      } while (again && !stopped);
      running = undefined;
    })();
    return running;
  };

  // The guard starts on a connected client: every "ready" from here on is a reconnect.
  const onReady = () => {
    reconnected = true;
    void check();
  };
  redis?.on("ready", onReady);
  const stopListening = onReconnect?.(onReady);
  const timer = setInterval(() => void check(), everyMs);
  timer.unref();
  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
      redis?.off("ready", onReady);
      stopListening?.();
    },
  };
}
