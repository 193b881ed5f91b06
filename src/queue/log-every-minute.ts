// Lines that repeat for as long as a store is away (a job delayed by an outage, a queue's worker errors, a heartbeat
// the store refuses): each kind goes out at its level once a minute, at debug in between, and the next one counts
// those. A store down for maintenance or a host rebooting lasts an hour, a read-only database until a person acts.
import type { Logger } from "../log.ts";

/** How often a line of one kind goes out at its level. */
export const LOG_EVERY_MS = 60_000;

export type MinuteLine = {
  /** The kind of line: one a minute per key. */
  key: string;
  level: "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
  /** Default the one given at construction (a job's child logger, say). */
  log?: Logger;
  /** The field of the next line at its level that counts the ones at debug meanwhile (default `repeatedMeanwhile`). */
  countedAs?: string;
};

/**
 * How many kinds of line are remembered; above it the one seen longest ago is forgotten (its next line goes out at its
 * level, without the count of those held back meanwhile).
 */
const FORGET_LINES_ABOVE = 256;

export class EveryMinuteLog {
  private readonly last = new Map<string, { at: number; since: number }>();

  /** `now`: the wall clock by default; the log's volume is real time, whatever clock the jobs' delays follow. */
  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  line({ key, level, fields, message, log = this.log, countedAs = "repeatedMeanwhile" }: MinuteLine): void {
    const at = this.now();
    const last = this.last.get(key);
    // Kept in the order last seen: the first is the one to forget.
    this.last.delete(key);
    if (last && at - last.at < LOG_EVERY_MS) {
      last.since++;
      this.last.set(key, last);
      log.debug(fields, message);
      return;
    }
    log[level]({ ...fields, ...(last?.since ? { [countedAs]: last.since } : {}) }, message);
    this.last.set(key, { at, since: 0 });
    // Keys carry an error's words (a worker error that is no outage, its job's id in them): bounded, whatever a long
    // uptime meets. A key held back once (BullMQ raises "Missing lock for job 7" twice, for the completed move and the
    // failed one) was kept for good when only the keys with nothing held back were forgotten.
    if (this.last.size > FORGET_LINES_ABOVE) this.last.delete(this.last.keys().next().value as string);
  }

  /** How many kinds of line it remembers: FORGET_LINES_ABOVE at most. */
  get size(): number {
    return this.last.size;
  }
}
