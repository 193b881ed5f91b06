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
  /** Accounts without a usable grant, before or during the run: they claim nothing more. */
  lost: ReadonlyMap<number, ReauthRequiredError>;
  batch: number;
  deviationids: readonly string[] | undefined;
  /** The run's claims are recorded under its lease, so they come back soon if it is killed. */
  lease: HolderLease;
};

export class OnceClaims {
  /** Every row claimed, as the lease names them (dropped from it at the end). */
  readonly held: string[] = [];
  private readonly exhausted = new Set<number>();
  private readonly had = new Set<string>();
  private readonly runStart: Date;

  constructor(private readonly args: OnceClaimsArgs) {
    this.runStart = new Date(args.services.now());
  }

  /** Whether an account may still have rows due. */
  get open(): boolean {
    return this.args.accounts.some((a) => !this.exhausted.has(a.id) && !this.args.lost.has(a.id));
  }

  /** The next batch of one account's due rows; empty when an account's claim found nothing new (try again while open). */
  async next(): Promise<ClaimedDownload[]> {
    const { services, deps, log, lost } = this.args;
    for (const account of this.args.accounts) {
      if (this.exhausted.has(account.id) || lost.has(account.id)) continue;
      const rows = await deps.repo.claimDueDownloads({
        accountId: account.id,
        now: new Date(Math.max(services.now(), this.runStart.getTime() + 1)),
        classes: services.config.downloadPriority,
        limit: this.args.batch,
        queuedBefore: this.runStart,
        deviationids: this.args.deviationids,
      });
      // A claim of nothing new (rows this run already had, left due by their outcome) ends the account's claims:
      // the run never loops on the same files.
      const fresh = rows.filter((r) => !this.had.has(r.id));
      const again = rows.filter((r) => this.had.has(r.id));
      for (const r of again) await deps.repo.releaseDownload(r.id, new Date(services.now()));
      if (again.length > 0) log.warn({ account: account.name, rows: again.length }, "rows this run already handled are due again: left for the next run");
      if (fresh.length === 0) {
        this.exhausted.add(account.id);
        continue;
      }
      for (const r of fresh) this.had.add(r.id);
      this.held.push(...fresh.map(heldRowItem));
      await this.args.lease.hold(fresh.map(heldRowItem));
      return fresh;
    }
    return [];
  }
}

/**
 * Turns at the weekly allowance, handed out in claim order (see DownloadRequest.reservationTurn): with several
 * jobs at once, the highest-priority files must still be the ones that spend it.
 */
export function reservationTurns(): () => ReservationTurn {
  let lastTurn: Promise<void> = Promise.resolve();
  return () => {
    const before = lastTurn;
    let pass: () => void = () => undefined;
    lastTurn = new Promise<void>((resolve) => (pass = resolve));
    return { wait: () => before, pass };
  };
}
