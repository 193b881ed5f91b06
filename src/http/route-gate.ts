// Bounded concurrency per route: each route (the first segment of the path: /archive, /item, /feeds ...) runs
// at most `limit` requests at once; later ones wait their turn in a queue of at most `queue`, for at most
// `maxWaitMs`. Past that a request is answered 503 with Retry-After at once, before it reaches the database:
// a burst of requests becomes a wait or a "come back in N s", never a pile of queries that time out in the
// pool (a 500, issue 27 row 4). Routes do not share their limits, so a flood of /archive leaves /healthz and
// the feeds their own turns. A client that hangs up while waiting leaves the queue.
import type { Request, RequestHandler, Response } from "express";

export type RouteGateOptions = {
  /** Requests of one route that run at once (DVAULT_HTTP_CONCURRENCY). */
  limit: number;
  /** Requests of one route that may wait for a turn (DVAULT_HTTP_QUEUE); more are answered 503 at once. */
  queue: number;
  /** How long a request waits for its turn before it is answered 503 (ms). */
  maxWaitMs: number;
};

export type RouteGate = {
  /** Admits the request when its route has a free turn, queues it, or answers 503. */
  readonly middleware: RequestHandler;
  /** Per route: requests running and waiting now (for tests and /metrics). */
  state(): Record<string, { active: number; waiting: number }>;
};

type Waiter = { admit: () => void };
type Lane = { active: number; waiting: Waiter[]; meanMs: number };

/** More distinct first segments than any dashboard has: the rest share one lane, so junk paths cannot grow the map. */
const MAX_LANES = 64;

/** The route a request counts against: the first segment of its path ("" for the overview). */
function laneOf(req: Request): string {
  return (req.path.split("/")[1] ?? "").slice(0, 40);
}

export function createRouteGate(o: RouteGateOptions): RouteGate {
  const lanes = new Map<string, Lane>();

  const laneFor = (name: string): Lane => {
    const key = lanes.has(name) || lanes.size < MAX_LANES ? name : "*";
    let lane = lanes.get(key);
    if (!lane) lanes.set(key, (lane = { active: 0, waiting: [], meanMs: 100 }));
    return lane;
  };

  // Retry-After from what the route's turns take: the requests ahead of this one, at the mean time of one, spread
  // over the turns; at least 1 s, at most a minute.
  const retryAfterS = (lane: Lane) => Math.min(60, Math.max(1, Math.ceil(((lane.waiting.length + 1) * lane.meanMs) / o.limit / 1000)));

  const refuse = (lane: Lane, res: Response, why: string) => {
    const after = retryAfterS(lane);
    res
      .status(503)
      .set({ "Retry-After": String(after), "Cache-Control": "no-store" })
      .type("text")
      .send(`dvault: the dashboard is busy (${why}); try again in ${after} s\n`);
  };

  const run = (lane: Lane, res: Response, next: () => void) => {
    lane.active += 1;
    const started = Date.now();
    // 'close' comes once the answer is sent or the client is gone, whichever is first.
    res.once("close", () => {
      lane.active -= 1;
      lane.meanMs = lane.meanMs * 0.8 + (Date.now() - started) * 0.2;
      const turn = lane.waiting.shift();
      turn?.admit();
    });
    next();
  };

  const middleware: RequestHandler = (req, res, next) => {
    const lane = laneFor(laneOf(req));
    if (lane.active < o.limit) return run(lane, res, next);
    if (lane.waiting.length >= o.queue) return refuse(lane, res, `${lane.active} requests of this page run and ${lane.waiting.length} wait`);
    const waiter: Waiter = {
      admit: () => {
        clearTimeout(timer);
        res.off("close", gone);
        run(lane, res, next);
      },
    };
    const leave = () => {
      const at = lane.waiting.indexOf(waiter);
      if (at >= 0) lane.waiting.splice(at, 1);
    };
    const gone = () => {
      clearTimeout(timer);
      leave();
    };
    const timer = setTimeout(() => {
      leave();
      res.off("close", gone);
      refuse(lane, res, `no turn within ${o.maxWaitMs < 1000 ? `${o.maxWaitMs} ms` : `${Math.round(o.maxWaitMs / 1000)} s`}`);
    }, o.maxWaitMs);
    res.once("close", gone);
    lane.waiting.push(waiter);
  };

  return {
    middleware,
    state: () => Object.fromEntries([...lanes].map(([name, l]) => [name, { active: l.active, waiting: l.waiting.length }])),
  };
}
