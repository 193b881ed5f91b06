// The digest schedule: node-cron (DVAULT_DIGEST_CRON in DVAULT_DIGEST_TZ) whose tick only enqueues one
// digest job per channel with the id (channel, tick), so every worker may run the cron and a second
// worker's tick at the same moment adds nothing. Ticks missed while the machine was off are caught up
// once at start, as one digest per channel covering the whole gap (its window starts where the last
// delivered one ended); ticks a running worker reaches late (asleep, its clock stepped) run once on waking.
import cron, { type ScheduledTask } from "node-cron";
import type { Logger } from "../log.ts";
import type { DigestChannel, DigestConfig } from "../config/digest.ts";
import { CronClock, floorToMinute } from "./cron-time.ts";
import type { DigestJobPayload } from "./run-digest.ts";

export type DigestSchedulerOptions = {
  config: DigestConfig;
  /** Adds the digest job (the producer; its job id is digestJobId(payload)). */
  enqueue: (payload: DigestJobPayload) => Promise<unknown>;
  /** Where a channel's next window starts (DigestRepository.lastWindowEnd). */
  lastWindowEnd: (channel: DigestChannel) => Promise<Date | null>;
  log: Logger;
  /** Epoch ms; injectable so catch-up can be tested at any time. */
  now?: () => number;
};

export class DigestScheduler {
  readonly clock: CronClock;
  private task: ScheduledTask | undefined;
  private readonly now: () => number;

  constructor(private readonly options: DigestSchedulerOptions) {
    this.clock = new CronClock(options.config.cron, options.config.timezone);
    this.now = options.now ?? Date.now;
  }

  /**
   * The tick at `at` (snapped to the latest cron tick at or before it): one job per configured channel.
   * Returns the ticks' payloads.
   */
  async tick(at: Date, trigger: "cron" | "catch_up" = "cron"): Promise<DigestJobPayload[]> {
    const tick = this.clock.latestTickAtOrBefore(at) ?? floorToMinute(at);
    const payloads = this.options.config.channels.map((channel): DigestJobPayload => ({ channel, tick: tick.toISOString(), trigger }));
    for (const p of payloads) await this.options.enqueue(p);
    if (payloads.length) this.options.log.info({ tick: tick.toISOString(), trigger, channels: payloads.map((p) => p.channel) }, "digest tick");
    return payloads;
  }

  /**
   * Once at start: a channel whose last window ended before the latest tick missed ticks while nothing ran;
   * one job for that latest tick covers the whole gap. Channels that never sent a digest wait for the next tick.
   */
  async catchUp(): Promise<DigestJobPayload[]> {
    const latest = this.clock.latestTickAtOrBefore(new Date(this.now()));
    if (!latest) return [];
    const payloads: DigestJobPayload[] = [];
    for (const channel of this.options.config.channels) {
      const lastEnd = await this.options.lastWindowEnd(channel);
      if (!lastEnd || lastEnd.getTime() >= latest.getTime()) continue;
      const payload: DigestJobPayload = { channel, tick: latest.toISOString(), trigger: "catch_up" };
      await this.options.enqueue(payload);
      payloads.push(payload);
    }
    if (payloads.length) {
      this.options.log.info(
        { tick: latest.toISOString(), channels: payloads.map((p) => p.channel) },
        "catching up digests missed while dvault was not running",
      );
    }
    return payloads;
  }

  /** Starts the cron (nothing to do without channels). */
  start(): void {
    if (this.task || this.options.config.channels.length === 0) return;
    this.task = cron.schedule(
      this.options.config.cron,
      async (ctx) => {
        try {
          await this.tick(ctx.date ?? new Date(this.now()));
        } catch (err) {
          this.options.log.error({ err }, "digest tick failed to enqueue; the next start catches it up");
        }
      },
      {
        timezone: this.options.config.timezone,
        name: "dvault-digest",
        suppressMissedWarning: true,
        // node-cron drops a tick it reaches more than a second late (its default tolerance): a machine suspended
        // over the tick, a wall clock stepped forward, a stalled event loop lost that digest for good, and the
        // catch-up runs only at start. Any lateness instead runs the latest tick that passed, once (node-cron counts
        // the earlier ones as missed), and its window starts where the last delivered one ended.
        missedExecutionTolerance: Number.POSITIVE_INFINITY,
      },
    );
  }

  async stop(): Promise<void> {
    if (this.task) await this.task.destroy();
    this.task = undefined;
    this.clock.destroy();
  }
}
