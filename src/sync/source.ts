// The contract of one sync source (own galleries, messages, notes, ...): what a handler gets, what it
// returns. The runner (run-source.ts) owns locking, tokens, bookkeeping and error outcomes.
import type { DaClient } from "../api/client.ts";
import type { Logger } from "../log.ts";
import type { SyncRepos } from "./repos.ts";
import type { SourceRef, SourceState } from "../db/sync-state.repository.ts";

// For jobs/sync-source/definition.ts, which imports it through this file.
import { type SOURCE_NAMES, DEFAULT_SOURCE_EVERY_MS } from "../config-defaults.ts";
export type SourceName = (typeof SOURCE_NAMES)[number];

export type SyncAccount = { id: number; name: string; userId: string; username: string };

/** Items new / changed / removed in this run, reported per source in the summary and status. */
export type ItemCounters = { new: number; changed: number; removed: number };

export type SourceContext = {
  account: SyncAccount;
  ref: Required<SourceRef>;
  /** '' or, for "tracked", the tracked username. */
  key: string;
  /** Calls as the account's user (mature_content=true). */
  client: DaClient;
  /**
   * Calls with a client-credentials token, when one is configured (public endpoints only). Resolved on
   * first use, so sources that never call public endpoints cost no token lookup or request.
   */
  publicClient(): Promise<DaClient | undefined>;
  /** Repositories on the pool, for reads and single statements. */
  repos: SyncRepos;
  /** One transaction: a page, its cursor (repos.syncState.saveSourceState) and its counters commit together. */
  transaction<T>(fn: (repos: SyncRepos) => Promise<T>): Promise<T>;
  /** The row in sync_sources before this run (null on the very first run). */
  state: SourceState | null;
  /** A full sweep: walk everything, then mark what was not seen since `sweepStartedAt` removed. */
  full: boolean;
  /**
   * When this run started, or for a full sweep resumed after an interruption, when that sweep started:
   * rows not seen since then are gone from a swept listing.
   */
  startedAt: Date;
  now(): Date;
  log: Logger;
  /** Aborted at shutdown; call checkpoint() between pages. */
  signal: AbortSignal;
  /** Throws InterruptedError if the worker is stopping. Call it after committing a page. */
  checkpoint(): void;
  /** Before a long walk: a token valid for the next minutes, checked with the placebo call. */
  ensureFreshToken(): Promise<void>;
  counters: ItemCounters;
};

export type SourceOutcome = {
  /**
   * "degraded": the source (or part of it) is unavailable upstream, or its owner is; the reason is
   * recorded, the sync doesn't fail. "incomplete": its listings (witnesses) disagree or part of it could
   * not be reached or read; `reason` says what is missing and why (docs/service-behaviour.md#folders-optional).
   */
  result: "ok" | "degraded" | "incomplete";
  unavailableReason?: string;
  /** For "incomplete": what is missing and why, with counts. */
  reason?: string;
  /** For "ok": what is worth knowing but not missing (works a public token may not see). */
  note?: string;
  /** True when this run walked the whole source (a full sweep completed). */
  completeSweep?: boolean;
};

export type SourceDefinition = {
  name: SourceName;
  /** Default interval between runs; overridable per source in config. */
  everyMs: number;
  /** Sources that need the account's user token (everything but "static"). */
  needsUser: boolean;
  run(ctx: SourceContext): Promise<SourceOutcome>;
};

/** The schedules when the settings name none (src/config-defaults.ts; DVAULT_SCHEDULE_<SOURCE> overrides them). */
export const DEFAULT_EVERY_MS: Readonly<Record<SourceName, number>> = DEFAULT_SOURCE_EVERY_MS;

/** A full sweep per source at most this often (spread by account and source so they don't coincide). */
export const FULL_SWEEP_EVERY_MS = 7 * 24 * 3_600_000;
