// `dvault auth` as a user runs it, against the simulator: import, status --json, logout (both forms),
// client, login (listener and --paste), and the one-line failures.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import got from "got";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE, TEST_PG_ADDRESS, TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { approveInBrowser, CLIENT_ID, CLIENT_SECRET } from "./tokens-fixture.ts";
import { freePort } from "../../src/free-port.ts";

const BIN = path.resolve("bin/dvault.js");

type Run = { code: number | null; stdout: string; stderr: string };

type RunOptions = { env?: Record<string, string>; stdin?: string; onStderr?: (text: string, write: (line: string) => void) => void };

describe("dvault auth", () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let sim: Simulator;
  let baseEnv: Record<string, string>;
  let redirectUri: string;
  const seen: string[] = [];
  const key = randomBytes(32).toString("hex");

  function dvault(args: string[], options: RunOptions = {}): Promise<Run> {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv, ...options.env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      options.onStderr?.(stderr, (line) => child.stdin.write(`${line}\n`));
    });
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    return new Promise<Run>((resolve) =>
      child.on("close", (code) => {
        seen.push(stdout, stderr);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  const status = async () => {
    const run = await dvault(["auth", "status", "--json"]);
    return { run, accounts: JSON.parse(run.stdout) as Array<Record<string, unknown>> };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
    sim = await startSimulator({
      clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirectUri, "http://127.0.0.1:8788/callback"] }],
    });
    baseEnv = {
      PATH: process.env.PATH ?? "",
      HOME: mkdtempSync(path.join(os.tmpdir(), "dvault-auth-")),
      LOG_LEVEL: "info",
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: redis.prefix,
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: CLIENT_ID,
      DVAULT_CLIENT_SECRET: CLIENT_SECRET,
      DVAULT_REDIRECT_URI: redirectUri,
      DVAULT_SECRET_KEY: key,
    };
  });
  // After every test, whatever their order: no output any test saw holds a token, the client secret or a code.
  afterAll(async () => {
    try {
      const secrets = new Set<string>([CLIENT_SECRET]);
      for (const entry of sim.log()) {
        for (const name of ["code", "code_verifier", "refresh_token", "token", "client_secret"]) {
          const value = entry.form[name] ?? entry.query[name];
          if (typeof value === "string" && value.length >= 6) secrets.add(value);
        }
      }
      expect(secrets.size).toBeGreaterThan(3);
      const output = seen.join("\n");
      for (const secret of secrets) expect(output.includes(secret)).toBe(false);
    } finally {
      await sim.close();
      await redis.cleanup();
      await db.drop();
    }
  });

  // The stored accounts' life: imported, listed, refreshed, joined by a client account, logged out, logged in
  // again (listener, then --paste), then read with a wrong key. Each step starts from the accounts the
  // previous steps left, so the whole life is one test, each step in its own block with its own assertions.
  it("imports, lists, refreshes, adds a client, logs out, logs in again (listener and --paste), and names a wrong key", async () => {
    // Step: import exchanges the refresh token at once and stores its successor under the username.
    {
      const issued = sim.issueUserToken();
      const owner = sim.truth.users.get(sim.truth.ownerId)!;
      // Other tests may have asked for tokens before this one: only this import's calls count.
      const before = sim.log().length;
      const run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`imported ${owner.username} as account "${owner.username}"`);
      expect(run.stdout).toMatch(/granted scopes: basic /);
      const tokenCalls = sim
        .log()
        .slice(before)
        .filter((e) => e.route === "/oauth2/token");
      expect(tokenCalls.map((e) => [e.form.grant_type, e.status])).toEqual([["refresh_token", 200]]);
      expect(
        sim
          .log()
          .slice(before)
          .some((e) => e.route.endsWith("/user/whoami") && e.status === 200),
      ).toBe(true);
    }

    // Step: import reads the token from stdin with `-`, and --account names the account.
    {
      const other = [...sim.truth.users.keys()].find((id) => id !== sim.truth.ownerId)!;
      const issued = sim.issueUserToken({ userId: other });
      const run = await dvault(["auth", "import", "--refresh-token", "-", "--account", "second"], { stdin: `${issued.refresh_token}\n` });
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('as account "second"');
    }

    // Step: status --json: user, scopes, access expiry, refresh-token age, state, and a placebo per account.
    {
      const { run, accounts } = await status();
      expect(run.code).toBe(0);
      const owner = sim.truth.users.get(sim.truth.ownerId)!;
      expect(accounts.map((a) => a.name).sort()).toEqual([owner.username, "second"].sort());
      const first = accounts.find((a) => a.name === owner.username)!;
      expect(first).toMatchObject({
        kind: "user",
        username: owner.username,
        userId: owner.userid,
        grantType: "imported",
        state: "ok",
        refreshTokenAgeDays: 0,
        hasRefreshToken: true,
        placebo: "ok",
      });
      expect(first.scopes).toEqual(expect.arrayContaining(["basic", "browse", "user"]));
      expect(new Date(String(first.accessExpiresAt)).getTime()).toBeGreaterThan(Date.now());
    }

    // Step: status without --json prints a readable summary.
    {
      const run = await dvault(["auth", "status"]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^second$/m);
      expect(run.stdout).toMatch(/ {2}state: {10}ok/);
      expect(run.stdout).toMatch(/ {2}placebo: {8}ok/);
    }

    // Step: status refreshes an account whose access token the service expired.
    {
      sim.expireAccessTokens();
      const before = sim.log().length;
      const { accounts } = await status();
      expect(accounts.every((a) => a.placebo === "ok")).toBe(true);
      expect(
        sim
          .log()
          .slice(before)
          .filter((e) => e.route === "/oauth2/token"),
      ).toHaveLength(2);
    }

    // Step: client stores a client-credentials token as its own account.
    {
      const run = await dvault(["auth", "client"]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('as account "client:1001"');
      const { accounts } = await status();
      expect(accounts.find((a) => a.name === "client:1001")).toMatchObject({ kind: "client", grantType: "client_credentials", state: "ok", placebo: "ok" });
    }

    // Step: logout revokes just this install's refresh token; logout --everywhere revokes the grant; status then exits 4.
    {
      const several = await dvault(["auth", "logout"]);
      expect(several.code).toBe(1);
      expect(several.stderr).toMatch(/several accounts are stored .*choose one with --account/);

      const before = sim.log().length;
      const refreshOnly = await dvault(["auth", "logout", "--account", "second"]);
      expect(refreshOnly.code).toBe(0);
      expect(refreshOnly.stdout).toContain('logged out of account "second": this install\'s refresh token was revoked');
      const owner = sim.truth.users.get(sim.truth.ownerId)!;
      const full = await dvault(["auth", "logout", "--account", owner.username, "--everywhere", "--yes"]);
      expect(full.code).toBe(0);
      expect(full.stdout).toContain("for this application was revoked");
      const revokes = sim
        .log()
        .slice(before)
        .filter((e) => e.route === "/oauth2/revoke");
      expect(revokes.map((e) => [e.form.revoke_refresh_only ?? null, e.status])).toEqual([
        ["true", 200],
        [null, 200],
      ]);

      const { run, accounts } = await status();
      expect(run.code).toBe(4);
      const second = accounts.find((a) => a.name === "second");
      expect(second).toMatchObject({ state: "revoked", hasRefreshToken: false, placebo: "skipped (no usable grant: dvault auth login --account second)" });
      // Beside "no usable grant", nothing claims the access token works for dvault.
      expect(second?.stateReason).toContain("dvault no longer uses this account");
      expect(second?.stateReason).not.toMatch(/access token works/);
      expect(accounts.find((a) => a.name === owner.username)).toMatchObject({ state: "revoked", accessExpiresAt: null });
    }

    // Step: login through the loopback listener: prints the URL, waits, says who logged in and the scopes.
    {
      let browsed = false;
      const run = await dvault(["auth", "login", "--no-browser", "--timeout", "30"], {
        onStderr: (text) => {
          const url = /^\s+(http\S+oauth2\/authorize\S+)$/m.exec(text)?.[1];
          if (!url || browsed || !text.includes("Waiting for the redirect")) return;
          browsed = true;
          void approveInBrowser(url).then((location) => got(location));
        },
      });
      expect(run.code).toBe(0);
      const owner = sim.truth.users.get(sim.truth.ownerId)!;
      expect(run.stdout).toContain(`logged in as ${owner.username}; stored as account "${owner.username}"`);
      expect(run.stdout).toContain("granted scopes: basic browse user message note feed");
      const { accounts } = await status();
      expect(accounts.find((a) => a.name === owner.username)).toMatchObject({ state: "ok", grantType: "authorization_code" });
    }

    // Step: login --paste with extra scopes the service will not grant: warns about the downgrade to basic.
    {
      let pasted = false;
      const run = await dvault(["auth", "login", "--paste", "--no-browser", "--account", "pasted", "--scopes", "no-such-scope", "--form-auth"], {
        onStderr: (text, write) => {
          const url = /^\s+(http\S+oauth2\/authorize\S+)$/m.exec(text)?.[1];
          if (!url || pasted || !text.includes("paste the URL your browser ends up on")) return;
          pasted = true;
          void approveInBrowser(url).then((location) => write(location));
        },
      });
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("granted scopes: basic");
      expect(run.stderr).toMatch(/warning: the service downgraded the grant to `basic`/);
      const token = sim
        .log()
        .filter((e) => e.route === "/oauth2/token")
        .at(-1);
      expect(token?.auth).toBe("body");
    }

    // Step: a different secret key (a key lost in a move): auth status and status each say which key is wrong and
    // what to do (auth status with exit code 4: an account must log in again), never "ok".
    {
      const wrongKey = { DVAULT_SECRET_KEY: randomBytes(32).toString("hex") };
      const run = await dvault(["auth", "status", "--json"], { env: wrongKey });
      expect(run.code).toBe(4);
      const accounts = JSON.parse(run.stdout) as Array<{ name: string; placebo: string; state: string; stateReason: string }>;
      const pasted = accounts.find((a) => a.name === "pasted")!;
      expect(pasted.placebo).toBe(
        'failed: account "pasted" must be authorized again: its stored tokens were encrypted with another key than DVAULT_SECRET_KEY ' +
          "(restore that key, or log in again). Run: dvault auth login --account pasted — or, on a headless server: " +
          "dvault auth import --refresh-token <token> --account pasted",
      );
      expect(pasted).toMatchObject({
        state: "needs_reauth",
        stateReason: "its stored tokens were encrypted with another key than DVAULT_SECRET_KEY (restore that key, or log in again)",
      });
      // dvault status, with the app's credentials and without them (then the key is only read, never made).
      for (const env of [wrongKey, { ...wrongKey, DVAULT_CLIENT_ID: "", DVAULT_CLIENT_SECRET: "" }]) {
        const status = await dvault(["status", "--json"], { env });
        const report = JSON.parse(status.stdout) as { accounts: Array<{ name: string; state: string; needsReauth: boolean; fix: string | null }> };
        expect(report.accounts.find((a) => a.name === "pasted")).toMatchObject({
          state: "needs_reauth",
          needsReauth: true,
          fix: "dvault auth login --account pasted",
        });
      }
      // auth status without a key: read only, as status is; each account needs a login or its key back, none is checked.
      const authNoKey = await dvault(["auth", "status", "--json"], { env: { DVAULT_SECRET_KEY: "" } });
      expect(authNoKey.code).toBe(4);
      expect((JSON.parse(authNoKey.stdout) as Array<{ name: string }>).find((a) => a.name === "pasted")).toMatchObject({
        state: "needs_reauth",
        stateReason: expect.stringMatching(/^its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file /),
        placebo: "skipped (no key to read its tokens with)",
      });
      // Nor does a logout make one: without a key nothing can be revoked, said in one line.
      const logoutNoKey = await dvault(["auth", "logout", "--account", "pasted"], { env: { DVAULT_SECRET_KEY: "" } });
      expect(logoutNoKey.code).toBe(1);
      expect(logoutNoKey.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(
          /^dvault: no key was found in DVAULT_SECRET_KEY or the key file \S+: the stored tokens cannot be read, so nothing can be revoked\./,
        ),
      ]);
      const noKey = await dvault(["status", "--json"], { env: { DVAULT_SECRET_KEY: "", DVAULT_CLIENT_ID: "", DVAULT_CLIENT_SECRET: "" } });
      const withoutKey = JSON.parse(noKey.stdout) as { accounts: Array<{ name: string; state: string; stateReason: string }> };
      expect(withoutKey.accounts.find((a) => a.name === "pasted")).toMatchObject({
        state: "needs_reauth",
        stateReason: `its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file ${path.join(baseEnv.HOME ?? "", ".config", "dvault", "secret.key")} (restore that key, or log in again)`,
      });
      expect(existsSync(path.join(baseEnv.HOME ?? "", ".config", "dvault", "secret.key")), "status, auth status and auth logout made no key").toBe(false);
    }
  }, 300_000);

  it("a spent refresh token cannot be imported: one clear line", async () => {
    const issued = sim.issueUserToken();
    await got.post(`${sim.url}/oauth2/token`, {
      form: { grant_type: "refresh_token", refresh_token: issued.refresh_token, client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
    });
    const run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual([
      "dvault: the service rejected that refresh token (used, revoked, expired, or from another client_id); get a new one, or log in with `dvault auth login`",
    ]);
  });

  it("a logout the service does not settle: one line saying what to do, exit 1, the account still logged in here", async () => {
    // A database of its own: the accounts this test leaves are no other test's.
    const own = await createTestDatabase();
    const run = (args: string[], env: Record<string, string> = {}) => dvault(args, { env: { DATABASE_URL: own.url, ...env } });
    try {
      const imported = await run(["auth", "import", "--refresh-token", sim.issueUserToken().refresh_token, "--account", "kept"]);
      expect(imported.code, imported.stderr).toBe(0);
      // Unreachable (nothing listens on that port): not the exit code of a missing PostgreSQL or Redis (3), no log line.
      const unreachable = await run(["auth", "logout", "--account", "kept"], { DVAULT_API_BASE: `http://127.0.0.1:${await freePort()}` });
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(
          /^dvault: cannot reach the service's OAuth endpoint \S+ \(ECONNREFUSED\)\. Check DVAULT_API_BASE and the network, then try again$/,
        ),
      ]);
      // The revoke sent, its answer lost: whether it took is not known, and running it again is what to do.
      sim.faults.add({ kind: "reset", route: "/oauth2/revoke", times: 1 });
      const lost = await run(["auth", "logout", "--account", "kept"]);
      expect(lost.code).toBe(1);
      expect(lost.stderr.trimEnd().split("\n")).toEqual([
        'dvault: the revoke request reached the service but its answer was lost (ECONNRESET): whether the service revoked it is not known, and account "kept" stays logged in here; run dvault auth logout --account kept again',
      ]);
      // Refused for now (503): nothing revoked, to be run again later.
      sim.faults.add({ kind: "status_503", route: "/oauth2/revoke", times: 1 });
      const refused = await run(["auth", "logout", "--account", "kept"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(
          /^dvault: the service's revoke endpoint refused the revoke request: HTTP 503 .*: account "kept" stays logged in here; run dvault auth logout --account kept again later$/,
        ),
      ]);
      // Nothing changed here: the account keeps its grant (a later logout is the one tested above).
      const { rows } = await own.pool.query("SELECT name, state, refresh_token_enc IS NOT NULL AS refresh FROM accounts");
      expect(rows).toEqual([{ name: "kept", state: "ok", refresh: true }]);
    } finally {
      sim.faults.clear();
      await own.drop();
    }
  });

  it("auth status on a new install makes no key file, and says there is none yet", async () => {
    const own = await createTestDatabase();
    const home = mkdtempSync(path.join(os.tmpdir(), "dvault-auth-"));
    try {
      const run = await dvault(["auth", "status"], { env: { DATABASE_URL: own.url, HOME: home, DVAULT_SECRET_KEY: "" } });
      expect(run.code, run.stderr).toBe(0);
      const file = path.join(home, ".config", "dvault", "secret.key");
      expect(run.stdout).toBe(
        `no accounts yet: run \`dvault auth login\` (or \`dvault auth import --refresh-token <token>\`)\nno key yet: the first login makes ${file} (or set DVAULT_SECRET_KEY)\n`,
      );
      expect(existsSync(file)).toBe(false);
    } finally {
      await own.drop();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("without DVAULT_CLIENT_ID: one line saying what to set", async () => {
    const run = await dvault(["auth", "status"], { env: { DVAULT_CLIENT_ID: "" } });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/^dvault: DVAULT_CLIENT_ID is not set: register an application/);
  });

  it("login --timeout 2 waits 2 s and says 2 s; a timeout that is not a whole number of seconds is one line", async () => {
    const started = Date.now();
    const run = await dvault(["auth", "login", "--no-browser", "--timeout", "2"]);
    const waited = Date.now() - started;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`Waiting for the redirect to ${redirectUri} (up to 2 s, --timeout) ...`);
    expect(run.stderr.trim().split("\n").at(-1)).toBe("dvault: no redirect arrived within 2 s; run `dvault auth login` again (or use --paste)");
    expect(waited).toBeGreaterThanOrEqual(2000);
    expect(waited).toBeLessThan(9000);
    for (const bad of ["0", "5s"]) {
      const refused = await dvault(["auth", "login", "--no-browser", "--timeout", bad]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split("\n")).toEqual([`dvault: --timeout expects a whole number of seconds from 1 to 86400, not "${bad}"`]);
    }
  });

  // Tables made by hand, without Prisma's ledger, are no dvault schema either: the ledger says what is applied.
  it.each([
    ["without the tables", []],
    ["with only the first migration's tables", ["20261122000000_init"]],
  ])("on a database %s: one line, run dvault migrate, exit code 3", async (_what, migrations) => {
    const name = `dvault_t_old_${randomBytes(4).toString("hex")}`;
    const admin = await connectPg(TEST_PG_URL);
    await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
    try {
      if (migrations.length) {
        const old = await connectPg(withDatabase(TEST_PG_URL, name));
        for (const m of migrations) await old.query(readFileSync(path.resolve("prisma/migrations", m, "migration.sql"), "utf8"));
        await old.end();
      }
      const run = await dvault(["auth", "status"], { env: { DATABASE_URL: withDatabase(TEST_PG_URL, name) } });
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split("\n")).toEqual([`dvault: the database "${name}" on ${TEST_PG_ADDRESS} has no dvault schema yet: run dvault migrate`]);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      await admin.end();
    }
  });
});
