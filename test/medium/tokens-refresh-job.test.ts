// The worker's tokens.refresh job (jobs/refresh-tokens/handler.ts) against the simulator, on its clock: a token that
// would not outlast the job's next run is refreshed, one that would is left alone, and an install that syncs nothing
// keeps its grant past the refresh token's own lifetime (docs/service-behaviour.md#refresh-single-use: every refresh
// hands out a new one), where a grant nobody refreshed is lost.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { WorkerContext } from "../../jobs/context.ts";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { refreshTokensHandler } from "../../jobs/refresh-tokens/handler.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { workerContext } from "../helpers/worker-context.ts";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describeNeedingRedis("tokens.refresh, the worker's job that keeps grants alive", () => {
  let h: SyncHarness;
  let producer: Producer;
  let ctx: WorkerContext;

  beforeAll(async () => {
    h = await createSyncHarness({ sources: [] });
    producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    ctx = workerContext({ log: h.services.log, services: h.services, producer });
  }, 120_000);

  afterAll(async () => {
    await producer?.close();
    await h?.close();
  });

  const refreshes = () =>
    h.sim
      .log()
      .filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token")
      .map((e) => e.status);

  it("refreshes ahead of the next run, and keeps an idle install's grant past the refresh token's lifetime", async () => {
    // A grant refreshed now: an hour's access token.
    expect(await refreshTokensHandler({}, ctx)).toMatchObject({ status: "done", fresh: 1, problems: [] });
    const start = refreshes().length;
    // 46 minutes left would outlast the next run (5 minutes) and the margin: nothing sent.
    h.sim.clock.advance(14 * MINUTE);
    expect(await refreshTokensHandler({}, ctx)).toMatchObject({ fresh: 1, problems: [] });
    expect(refreshes()).toHaveLength(start);
    // 14 minutes left would not: one refresh.
    h.sim.clock.advance(32 * MINUTE);
    expect(await refreshTokensHandler({}, ctx)).toMatchObject({ fresh: 1, problems: [] });
    expect(refreshes().slice(start)).toEqual([200]);

    // A machine that wakes once a month (the job's first run after it): each run finds the access token expired and the
    // refresh token a month old, and trades it for a new one; four months on, more than a refresh token lives, the
    // grant still works.
    for (let month = 1; month <= 4; month++) {
      h.sim.clock.advance(30 * DAY);
      expect(await refreshTokensHandler({}, ctx), `month ${month}`).toMatchObject({ fresh: 1, problems: [] });
    }
    expect(refreshes().slice(start)).toEqual([200, 200, 200, 200, 200]);
    expect((await h.services.accounts.list()).find((a) => a.id === h.account.id)?.state).toBe("ok");

    // Left alone longer than a refresh token lives, the grant is lost: the simulator holds dvault to that lifetime.
    h.sim.clock.advance(100 * DAY);
    const late = await refreshTokensHandler({}, ctx);
    expect(late).toMatchObject({ status: "done", fresh: 0, problems: [expect.stringContaining("auth login")] });
    expect((await h.services.accounts.list()).find((a) => a.id === h.account.id)?.state).toBe("needs_reauth");
  }, 60_000);
});
