// `dvault archive --once`'s download step beside its sync (src/downloads/once-claims.ts): while the sync lists, a claim
// that finds nothing looks again every BESIDE_POLL_MS, and ends its wait as soon as the sync settles. The sync is
// watched once, not at every look: a sync of hours would otherwise hold a reaction per look (four a second) until
// it settles.
import { describe, expect, it } from "vitest";
import type { DownloadDeps } from "../../src/downloads/deps.ts";
import { BESIDE_POLL_MS, OnceClaims } from "../../src/downloads/once-claims.ts";
import { createLogger } from "../../src/log.ts";
import type { HolderLease } from "../../src/queue/holder.ts";
import type { Services } from "../../src/services.ts";

/** A promise that counts the reactions added to it. */
class Watched<T> extends Promise<T> {
  static reactions = 0;
  // biome-ignore lint/suspicious/noThenProperty: counts the reactions a promise is given
  override then<A = T, B = never>(ok?: ((v: T) => A | PromiseLike<A>) | null, no?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    Watched.reactions++;
    return super.then(ok, no);
  }
}

function claimsBeside(alongside: Promise<unknown>): OnceClaims {
  const services = { now: () => Date.now(), config: { downloadPriority: ["gallery"] } } as unknown as Services;
  const deps = { repo: { claimDueDownloads: async () => [], releaseDownload: async () => undefined } } as unknown as DownloadDeps;
  const lease: HolderLease = { hold: async () => undefined, drop: async () => undefined, stop: async () => undefined };
  return new OnceClaims({
    services,
    deps,
    log: createLogger({ level: "silent" }),
    accounts: [{ id: 1, name: "a" }],
    lost: new Map(),
    batch: 10,
    deviationids: undefined,
    lease,
    alongside,
  });
}

describe("OnceClaims beside a sync", () => {
  it("looks again while the sync runs without adding a reaction to it at each look, and stops waiting when it settles", async () => {
    let settle: () => void = () => undefined;
    const sync = new Watched<void>((resolve) => (settle = resolve));
    Watched.reactions = 0;
    const claims = claimsBeside(sync);
    const watched = Watched.reactions;
    for (let i = 0; i < 3; i++) expect(await claims.next()).toEqual([]);
    expect(Watched.reactions, "reactions added by the looks").toBe(watched);
    const waiting = claims.next();
    const started = Date.now();
    settle();
    await waiting;
    expect(Date.now() - started).toBeLessThan(BESIDE_POLL_MS);
    expect(claims.open).toBe(true);
  });
});
