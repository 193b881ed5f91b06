// A refresh whose answer is lost (the connection reset at the token endpoint): the service has spent the
// refresh token, so the account goes needs_reauth — status shows it with the command, an alert goes out
// through the file channel, and nothing already archived is touched.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evaluateAlerts } from "../../src/digest/alerts.ts";
import { createDeliverers } from "../../src/digest/deliver/index.ts";
import { createLogger } from "../../src/log.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { testConfig } from "../helpers/config.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

const HOUR = 3_600_000;
const TABLES = ["deviations", "folder_members", "notes", "messages", "downloads"] as const;

let h: FaultHarness;
let digestDir: string;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 5 } });
  digestDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-faults-digest-"));
});
afterAll(async () => {
  await h?.close();
  if (digestDir) await fs.rm(digestDir, { recursive: true, force: true });
});

async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const t of TABLES) out[t] = (await h.pool.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0].n;
  out.done = (await h.pool.query("SELECT deviationid, kind, sha256, path FROM downloads WHERE status = 'done' ORDER BY deviationid, kind")).rows;
  return out;
}

describe("a refresh whose answer is lost", () => {
  it("puts the account in needs_reauth, says what to do, alerts, and leaves the archive alone", async () => {
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    await checkMirror(h);
    const before = await snapshot();

    const seq = h.lastSeq();
    const tokenCalls = () => h.sim.log().filter((e) => e.seq > seq && e.route === "/oauth2/token");
    h.sim.faults.add({ route: "/oauth2/token", kind: "reset" });
    h.sim.clock.advance(2 * HOUR);
    await expect(h.runSource("gallery")).rejects.toThrow(/dvault auth login --account/);
    // One refresh, reset after the service spent the token; sent once more with the same token, refused:
    // that settles it (docs/service-behaviour.md#refresh-single-use).
    expect(tokenCalls().map((e) => e.status)).toEqual([0, 400]);
    const row = await h.services.accounts.findById(h.account.id);
    expect(row?.state).toBe("needs_reauth");

    // A later run is skipped without another token request.
    await expect(h.runSource("notes")).rejects.toThrow(/needs re-authorization/);
    expect(tokenCalls()).toHaveLength(2);

    const queues = new QueueAdmin(h.services.queues);
    const status = await collectStatus({
      config: h.services.config,
      pool: h.pool,
      pacer: h.services.pacer,
      coord: h.services.coord,
      accounts: h.services.accounts,
      queues,
      now: () => h.services.now(),
    });
    await queues.close();
    const account = status.accounts.find((a) => a.name === h.account.name);
    expect(account).toMatchObject({ state: "needs_reauth", fix: `dvault auth login --account ${h.account.name}` });

    const config = testConfig({ ...h.env, DVAULT_DIGEST_CHANNELS: "file", DVAULT_DIGEST_DIR: digestDir });
    const result = await evaluateAlerts({
      db: h.pool,
      coord: h.services.coord,
      prefix: config.redisPrefix,
      now: new Date(h.services.now()),
      deliverers: createDeliverers(config.digest),
      timezone: "UTC",
      log: createLogger({ level: "silent" }),
    });
    expect(result.notified).toHaveLength(1);
    const files = await fs.readdir(digestDir);
    const text = await Promise.all(files.filter((f) => f.endsWith(".txt")).map((f) => fs.readFile(path.join(digestDir, f), "utf8")));
    expect(text.join("\n")).toContain(`dvault auth login --account ${h.account.name}`);

    expect(await snapshot()).toEqual(before);
    await checkMirror(h);
  }, 120_000);
});
