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

/** How many kinds of line are remembered before those whose minute is over, with nothing held back, are forgotten. */
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
    if (last && at - last.at < LOG_EVERY_MS) {
      last.since++;
      log.debug(fields, message);
      return;
    }
    log[level]({ ...fields, ...(last?.since ? { [countedAs]: last.since } : {}) }, message);
    // Keys carry an error's words (a worker error that is no outage): bounded, whatever a long uptime meets.
    if (this.last.size >= FORGET_LINES_ABOVE) for (const [k, v] of this.last) if (at - v.at >= LOG_EVERY_MS && v.since === 0) this.last.delete(k);
    this.last.set(key, { at, since: 0 });
  }
}
