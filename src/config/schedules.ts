// The sources' schedules from the settings: DVAULT_SCHEDULE_<SOURCE> (an interval such as 6h, or a 5-field cron
// expression), optionally per account, and DVAULT_SCHEDULE_TZ, the time zone cron expressions are read in. The
// worker installs them as BullMQ job schedulers (src/sync/schedules.ts); `dvault status` shows them.
import { createRequire } from "node:module";
import type { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import { DEFAULT_SOURCE_EVERY_MS, SOURCE_NAMES } from "../config-defaults.ts";
import { isTimeZone, parseDuration, emptyAsUndefined } from "./fields.ts";

const require = createRequire(import.meta.url);

export type ScheduledSource = (typeof SOURCE_NAMES)[number];

/** One source's schedule: BullMQ's `every` (ms) or its `pattern` read in `tz`. */
export type Schedule = Readonly<{ every: number }> | Readonly<{ pattern: string; tz: string }>;

/** A source's schedule for every account, and the accounts (lower-case names) that have their own. */
export type SourceSchedule = Readonly<{ all: Schedule; accounts: ReadonlyMap<string, Schedule> }>;

export type Schedules = Readonly<Record<ScheduledSource, SourceSchedule>>;

/** The shortest interval accepted: a source synced more often only spends the API's patience. */
const MIN_EVERY_MS = 60_000;
/** The longest: past it a next run is no date (99999999999d made each run's bookkeeping throw); rarer is a cron's. */
const MAX_EVERY_MS = 366 * 86_400_000;

export type ScheduleVariable = `DVAULT_SCHEDULE_${Uppercase<ScheduledSource>}`;

/** DVAULT_SCHEDULE_GALLERY, DVAULT_SCHEDULE_WATCH_FEED, ... */
export const scheduleVariable = (source: ScheduledSource) => `DVAULT_SCHEDULE_${source.toUpperCase()}` as ScheduleVariable;

const cronParser = () => (require("cron-parser") as { CronExpressionParser: typeof CronExpressionParser }).CronExpressionParser;

/** "6h" → every, "0 * * * *" → pattern; a string saying what is wrong otherwise. */
function readOne(raw: string, tz: string): Schedule | string {
  const text = raw.trim();
  if (/^\d/.test(text) && text.split(/\s+/).length === 1) {
    const every = parseDuration(text);
    if (every === undefined) return `"${text}" is no interval (such as 10min, 6h or 1d)`;
    if (every < MIN_EVERY_MS) return `"${text}" is shorter than 1min`;
    if (every > MAX_EVERY_MS) return `"${text}" is longer than 366d (a cron expression such as "0 3 1 1 *" runs once a year)`;
    return { every };
  }
  if (text.split(/\s+/).length !== 5) return `"${text}" is neither an interval (such as 6h) nor a 5-field cron expression (such as 0 * * * *)`;
  try {
    // .next() too: cron-parser reads "0 0 31 2,4 *" and only its walk finds that no date has it (each run's
    // bookkeeping, BullMQ's scheduler and status would throw on it after the worker started).
    cronParser().parse(text, { tz }).next();
  } catch {
    return `"${text}" is not a cron expression that a date satisfies (minute hour day-of-month month day-of-week)`;
  }
  return { pattern: text, tz };
}

/** `6h; alice=0 * * * *; bob=1d`: a schedule for every account, then `account=schedule` for some. */
export function readSchedule(raw: string | undefined, fallback: Schedule, tz: string): SourceSchedule | string {
  let all = fallback;
  const accounts = new Map<string, Schedule>();
  for (const part of (raw ?? "").split(";")) {
    if (!part.trim()) continue;
    const named = /^\s*([^=]+?)\s*=(.*)$/.exec(part);
    const one = readOne(named ? (named[2] ?? "") : part, tz);
    if (typeof one === "string") return one;
    if (named?.[1]) accounts.set(named[1].toLowerCase(), one);
    else all = one;
  }
  return { all, accounts };
}

export const DEFAULT_SCHEDULE_TZ = "UTC";

const scheduleField = () => z.preprocess(emptyAsUndefined, z.string().optional());

/** Merged into src/config.ts's EnvSchema: the time zone, and one variable per source (checked in schedulesFrom). */
export const SCHEDULE_ENV = {
  DVAULT_SCHEDULE_TZ: z.preprocess(
    emptyAsUndefined,
    z.string().refine(isTimeZone, { message: "expects an IANA time zone such as UTC or Europe/Berlin" }).default(DEFAULT_SCHEDULE_TZ),
  ),
  ...(Object.fromEntries(SOURCE_NAMES.map((s) => [scheduleVariable(s), scheduleField()])) as Record<ScheduleVariable, ReturnType<typeof scheduleField>>),
};

type ScheduleEnv = { DVAULT_SCHEDULE_TZ: string } & Partial<Record<ScheduleVariable, string | undefined>>;

/** Every source's schedule, or the problems (one per variable, naming it and what it expects). */
export function schedulesFrom(e: ScheduleEnv): { schedules: Schedules; problems: string[] } {
  const problems: string[] = [];
  const entries = SOURCE_NAMES.map((source) => {
    const name = scheduleVariable(source);
    const read = readSchedule(e[name], { every: DEFAULT_SOURCE_EVERY_MS[source] }, e.DVAULT_SCHEDULE_TZ);
    if (typeof read !== "string") return [source, read] as const;
    problems.push(`${name}: ${read}; expects an interval such as 6h or a cron expression such as "0 * * * *", optionally per account: "6h; alice=0 * * * *"`);
    return [source, { all: { every: DEFAULT_SOURCE_EVERY_MS[source] }, accounts: new Map() }] as const;
  });
  return { schedules: Object.freeze(Object.fromEntries(entries)) as Schedules, problems };
}

/** The schedule of `source` for the account named `username` (its own, or the source's). */
export function scheduleOf(schedules: Schedules, source: ScheduledSource, username: string | null | undefined): Schedule {
  const s = schedules[source];
  return (username ? s.accounts.get(username.toLowerCase()) : undefined) ?? s.all;
}

/** When a schedule next fires after `from` (ms): what the sync's bookkeeping records as its next run. */
export function nextRunOf(schedule: Schedule, from: number): number {
  if ("every" in schedule) return from + schedule.every;
  return cronParser()
    .parse(schedule.pattern, { tz: schedule.tz, currentDate: new Date(from) })
    .next()
    .getTime();
}

/** "every 6h", "cron 0 * * * * (Europe/Berlin)": how `dvault status` names a schedule. */
export function describeSchedule(schedule: Schedule): string {
  if ("pattern" in schedule) return `cron ${schedule.pattern} (${schedule.tz})`;
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "min"],
    [1000, "s"],
  ];
  const unit = units.find(([ms]) => schedule.every % ms === 0 && schedule.every >= ms);
  return unit ? `every ${schedule.every / unit[0]}${unit[1]}` : `every ${schedule.every}ms`;
}

/** Whether two schedules are the same (a changed one is re-installed, an unchanged one left running). */
export function sameSchedule(a: Schedule, b: Schedule): boolean {
  if ("every" in a) return "every" in b && a.every === b.every;
  return "pattern" in b && a.pattern === b.pattern && a.tz === b.tz;
}
