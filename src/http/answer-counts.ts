// What the dashboard answered, per route and outcome, for /metrics (dvault_http_answers_total): ok (2xx, 3xx),
// refused (4xx: a wrong token, a bad address, a page that does not exist), busy (503 with Retry-After: the
// route's queue or the database pool was full, an answer that says when to come back) and error (any other
// 5xx: a failure of dvault's). Busy is counted apart from errors on purpose: under a burst it is the answer.
import type { RequestHandler } from "express";

export type AnswerOutcome = "ok" | "refused" | "busy" | "error";

export type AnswerCounts = {
  readonly middleware: RequestHandler;
  /** Every route and outcome seen since the dashboard started, with its count. */
  snapshot(): Array<{ route: string; outcome: AnswerOutcome; count: number }>;
};

/** Routes are the first segment of the path; past this many, the rest are counted as "*". */
const MAX_ROUTES = 64;

export function outcomeOf(status: number, retryAfter: boolean): AnswerOutcome {
  if (status === 503 && retryAfter) return "busy";
  if (status >= 500) return "error";
  return status >= 400 ? "refused" : "ok";
}

export function createAnswerCounts(): AnswerCounts {
  const counts = new Map<string, Map<AnswerOutcome, number>>();
  const middleware: RequestHandler = (req, res, next) => {
    const first = (req.path.split("/")[1] ?? "").slice(0, 40);
    res.once("finish", () => {
      const route = counts.has(first) || counts.size < MAX_ROUTES ? first : "*";
      const outcome = outcomeOf(res.statusCode, res.getHeader("retry-after") !== undefined);
      const byOutcome = counts.get(route) ?? new Map<AnswerOutcome, number>();
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
      counts.set(route, byOutcome);
    });
    next();
  };
  return {
    middleware,
    snapshot: () => [...counts].flatMap(([route, byOutcome]) => [...byOutcome].map(([outcome, count]) => ({ route: `/${route}`, outcome, count }))),
  };
}
