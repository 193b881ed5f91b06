// Two user accounts where the install's key cannot read only one's tokens (src/crypto/install-key.ts): status's counts
// add up, the readable one downloads, the other's files wait unspent, its alert resolves once it logs in again; and a client-credentials row sealed under another key is asked for anew.
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { storeUserGrant } from "../helpers/owner-grant.ts";

const account = () =>
  createDownloadHarness({
    sim: {
      seed: 32,
      dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 2, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 500,
  });

const other = new TokenCipher({ key: randomBytes(32), source: "env", created: false });

/** Reseals the row's tokens under another key than the install's. */
async function resealElsewhere(h: DownloadHarness, id: number): Promise<void> {
  await h.pool.query(
    "UPDATE accounts SET access_token_enc = $2, refresh_token_enc = CASE WHEN refresh_token_enc IS NULL THEN NULL ELSE $3::bytea END WHERE id = $1",
    [
      id,
      Buffer.from(other.encrypt("a-token", { accountId: id, field: "access_token" })),
      Buffer.from(other.encrypt("r-token", { accountId: id, field: "refresh_token" })),
    ],
  );
}

/** The simulator's user who is not the owner: the second account's. */
const otherUser = (h: DownloadHarness): string => [...h.sim.truth.users.keys()].find((u) => u !== h.sim.truth.ownerId) ?? "";

/** A second user account ("Other"), logged in with the install's key, then resealed elsewhere. */
async function secondAccount(h: DownloadHarness): Promise<number> {
  const row = await storeUserGrant(h.services, h.sim, { userId: otherUser(h), name: "Other" });
  await resealElsewhere(h, row.id);
  return row.id;
}

it("one unreadable account of two: status counts add up, the readable one downloads, the other's files stay wanted, the alert resolves with the key back", async () => {
  const h = await account();
  try {
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const otherId = await secondAccount(h);
    const total = (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('wanted', 'queued')")).rows[0]!.n;
    expect(total).toBeGreaterThan(3);
    await h.pool.query("UPDATE downloads SET account_id = $1 WHERE id IN (SELECT id FROM downloads ORDER BY id LIMIT 3)", [otherId]);

    const status = await runDvault({ redis: h.redis, env: h.env }, ["status"]);
    expect(status.stdout).toMatch(/^ {2}Other \[user\] NEEDS_REAUTH: /m);
    expect(status.stdout).toContain("  3 wait for an account to log in again, not tried until then: dvault auth login --account Other");
    expect(status.stdout).toContain(`  ${total - 3} due now`);

    const alerts = await runDvault({ redis: h.redis, env: h.env }, ["digest", "--alerts", "--json"]);
    expect(JSON.parse(alerts.stdout)).toMatchObject({ open: 1, notified: ["account “Other” needs re-authorization"] });

    const run = await runDvault({ redis: h.redis, env: { ...h.env, DVAULT_RUN_ITEM_PATIENCE: "0s" } }, ["download", "--once"]);
    const rows = (await h.pool.query<{ account_id: number; status: string; attempts: number }>("SELECT account_id, status::text, attempts FROM downloads"))
      .rows;
    // Left as they were (queued by the sync, for a worker that releases them) or wanted: never tried, never failed.
    const others = rows.filter((r) => r.account_id === otherId);
    expect(others.length).toBe(3);
    expect(
      others.every((r) => (r.status === "wanted" || r.status === "queued") && r.attempts === 0),
      JSON.stringify(others),
    ).toBe(true);
    expect(
      rows.filter((r) => r.account_id !== otherId).every((r) => r.status !== "wanted" && r.status !== "queued"),
      run.stdout + run.stderr,
    ).toBe(true);
    expect(run.code, run.stdout + run.stderr).toBe(4);
    const used = await h.pool.query("SELECT used FROM download_quota_usage WHERE account_id = $1", [otherId]);
    expect(used.rows.map((r) => r.used).filter((n) => n > 0)).toEqual([]);

    const after = await runDvault({ redis: h.redis, env: h.env }, ["status"]);
    expect(after.stdout).toContain("  3 wait for an account to log in again");
    expect(after.stdout).toMatch(/^ {2}done for now: nothing is due$/m);

    // The account logs in again (the install's key seals its tokens): the alert resolves.
    await storeUserGrant(h.services, h.sim, { userId: otherUser(h), name: "Other" });
    const again = await runDvault({ redis: h.redis, env: h.env }, ["digest", "--alerts", "--json"]);
    expect(JSON.parse(again.stdout), again.stdout).toMatchObject({ open: 0 });
  } finally {
    await h.close();
  }
}, 180_000);

it("a client-credentials row sealed under another key: the static source still syncs (a new client token, or the user's), status does not tell a person to log in", async () => {
  const h = await account();
  try {
    const first = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "static"]);
    expect(first.code, first.stderr).toBe(0);
    const client = (await h.pool.query<{ id: number; name: string }>("SELECT id, name FROM accounts WHERE kind = 'client'")).rows[0];
    expect(client, "the static source made a client row").toBeDefined();
    await resealElsewhere(h, client!.id);
    await h.pool.query("UPDATE sync_state SET next_run_at = now() - interval '1 minute'").catch(() => undefined);
    const again = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "static", "--full"]);
    expect(again.stdout + again.stderr).not.toContain(`account "${client!.name}" must be authorized again`);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const status = await runDvault({ redis: h.redis, env: h.env }, ["status"]);
    expect(status.stdout, status.stdout).not.toContain(`dvault auth login --account ${client!.name}`);
  } finally {
    await h.close();
  }
}, 180_000);
