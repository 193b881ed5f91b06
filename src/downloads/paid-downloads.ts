// The per-file side of the quota ledger (src/downloads/quota.ts counts per account and week): the
// /deviation/download answer an attempt paid for, in the coordination store (src/coord/coordinator.ts) from the call until the file is stored (or the answer
// expires). One found at the start of an attempt was left by an attempt that failed (the job's retry comes soon)
// or by a process that died mid-file, and the attempt taking over uses its signed URL (still good for minutes:
// docs/service-behaviour.md#download-url-ttl) instead of spending a second one of the week's originals
// (docs/RELIABILITY.md#work-held-by-a-dead-process). The URL opens that one file and nothing else; it
// is kept well inside its lifetime and never logged.
import type { Coordinator } from "../coord/coordinator.ts";
import type { Download } from "../api/types.ts";

/** Well inside the URL's life (about 10 minutes); an expired one is refused by the CDN and fetched again. */
const KEEP_S = 300;

export type PaidDownload = { accountId: number; at: string; info: Download };

/** Where the paid answers live: one key per deviation under this prefix. */
export function paidDownloadsPrefix(prefix: string): string {
  return `${prefix}:downloads:paid:`;
}

/** How long a stored answer (`raw`, as remember() wrote it) has left at `now`, ms; 0 when spent or unreadable. */
export function paidAnswerLeftMs(raw: string, now: number): number {
  try {
    const at = Date.parse((JSON.parse(raw) as Partial<PaidDownload>).at ?? "");
    return Number.isNaN(at) ? 0 : Math.max(0, at + KEEP_S * 1000 - now);
  } catch {
    return 0;
  }
}

/**
 * This process's copy of each answer it paid for, beside the store's: on DVAULT_ENGINE=postgres the store is the
 * mirror's own database, so an outage that fails the job right after the service answered (a restart, a failover,
 * a full disk) is also one that loses the write of the answer, and the job's next attempt, seconds later in this
 * process, would pay a second time (test/medium/paid-answer-outage.test.ts). Kept as long as the store keeps it.
 */
const heldHere = new Map<string, { raw: string; untilMs: number }>();

function holdHere(key: string, raw: string, now: number): void {
  for (const [k, v] of heldHere) if (v.untilMs <= now) heldHere.delete(k);
  heldHere.set(key, { raw, untilMs: now + KEEP_S * 1000 });
}

function heldHereNow(key: string): string | undefined {
  const held = heldHere.get(key);
  return held && held.untilMs > Date.now() ? held.raw : undefined;
}

export class PaidDownloads {
  constructor(
    private readonly coord: Coordinator,
    private readonly prefix: string,
  ) {}

  private key(deviationid: string): string {
    return `${paidDownloadsPrefix(this.prefix)}${deviationid}`;
  }

  async remember(deviationid: string, accountId: number, info: Download, at: Date): Promise<void> {
    const paid: PaidDownload = { accountId, at: at.toISOString(), info };
    const raw = JSON.stringify(paid);
    // Here first: a store that fails now still leaves this process's next attempt the answer it paid for.
    holdHere(this.key(deviationid), raw, Date.now());
    await this.coord.put(this.key(deviationid), raw, { ttlMs: KEEP_S * 1000 });
  }

  /** A paid answer left by an earlier attempt (one that failed, or whose process died); undefined when none. */
  async recall(deviationid: string): Promise<PaidDownload | undefined> {
    const raw = (await this.coord.get(this.key(deviationid))) ?? heldHereNow(this.key(deviationid));
    if (raw === undefined) return undefined;
    try {
      const paid = JSON.parse(raw) as PaidDownload;
      return typeof paid.info?.src === "string" ? paid : undefined;
    } catch {
      return undefined;
    }
  }

  async forget(deviationid: string): Promise<void> {
    heldHere.delete(this.key(deviationid));
    await this.coord.remove(this.key(deviationid));
  }
}
