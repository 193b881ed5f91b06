// A refresh the service answered while the database would not take the new grant (read-only, failed over, its disk
// full): the service has spent the old refresh token, so the answer is all there is. It is kept sealed in a file
// beside the key (src/api/pending-grants.ts) and stored by whoever reads the account next, once writes come back;
// a file the row has moved past (a new login) is never stored, and removed only where it is known to be this
// database's (another install sharing the folder has an account of the same id). The database refuses exactly the
// row's update, as a read-only server refuses it (SQLSTATE 25006), after the refresh's own check of the database has
// passed.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placebo } from "../../src/api/account-calls.ts";
import { ReauthRequiredError, TokenRefreshDeferredError } from "../../src/api/token-errors.ts";
import { outageOf } from "../../src/queue/outage.ts";
import { createFixture, type Fixture, seedAccount } from "./tokens-fixture.ts";

const MINUTE = 60_000;

describe("a refreshed grant the database did not take", () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await createFixture();
    await f.db.pool.query(
      `CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'cannot execute UPDATE in a read-only transaction' USING ERRCODE = 'read_only_sql_transaction'; END $$`,
    );
  });
  afterEach(async () => {
    await f.close();
  });

  /** From the next row written on: the accounts table refuses updates (the check before a refresh writes no row). */
  const refuseWrites = () => f.db.pool.query("CREATE TRIGGER refuse_write BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION refuse_write()");
  const takeWrites = () => f.db.pool.query("DROP TRIGGER refuse_write ON accounts");
  const pendingFiles = () => readdirSync(f.pendingDir).filter((name) => !name.startsWith("."));
  /** How many token requests presented this refresh token. */
  const presented = (refreshToken: string) => f.sim.log().filter((e) => e.route === "/oauth2/token" && e.form.refresh_token === refreshToken).length;

  /** An access token near its end, refreshed while the row's update is refused: the refresh is deferred, its answer kept. */
  async function refreshRefused(): Promise<{ issued: { access_token: string; refresh_token: string }; file: string }> {
    const { provider, issued } = await seedAccount(f);
    await refuseWrites();
    f.clock.advance(55 * MINUTE);
    const err = await provider.getAccessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRefreshDeferredError);
    // A worker's job waits this out as it waits out a read-only database, without spending an attempt.
    expect(outageOf(err)).toMatchObject({ kind: "refused", service: "PostgreSQL" });
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
    const [name, ...others] = pendingFiles();
    expect(others).toEqual([]);
    return { issued, file: path.join(f.pendingDir, name!) };
  }

  it("keeps it sealed in a file of mode 0600 and stores it at the next read, once writes come back; the new refresh token works", async () => {
    const { issued, file } = await refreshRefused();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(f.pendingDir).mode & 0o777).toBe(0o700);
    const alice = (await f.repo.findByName("alice"))!;
    expect(alice.refreshTokenFingerprint).toBe(f.cipher.fingerprint(issued.refresh_token));
    // The file holds ciphertexts bound to the account, never a token.
    const kept = JSON.parse(readFileSync(file, "utf8")) as { accessTokenEnc: string; refreshTokenEnc: string };
    const access = f.cipher.decrypt(Buffer.from(kept.accessTokenEnc, "base64"), { accountId: alice.id, field: "access_token" });
    const refresh = f.cipher.decrypt(Buffer.from(kept.refreshTokenEnc, "base64"), { accountId: alice.id, field: "refresh_token" });
    for (const token of [access, refresh]) {
      expect(readFileSync(file, "utf8")).not.toContain(token);
      expect(f.log.lines.join("\n")).not.toContain(token);
    }

    // Still refused: another read stores nothing, and the spent refresh token is not sent again.
    const again = await (await f.newManager().forAccount("alice")).getAccessToken().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TokenRefreshDeferredError);
    expect(pendingFiles()).toHaveLength(1);

    // Writes back: another process (a manager of its own, as `dvault auth status` or `sync --once` would be) reads the
    // account and stores the kept grant, with no token request of its own.
    await takeWrites();
    const other = await f.newManager().forAccount("alice");
    expect(await other.getAccessToken()).toBe(access);
    expect(pendingFiles()).toEqual([]);
    const stored = (await f.repo.findByName("alice"))!;
    expect(stored).toMatchObject({ state: "ok", refreshTokenFingerprint: f.cipher.fingerprint(refresh) });
    await placebo(f.transport(other));
    expect(presented(issued.refresh_token)).toBe(1);

    // The kept refresh token is the live one: the next refresh spends it and succeeds.
    f.clock.advance(55 * MINUTE);
    expect(await other.getAccessToken()).not.toBe(access);
    expect(presented(refresh)).toBe(1);
    expect(f.tokenRequests()).toEqual([
      { grant: "refresh_token", status: 200 },
      { grant: "refresh_token", status: 200 },
    ]);
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
  });

  it("another host, whose config folder is its own, does not send the spent refresh token while the answer waits", async () => {
    const { issued, file } = await refreshRefused();
    const kept = JSON.parse(readFileSync(file, "utf8")) as { refreshTokenFingerprint: string };
    await takeWrites();
    // A second host (the s3 profile of docker-compose.yml gives each service a /config of its own) needs a refresh.
    const otherDir = mkdtempSync(path.join(os.tmpdir(), "dvault-other-host-"));
    try {
      const otherHost = await f.newManager({ pendingDir: otherDir }).forAccount("alice");
      expect(await otherHost.getAccessToken().catch((e: unknown) => e)).toBeInstanceOf(TokenRefreshDeferredError);
      expect(presented(issued.refresh_token)).toBe(1);
      expect((await f.repo.findByName("alice"))?.state).toBe("ok");
      // The host that kept it stores it at its next use; the other then uses what it stored.
      const keeper = await f.newManager().forAccount("alice");
      const access = await keeper.getAccessToken();
      expect(await otherHost.getAccessToken()).toBe(access);
    } finally {
      rmSync(otherDir, { recursive: true, force: true });
    }
    expect((await f.repo.findByName("alice"))?.refreshTokenFingerprint).toBe(kept.refreshTokenFingerprint);
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
  });

  it("says a grant its file could not hold is kept in this process alone, lost if it ends; no other process is told to wait", async () => {
    await seedAccount(f);
    // The config folder refuses the file (a read-only mount, the key given by DVAULT_SECRET_KEY).
    const blocker = path.join(path.dirname(f.pendingDir), "a-file");
    writeFileSync(blocker, "");
    const here = await f.newManager({ pendingDir: path.join(blocker, "pending-grants") }).forAccount("alice");
    const spent = (await f.repo.findByName("alice"))!.refreshTokenFingerprint;
    await refuseWrites();
    f.clock.advance(55 * MINUTE);
    const err = await here.getAccessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRefreshDeferredError);
    expect((err as Error).message).toContain("it is kept in this process's memory alone");
    expect((err as Error).message).toContain("it is lost if this process ends first");
    // Another process is not kept waiting a day for a grant that may end with this one: it finds the token spent.
    await takeWrites();
    expect(await (await f.newManager().forAccount("alice")).getAccessToken().catch((e: unknown) => e)).toBeInstanceOf(ReauthRequiredError);
    // This process, still running, stores the grant it holds: the account is usable again.
    await here.getAccessToken();
    const row = (await f.repo.findByName("alice"))!;
    expect(row.state).toBe("ok");
    expect(row.refreshTokenFingerprint).not.toBe(spent);
  });

  it("never stores a kept grant a new login replaced: the process that kept it removes it, a file found on disk is left", async () => {
    const { issued } = await refreshRefused();
    await takeWrites();
    const { issued: login } = await seedAccount(f);
    // Another process cannot tell this file from one of another install sharing the folder: left, and not stored.
    expect(await (await f.newManager().forAccount("alice")).getAccessToken()).toBe(login.access_token);
    expect(pendingFiles()).toHaveLength(1);
    expect((await f.repo.findByName("alice"))?.refreshTokenFingerprint).toBe(f.cipher.fingerprint(login.refresh_token));
    // The process whose refresh it answered knows it is this database's: removed.
    await f.manager.status((await f.repo.findByName("alice"))!);
    expect(pendingFiles()).toEqual([]);
    expect((await f.repo.findByName("alice"))?.refreshTokenFingerprint).toBe(f.cipher.fingerprint(login.refresh_token));
    expect(presented(issued.refresh_token)).toBe(1);
    expect(f.tokenRequests()).toHaveLength(1);
  });

  it("leaves alone the kept grant of another install sharing DVAULT_CONFIG_DIR, whose account has the same id", async () => {
    const { file } = await refreshRefused();
    const kept = JSON.parse(readFileSync(file, "utf8")) as { refreshTokenFingerprint: string };
    // Install B: a database of its own, the same config folder (the default ~/.config/dvault), its own account 1.
    const b = await createFixture();
    try {
      await seedAccount(b);
      const bRow = (await b.repo.findByName("alice"))!;
      expect(bRow.id).toBe((await f.repo.findByName("alice"))?.id);
      const manager = b.newManager({ pendingDir: f.pendingDir });
      await (await manager.forAccount("alice")).getAccessToken();
      await manager.status(bRow);
      expect(pendingFiles()).toEqual([path.basename(file)]);
      expect((await b.repo.findByName("alice"))?.refreshTokenFingerprint).toBe(bRow.refreshTokenFingerprint);
    } finally {
      await b.close();
    }
    // Install A's grant is still there for A: stored at its next read, with no token request.
    await takeWrites();
    await (await f.newManager().forAccount("alice")).getAccessToken();
    expect((await f.repo.findByName("alice"))?.refreshTokenFingerprint).toBe(kept.refreshTokenFingerprint);
    expect(pendingFiles()).toEqual([]);
    expect(f.tokenRequests()).toHaveLength(1);
  });
});
