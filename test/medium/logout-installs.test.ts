// `dvault auth logout` with two installs of dvault (two databases, two Redis prefixes) logged in as the same user
// with the same application, as bin/dvault.js runs it against the simulator: by default only this install's refresh
// token is revoked and the other install keeps working; `--everywhere` says so, asks, and ends both
// (docs/service-behaviour.md#revoke-scope).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { CLIENT_ID, CLIENT_SECRET } from "./tokens-fixture.ts";

type Install = { redis: { url: string }; env: Record<string, string> };

let sim: Simulator;
const dbs: TestDatabase[] = [];
const prefixes: TestRedis[] = [];
let a: Install;
let b: Install;

async function install(): Promise<Install> {
  const db = await createTestDatabase();
  const redis = await createTestRedis();
  dbs.push(db);
  prefixes.push(redis);
  return {
    redis: { url: TEST_REDIS_URL },
    env: {
      DATABASE_URL: db.url,
      DVAULT_REDIS_PREFIX: redis.prefix,
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: CLIENT_ID,
      DVAULT_CLIENT_SECRET: CLIENT_SECRET,
      DVAULT_SECRET_KEY: randomBytes(32).toString("hex"),
    },
  };
}

/** The install logs in as the simulator's owner (a refresh token of its own, as another device would get). */
async function logIn(at: Install): Promise<void> {
  const run = await runDvault(at, ["auth", "import", "--refresh-token", sim.issueUserToken({ userId: sim.truth.ownerId }).refresh_token]);
  expect(run.code, run.stderr).toBe(0);
}

/** Whether the install's grant works: auth status calls the placebo (refreshing first if it must). */
async function works(at: Install): Promise<boolean> {
  const run = await runDvault(at, ["auth", "status", "--json"]);
  const [account] = JSON.parse(run.stdout) as Array<{ placebo: string; state: string }>;
  return run.code === 0 && account?.placebo === "ok";
}

/** The tokens the service still honours (the only ones issued here are the two installs'). */
async function live(): Promise<{ liveAccess: number; liveRefresh: number }> {
  const res = await fetch(`${sim.url}/_sim/truth`);
  const { tokens } = (await res.json()) as { tokens: { liveAccess: number; liveRefresh: number } };
  return { liveAccess: tokens.liveAccess, liveRefresh: tokens.liveRefresh };
}

function revokes(from: number): unknown[] {
  return sim
    .log()
    .slice(from)
    .filter((e) => e.route === "/oauth2/revoke")
    .map((e) => e.form.revoke_refresh_only ?? null);
}

beforeAll(async () => {
  sim = await startSimulator({
    dataset: { deviations: 1, galleryFolders: 0, collectionFolders: 0, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
  });
  a = await install();
  b = await install();
}, 60_000);

afterAll(async () => {
  for (const db of dbs) await db.drop();
  for (const r of prefixes) await r.cleanup();
  await sim?.close();
});

describe("dvault auth logout", () => {
  it("logs out this install only (the other's grant keeps working, through a refresh); --everywhere says so, asks, and ends both", async () => {
    await Promise.all([logIn(a), logIn(b)]);
    let before = sim.log().length;
    const out = await runDvault(a, ["auth", "logout"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/this install's refresh token was revoked \(other installs stay logged in\)/);
    expect(revokes(before)).toEqual(["true"]);
    expect((await live()).liveRefresh).toBe(1);
    sim.expireAccessTokens();
    // At once: B refreshes and calls the placebo, A logs in again, and B's --everywhere without --yes is refused.
    before = sim.log().length;
    const [bWorks, , refused] = await Promise.all([works(b), logIn(a), runDvault(b, ["auth", "logout", "--everywhere"])]);
    expect(bWorks).toBe(true);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--everywhere revokes every token and authorization of .* for application 1001/);
    expect(refused.stderr).toMatch(/add --yes to confirm/);
    expect(revokes(before)).toEqual([]);
    expect(await live()).toMatchObject({ liveRefresh: 2 });

    const everywhere = await runDvault(b, ["auth", "logout", "--everywhere", "--yes"]);
    expect(everywhere.code, everywhere.stderr).toBe(0);
    expect(everywhere.stdout).toMatch(/every grant of .* for this application was revoked/);
    expect(revokes(before)).toEqual([null]);
    expect(await live()).toEqual({ liveAccess: 0, liveRefresh: 0 });
  }, 90_000);
});
