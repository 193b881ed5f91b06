// The worker's heartbeat: a key of the coordination store, written every 15 s and kept 60 s, by which the alerts, the
// dashboard's health check and the commands see a worker alive (src/digest/alerts.ts, src/cli/no-worker.ts). While
// that store is away (on DVAULT_ENGINE=postgres, PostgreSQL alone) every beat fails: one warning a minute, as for the
// jobs the outage delays (src/queue/log-every-minute.ts), naming the store and the reason without a stack trace when
// the error is a known outage (src/queue/outage.ts); the beats failed meanwhile go to debug, counted in the next one.
import type { Coordinator } from "../coord/coordinator.ts";
import type { Logger } from "../log.ts";
import { scrubString } from "../redact.ts";
import { EveryMinuteLog } from "./log-every-minute.ts";
import { outageOf } from "./outage.ts";

const HEARTBEAT_EVERY_MS = 15_000;
const HEARTBEAT_TTL_MS = 60_000;

export type Heartbeat = {
  /** Writes the key once (the timer does every everyMs); a failure is logged, never thrown. */
  beat(): Promise<void>;
  /** Stops the timer; the key stays until it expires or is removed. */
  stop(): void;
};

export type HeartbeatOptions = {
  coord: Pick<Coordinator, "put">;
  key: string;
  /** The worker's id (`<host>:<pid>`), written in the key's value. */
  id: string;
  log: Logger;
  everyMs?: number;
  /** Epoch ms of the value's `at` and of the warnings' once a minute; a test moves it instead of waiting. */
  now?: () => number;
};

/** Beats once, then every `everyMs` until stopped. */
export async function startHeartbeat({ coord, key, id, log, everyMs = HEARTBEAT_EVERY_MS, now = Date.now }: HeartbeatOptions): Promise<Heartbeat> {
  const warnings = new EveryMinuteLog(log, now);
  const failed = (err: unknown) => {
    const outage = outageOf(err);
    if (!outage) return warnings.line({ key: "heartbeat", level: "warn", fields: { err }, message: "heartbeat failed" });
    const fields = { service: outage.service, reason: scrubString(outage.reason) };
    warnings.line({ key: `heartbeat:${outage.kind}`, level: "warn", fields, message: "heartbeat failed" });
  };
  const beat = () => coord.put(key, JSON.stringify({ id, at: new Date(now()).toISOString() }), { ttlMs: HEARTBEAT_TTL_MS }).catch(failed);
  await beat();
  const timer = setInterval(beat, everyMs);
  return { beat, stop: () => clearInterval(timer) };
}
