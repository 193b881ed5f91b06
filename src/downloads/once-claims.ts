// The rows a `dvault download --once` run takes (run-once.ts): in priority order, a batch at a time, until a claim
// finds none due. A batch is a unit of claiming, never a ceiling of the run. Every claim also takes over rows a
// queue held when the run began (a killed run's, a stopped worker's; a running worker keeps the file it is on
// through the per-file lock), never the run's own claims, which are stamped after its start even on a clock that
// stands still: a file another process holds past the busy wait is left to it.
import type { ReauthRequiredError } from "../api/token-errors.ts";
import type { ClaimedDownload } from "../db/download.repository.ts";
import type { Logger } from "../log.ts";
import type { HolderLease } from "../queue/holder.ts";
import type { Services } from "../services.ts";
import type { DownloadDeps } from "./deps.ts";
import type { ReservationTurn } from "./outcome.ts";
import { heldRowItem } from "./reclaim.ts";

export type OnceClaimsArgs = {
  services: Services;
  deps: DownloadDeps;
  log: Logger;
  accounts: readonly { id: number; name: string }[];
  /** The install's accounts that can download, the run's or not (default: the run's): an account's claims leave the others' own works to them. */
  able?: readonly number[];
  /** Accounts without a usable grant, before or during the run: they claim nothing more. */
  lost: ReadonlyMap<number, ReauthRequiredError>;
  batch: number;
  deviationids: readonly string[] | undefined;
  /** The run's claims are recorded under its lease, so they come back soon if it is killed. */
  lease: HolderLease;
  /**
   * Work beside the run that makes rows due (`dvault archive --once`'s sync step). Until it settles, claims take
   * only rows that cannot spend the weekly allowance, and a claim of nothing waits for it (or BESIDE_POLL_MS) instead
   * of ending the claims: the allowance is spent only once every source has listed, in the priority order of all
   * it found (README: DVAULT_DOWNLOAD_PRIORITY).
   */
  alongside?: Promise<unknown> | undefined;
};

/** While work beside the run goes on, how often a claim that found nothing looks again. */
export const BESIDE_POLL_MS = 250;

export class OnceClaims {
  /** Every row claimed, as the lease names them (dropped from it at the end). */
  readonly held: string[] = [];
  /** The rows claimed that a queue held (queued by a sync for a worker): their jobs are moot once the run is done. */
  readonly fromQueue: string[] = [];
  private readonly exhausted = new Set<number>();
  private readonly had = new Set<string>();
  private readonly warned = new Set<string>();
  private readonly runStart: Date;
  private besideEnded: boolean;
  /** Ends nextBeside's wait at once when the work beside the run settles. */
  private wake: (() => void) | undefined;

  constructor(private readonly args: OnceClaimsArgs) {
    this.runStart = new Date(args.services.now());
    this.besideEnded = args.alongside === undefined;
    const ended = () => {
      this.besideEnded = true;
      this.wake?.();
    };
    args.alongside?.then(ended, ended);
  }

  /** Whether an account may still have rows due (none is exhausted while the work beside the run goes on: next()). */
  get open(): boolean {
    return this.args.accounts.some((a) => !this.exhausted.has(a.id) && !this.args.lost.has(a.id));
  }

  /** The next batch of one account's due rows; empty when an account's claim found nothing new (try again while open). */
  async next(): Promise<ClaimedDownload[]> {
    if (!this.besideEnded) return this.nextBeside();
    for (const account of this.args.accounts) {
      if (this.exhausted.has(account.id) || this.args.lost.has(account.id)) continue;
      // A claim of nothing new ends the account's claims: the run never loops on the same files. A claim whose rows were
      // all ones this run already had (failed, their retry time come during a long run) is not nothing new: those rows
      // are left out of the next claim, which reaches the rows behind them in the priority order.
      for (;;) {
        const { fresh, again } = await this.claim(account, false);
        if (fresh.length > 0) return fresh;
        if (again === 0) break;
      }
      this.exhausted.add(account.id);
    }
    return [];
  }

  /** While the work beside the run goes on: what spends no allowance, else a wait for more (nothing is exhausted yet). */
  private async nextBeside(): Promise<ClaimedDownload[]> {
    for (const account of this.args.accounts) {
      if (this.args.lost.has(account.id)) continue;
      const { fresh } = await this.claim(account, true);
      if (fresh.length > 0) return fresh;
    }
    // The work beside is watched once (the constructor), not again at every look: a reaction added to it each time
    // would be held until it settles, four a second through a sync of hours.
    if (this.besideEnded) return [];
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, BESIDE_POLL_MS);
      this.wake = done;
    });
    return [];
  }

  /**
   * One claim of an account's due rows: those the run had not yet had (`fresh`), held under its lease; the others
   * (`again`, how many) given back as they were before the claim, and left out of the run's later claims.
   */
  private async claim(account: { id: number; name: string }, freeOnly: boolean): Promise<{ fresh: ClaimedDownload[]; again: number }> {
    const { services, deps, log } = this.args;
    const rows = await deps.repo.claimDueDownloads({
      accountId: account.id,
      now: new Date(Math.max(services.now(), this.runStart.getTime() + 1)),
      classes: services.config.downloadPriority,
      limit: this.args.batch,
      queuedBefore: this.runStart,
      deviationids: this.args.deviationids,
      freeOnly,
      exceptIds: [...this.warned],
      leaveTo: (this.args.able ?? this.args.accounts.map((a) => a.id)).filter((id) => id !== account.id),
    });
    const fresh = rows.filter((r) => !this.had.has(r.id));
    const again = rows.filter((r) => this.had.has(r.id));
    // Given back as they were: a failed row stays failed (the run's summary says its failures are kept as failed).
    for (const r of again) await deps.repo.undoClaim(r.id, r.before, new Date(services.now()));
    const news = again.filter((r) => !this.warned.has(r.id));
    for (const r of news) this.warned.add(r.id);
    if (news.length > 0) log.warn({ account: account.name, rows: news.length }, "rows this run already handled are due again: left for the next run");
    for (const r of fresh) {
      this.had.add(r.id);
      if (r.before.queuedAt !== null) this.fromQueue.push(r.id);
    }
    if (fresh.length > 0) {
      this.held.push(...fresh.map(heldRowItem));
      await this.args.lease.hold(fresh.map(heldRowItem));
    }
    return { fresh, again: again.length };
  }
}

/**
 * Turns at the weekly allowance, handed out in claim order (see DownloadRequest.reservationTurn): with several
 * jobs at once, the highest-priority files must still be the ones that spend it. A turn comes once every earlier
 * one has passed, not only the one just before it: a text, or an original that spends nothing (not offered,
 * deleted), passes its turn as soon as it knows, without waiting for its own, and must not let the original after
 * it reserve before the originals before it.
 */
export function reservationTurns(): () => ReservationTurn {
  let lastTurn: Promise<void> = Promise.resolve();
  return () => {
    const before = lastTurn;
    let pass: () => void = () => undefined;
    const passed = new Promise<void>((resolve) => (pass = resolve));
    lastTurn = Promise.all([before, passed]).then(() => undefined);
    return { wait: () => before, pass };
  };
}
