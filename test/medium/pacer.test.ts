import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThrottleDelayError } from "../../src/api/errors.ts";
import { createPacer, type PacerClock, type PacerOptions } from "../../src/api/pacer.ts";
import { pacingStatusesOf } from "../../src/status/redis-state.ts";
import { createPacerStores, PACER_ENGINES, type PacerStores } from "../helpers/pacer-stores.ts";

/** A clock that only moves when someone sleeps on it: pacer waits take no real time. */
function fakeClock(start = 1_700_000_000_000): PacerClock & { t: number; slept: number[] } {
  const clock = {
    t: start,
    slept: [] as number[],
    now: () => clock.t,
    sleep: async (ms: number) => {
      clock.slept.push(ms);
      clock.t += ms;
    },
  };
  return clock;
}

let keySeq = 0;
const newKey = () => `client-1:user-${++keySeq}`;

// Every test on both stores (test/helpers/pacer-stores.ts): the same pacer, the same answers.
describe.each(PACER_ENGINES)(`${createPacer.name} on %s`, (engine) => {
  let s: PacerStores;
  beforeAll(async () => {
    s = await createPacerStores(engine);
  });
  afterAll(async () => {
    await s.cleanup();
  });

  /** A pacer whose pace (1000/s) stays out of the way unless a test sets rates: holds of 1 s, no jitter. */
  function pacer(extra: Partial<PacerOptions> = {}) {
    const clock = extra.clock ?? fakeClock();
    return { pacer: createPacer({ store: s.store(), holdMs: 1000, jitter: 0, startRate: 1000, maxRate: 1000, clock, ...extra }), clock };
  }

  /** Waiters queued on a key (the store's queue): what a test waits for instead of sleeping. */
  const queued = (key: string) => s.queued(key);

  it("lets one request per key through at a time by default", async () => {
    const { pacer: p, clock } = pacer({ pollMs: 10 });
    const key = newKey();
    const first = await p.acquire(key);
    await expect(p.acquire(key, { maxWaitMs: 50 })).rejects.toBeInstanceOf(ThrottleDelayError);
    // Other keys are independent.
    const other = await p.acquire(newKey(), { maxWaitMs: 0 });
    await other.release("success");
    const waiting = p.acquire(key, { maxWaitMs: 10_000 });
    await first.release("success");
    const second = await waiting;
    expect(second.acquiredAt).toBeGreaterThanOrEqual(clock.now() - 1000);
    await second.release("success");
  });

  it("serves waiters first come, first served", async () => {
    const { pacer: p } = pacer({ clock: undefined, pollMs: 5 });
    const key = newKey();
    const a1 = await p.acquire(key);
    const waitingB = p.acquire(key, { maxWaitMs: 5000 });
    await expect.poll(() => queued(key)).toBe(1); // B is queued now
    await a1.release("success");
    // A asks again at once: it must queue behind B rather than take the key straight back.
    let a2Granted = false;
    const waitingA2 = p.acquire(key, { maxWaitMs: 5000 }).then((permit) => {
      a2Granted = true;
      return permit;
    });
    const b = await waitingB;
    // A2 waits in the queue (had it taken the key straight back it would never be queued).
    await expect.poll(() => queued(key)).toBe(1);
    expect(a2Granted).toBe(false);
    await b.release("success");
    await (await waitingA2).release("success");
    expect(await queued(key)).toBe(0);
    expect((await p.status(key)).waiters).toBe(0);
  });

  it("hands a busy key to its waiter when the permit is released, not a poll later", async () => {
    // A poll far longer than the test: only the release's wake-up can end the wait in time.
    const { pacer: p } = pacer({ clock: undefined, pollMs: 30_000 });
    const key = newKey();
    const held = await p.acquire(key);
    const waiting = p.acquire(key, { maxWaitMs: 5000 });
    await expect.poll(() => queued(key)).toBe(1); // the waiter has checked the key and waits for it now
    const releasedAt = Date.now();
    await held.release("success");
    const next = await waiting;
    expect(next.acquiredAt - releasedAt).toBeLessThan(1000);
    await next.release("success");
    await p.close();
  });

  it("wakes a waiter in another process (another connection) when the permit is released", async () => {
    const other = await s.separate();
    const { pacer: holder } = pacer({ clock: undefined, pollMs: 30_000 });
    const { pacer: waiter } = pacer({ clock: undefined, pollMs: 30_000, store: other.store });
    const key = newKey();
    const listening = await s.listeners(key);
    try {
      const held = await holder.acquire(key);
      const waiting = waiter.acquire(key, { maxWaitMs: 5000 });
      // The waiter is queued and listens for the key's releases now.
      await expect.poll(() => queued(key)).toBe(1);
      await expect.poll(() => s.listeners(key)).toBe(listening + 1);
      const releasedAt = Date.now();
      await held.release("success");
      const next = await waiting;
      expect(next.acquiredAt - releasedAt).toBeLessThan(1000);
      await next.release("success");
    } finally {
      await waiter.close();
      await other.close();
    }
  });

  it("takes a waiter that gives up out of the queue", async () => {
    const { pacer: p } = pacer({ clock: undefined, pollMs: 5 });
    const key = newKey();
    const held = await p.acquire(key);
    await expect(p.acquire(key, { maxWaitMs: 20 })).rejects.toBeInstanceOf(ThrottleDelayError);
    expect(await queued(key)).toBe(0);
    await held.release("success");
    expect((await p.acquire(key, { maxWaitMs: 0 })).waitedMs).toBe(0);
  });

  it("allows a configured number of concurrent permits", async () => {
    const { pacer: p } = pacer({ concurrency: 2 });
    const key = newKey();
    // Starts stay 1/rate (1 ms) apart; the fake clock passes that at once.
    const a = await p.acquire(key, { maxWaitMs: 10 });
    const b = await p.acquire(key, { maxWaitMs: 10 });
    await expect(p.acquire(key, { maxWaitMs: 10 })).rejects.toBeInstanceOf(ThrottleDelayError);
    expect((await p.status(key)).holders).toBe(2);
    await Promise.all([a.release("success"), b.release("success")]);
    expect((await p.status(key)).holders).toBe(0);
  });

  it("holds a refused key, doubling the hold while refusals continue (1 s, 2 s, 4 s …) up to maxHoldMs", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, maxHoldMs: 5000 });
    const key = newKey();
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const permit = await p.acquire(key, { maxWaitMs: 60_000 });
      waits.push(permit.waitedMs);
      await permit.release("throttled");
    }
    // The first acquire did not wait; each later one waited for the hold set by the previous refusal.
    expect(waits).toEqual([0, 1000, 2000, 4000, 5000]);
    const s = await p.status(key);
    // Every hold counts as time lost to throttling; the rate was cut once, on the first refusal of the episode.
    expect(s).toMatchObject({ holdMs: 5000, blockedUntil: clock.now() + 5000, waitMs: 5000, lostMs: 17_000, refusedRate: 1000, rate: 500 });
  });

  it("adds jitter on top of the delay", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, jitter: 0.5, random: () => 1 });
    const key = newKey();
    await (await p.acquire(key)).release("throttled");
    expect((await p.status(key)).blockedUntil).toBe(clock.now() + 1500);
  });

  it("throws ThrottleDelayError with the wait instead of waiting past maxWaitMs", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock });
    const key = newKey();
    await (await p.acquire(key)).release("throttled");
    await (await p.acquire(key, { maxWaitMs: 60_000 })).release("throttled"); // the second hold: 2 s
    const before = clock.now();
    const err = await p.acquire(key, { maxWaitMs: 1500, operation: "gallery.all", account: "alice" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottleDelayError);
    expect(err).toMatchObject({ waitMs: 2000, pacerKey: key, retryAt: before + 2000, operation: "gallery.all", account: "alice" });
    // It refused at once: no partial wait.
    expect(clock.now()).toBe(before);
  });

  it("does not cut or hold twice for requests that were already in flight when the refusal came", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, concurrency: 3 });
    const key = newKey();
    const permits = await Promise.all([p.acquire(key), p.acquire(key), p.acquire(key)]);
    clock.t += 10;
    for (const permit of permits) await permit.release("throttled");
    expect(await p.status(key)).toMatchObject({ holdMs: 1000, lostMs: 1000, rate: 1000 });
  });

  it("spaces requests 1/rate apart", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, startRate: 4, maxRate: 4 });
    const key = newKey();
    await (await p.acquire(key)).release("success");
    const second = await p.acquire(key);
    expect(second.waitedMs).toBe(250);
    await second.release("success");
  });

  it("doubles per paced success until the first cut, then additively; a late call does not raise it", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, startRate: 2, maxRate: 100, increase: 0.01 });
    const key = newKey();
    const rates: number[] = [];
    for (let i = 0; i < 4; i++) {
      await (await p.acquire(key, { maxWaitMs: 60_000 })).release("success");
      rates.push((await p.status(key)).rate ?? 0);
    }
    expect(rates).toEqual([4, 8, 16, 32]);
    // A caller that comes a minute after the pace allowed proves nothing about a faster pace.
    clock.t += 60_000;
    await (await p.acquire(key)).release("success");
    expect((await p.status(key)).rate).toBe(32);
    await (await p.acquire(key, { maxWaitMs: 60_000 })).release("throttled");
    await (await p.acquire(key, { maxWaitMs: 60_000 })).release("throttled");
    // Two refusals only hold the key (1 s, 2 s): the next call probes whether they were lone faults.
    expect((await p.status(key)).rate).toBe(32);
    await (await p.acquire(key, { maxWaitMs: 60_000 })).release("throttled");
    // Refused a third time: cut to the lower of half and what got through since the key began, the idle
    // minute left out.
    const cut = (await p.status(key)).rate ?? 0;
    expect(cut).toBeLessThanOrEqual(32 / 2);
    expect((await p.status(key)).learnedRate).toBe(cut);
    clock.t += 4000; // past the third hold
    await (await p.acquire(key, { maxWaitMs: 60_000 })).release("success");
    // Additive now: + increase × the cut rate / rate per success (that is, +1 % of the cut rate per second of calls).
    expect((await p.status(key)).rate).toBeCloseTo(cut + 0.01, 6);
  });

  it("starts a key idle for idleMs at its learned rate, and a key that learned nothing at startRate", async () => {
    const clock = fakeClock();
    const { pacer: p } = pacer({ clock, startRate: 2, maxRate: 100, learnAfter: 3, idleMs: 60_000 });
    const key = newKey();
    for (let i = 0; i < 5; i++) await (await p.acquire(key, { maxWaitMs: 60_000 })).release("success");
    const learned = (await p.status(key)).learnedRate;
    expect(learned).toBe(2 * 2 ** 5);
    clock.t += 60_001;
    const next = await p.acquire(key, { maxWaitMs: 0 });
    expect((await p.status(key)).rate).toBe(learned);
    await next.release("error");
    await (await p.acquire(newKey(), { maxWaitMs: 0 })).release("error");
    expect((await p.status(`client-1:user-${keySeq}`)).rate).toBe(2);
  });

  it("lists the keys of its own namespace only, and status shows each one's hold (dvault status, /metrics)", async () => {
    const clock = fakeClock(Date.now());
    const namespace = `${s.namespace}:listed`;
    const { pacer: p } = pacer({ clock, store: s.store(namespace) });
    const { pacer: elsewhere } = pacer({ clock, store: s.store(`${s.namespace}:elsewhere`) });
    await (await p.acquire("1001:held")).release("throttled");
    await (await p.acquire("1001:calm")).release("success");
    await (await elsewhere.acquire("1001:other")).release("success");
    expect(await p.keys()).toEqual(["1001:calm", "1001:held"]);
    const statuses = await pacingStatusesOf(s.store(namespace), clock.now());
    expect(statuses).toEqual([
      { key: "1001:calm", rate: 1000, learnedRate: null, refusedRate: null, heldUntil: null, throttledS: 0 },
      { key: "1001:held", rate: 1000, learnedRate: null, refusedRate: null, heldUntil: new Date(clock.now() + 1000).toISOString(), throttledS: 1 },
    ]);
  });

  it("ignores a second release and 'error' outcomes for the backoff", async () => {
    const { pacer: p } = pacer();
    const key = newKey();
    const permit = await p.acquire(key);
    await permit.release("error");
    await permit.release("throttled");
    expect(await p.status(key)).toMatchObject({ rate: 1000, lostMs: 0, blockedUntil: 0, holders: 0 });
  });

  it("gives up waiting when the signal aborts", async () => {
    const { pacer: p } = pacer({ clock: undefined, pollMs: 10 });
    const key = newKey();
    const held = await p.acquire(key);
    const controller = new AbortController();
    const waiting = p.acquire(key, { maxWaitMs: 10_000, signal: controller.signal });
    await expect.poll(() => queued(key)).toBe(1);
    controller.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
    await held.release("success");
  });

  it("keeps a key's holders and state for a bounded time (Redis: TTLs of its keys)", async () => {
    const { pacer: p } = pacer({ clock: undefined, lockTtlMs: 5000, stateTtlMs: 60_000 });
    const key = newKey();
    const permit = await p.acquire(key);
    const holdersTtl = (await s.keptFor(key, Date.now())).holdersMs;
    expect(holdersTtl).toBeGreaterThan(0);
    expect(holdersTtl).toBeLessThanOrEqual(10_000);
    await permit.release("throttled");
    const stateTtl = (await s.keptFor(key, Date.now())).stateMs;
    expect(stateTtl).toBeGreaterThan(60_000);
    expect(stateTtl).toBeLessThanOrEqual(61_000 + 1000 * 1.2);
  });

  it("does not stall other processes past the lock TTL when a holder is killed", async () => {
    const key = newKey();
    const lockTtlMs = 600;
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/pacer-holder.ts", engine, s.url, s.namespace, key, String(lockTtlMs)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
      const { acquiredAt } = JSON.parse(line) as { acquiredAt: number };
      child.kill("SIGKILL");
      await once(child, "exit");
      const { pacer: p } = pacer({ clock: undefined, lockTtlMs, pollMs: 20 });
      const permit = await p.acquire(key, { maxWaitMs: 5000 });
      // Not before the dead holder's lock expired, and not much after it.
      expect(permit.acquiredAt).toBeGreaterThanOrEqual(acquiredAt + lockTtlMs);
      expect(permit.acquiredAt).toBeLessThan(acquiredAt + lockTtlMs + 400);
      await permit.release("success");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
