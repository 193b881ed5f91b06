// The embedded PostgreSQL server (src/db/embedded/) as processes share it: made once, started detached, attached
// to by every process on the same port, outliving the process that started it while another holds a lease, and
// stopped by the last holder to end. One data folder (one initdb) for the file; each test leaves the server stopped.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachEmbedded } from "../../src/db/embedded/attach.ts";
import { embeddedLayout, readState } from "../../src/db/embedded/layout.ts";
import { liveHolders } from "../../src/db/embedded/lease.ts";
import { runningServer } from "../../src/db/embedded/server.ts";
import { connectPg } from "../../src/db/connect.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE, TEST_REDIS_URL } from "../helpers/env.ts";
import { dvault, embeddedDataDir, type Holder, startHolder } from "../helpers/embedded-fixture.ts";

const data = embeddedDataDir();
const { dataDir } = data;
/** The two processes that started at once on the empty data folder. */
let firsts: Holder[] = [];
/** The state those two left (a later test may move the server to another port). */
let firstState: ReturnType<typeof readState>;

/** The server's folder, from the state the first start wrote. */
const folder = () => readState(embeddedLayout(dataDir))?.folder ?? "";

async function answers(url: string): Promise<string> {
  const client = await connectPg(url);
  try {
    return String((await client.query("SHOW server_version_num")).rows[0]?.server_version_num);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  firsts = await Promise.all([startHolder(dataDir), startHolder(dataDir)]);
  for (const holder of firsts) await holder.send("exit");
  // Read now: the tests run in a random order, and the one about a taken port moves the server to another.
  firstState = readState(embeddedLayout(dataDir));
});

afterAll(() => data.remove());

describe("the embedded server", () => {
  it("is made once (initdb into DVAULT_DATA_DIR/postgres) by two processes starting at once, and answers on loopback with a dvault database", async () => {
    // One made and started it; the other, waiting on the lock, attached to it.
    const [maker, attacher] = [...firsts].sort((a, b) => Number(b.initialized) - Number(a.initialized));
    expect(maker).toMatchObject({ initialized: true, started: true, databaseCreated: true });
    expect(attacher).toMatchObject({ initialized: false, started: false, databaseCreated: false, port: maker?.port });
    expect(folder()).toBe(path.join(dataDir, "postgres"));
    expect(readFileSync(path.join(folder(), "PG_VERSION"), "utf8").trim()).toBe("18");
    expect(firstState?.port).toBe(maker?.port);
    // Both ended: the last stopped it.
    expect(runningServer(folder())).toBeUndefined();
    const again = await attachEmbedded({ dataDir });
    try {
      // On the port the state remembers now (the taken-port test, if it ran first, moved it).
      expect(again).toMatchObject({ initialized: false, started: true, databaseCreated: false, port: readState(embeddedLayout(dataDir))?.port });
      expect(Number(await answers(again.url))).toBeGreaterThanOrEqual(180000);
      const client = await connectPg(again.url);
      const listen = (await client.query("SHOW listen_addresses")).rows[0]?.listen_addresses;
      await client.end();
      expect(listen).toBe("127.0.0.1");
      expect(
        readFileSync(path.join(folder(), "pg_hba.conf"), "utf8")
          .split("\n")
          .filter((l) => l && !l.startsWith("#")),
      ).toEqual(["local all all trust", "host all all 127.0.0.1/32 scram-sha-256"]);
      // Anyone on the machine reaches 127.0.0.1: without the password (mode 600 beside dvault's data) the server
      // refuses them; a superuser could otherwise run programs as the server's user.
      const passwordFile = embeddedLayout(dataDir).passwordFile;
      expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
      await expect(connectPg(`postgresql://postgres@127.0.0.1:${again.port}/dvault`)).rejects.toThrow(/password/i);
      await expect(connectPg(`postgresql://postgres:wrong@127.0.0.1:${again.port}/dvault`)).rejects.toThrow(/password/i);
      expect(again.url).toContain(encodeURIComponent(readFileSync(passwordFile, "utf8").trim()));
    } finally {
      again.release();
    }
  });

  it("lets a second process attach to the running server on the same port, without a second initdb", async () => {
    const mine = await attachEmbedded({ dataDir });
    const other = await startHolder(dataDir);
    try {
      expect(other).toMatchObject({ port: mine.port, initialized: false, started: false });
      expect(liveHolders(embeddedLayout(dataDir))).toEqual([process.pid, other.pid].sort((a, b) => a - b));
      await other.send("release");
      // This process still holds its lease: the server runs on.
      expect(runningServer(folder())?.port).toBe(mine.port);
      await answers(mine.url);
    } finally {
      await other.send("exit");
      mine.release();
    }
    expect(runningServer(folder())).toBeUndefined();
  });

  it("outlives the process that started it while another holds a lease, and stops when the last holder ends", async () => {
    const starter = await startHolder(dataDir);
    expect(starter.started).toBe(true);
    const mine = await attachEmbedded({ dataDir });
    expect(mine).toMatchObject({ started: false, port: starter.port });
    // The starter exits holding its lease: its exit gives it up, and this process's lease keeps the server.
    await starter.send("exit");
    const server = runningServer(folder());
    expect(server?.port).toBe(starter.port);
    await answers(mine.url);
    expect(liveHolders(embeddedLayout(dataDir))).toEqual([process.pid]);
    mine.release();
    expect(runningServer(folder())).toBeUndefined();
    expect(existsSync(path.join(folder(), "postmaster.pid"))).toBe(false);
  });

  it("is stopped by its last holder ended by Ctrl-C (SIGINT) with no handler of its own, which still ends by the signal", async () => {
    const interrupted = await startHolder(dataDir);
    expect(runningServer(folder())?.port).toBe(interrupted.port);
    interrupted.child.kill("SIGINT");
    const [, signal] = (await new Promise((resolve) => interrupted.child.once("close", (...end) => resolve(end)))) as [number | null, string | null];
    expect(signal).toBe("SIGINT");
    expect(runningServer(folder())).toBeUndefined();
    expect(liveHolders(embeddedLayout(dataDir))).toEqual([]);
  });

  it("does not count the lease of a process killed outright: the next holder to end stops the server", async () => {
    const killed = await startHolder(dataDir);
    const mine = await attachEmbedded({ dataDir });
    killed.child.kill("SIGKILL");
    await new Promise((resolve) => killed.child.once("close", resolve));
    expect(liveHolders(embeddedLayout(dataDir))).toEqual([process.pid]);
    mine.release();
    expect(runningServer(folder())).toBeUndefined();
  });

  it("shows its state (dvault db status) and refuses dvault db stop while another process holds a lease, unless --force", async () => {
    const env = { DATABASE_URL: "embedded", DVAULT_DATA_DIR: dataDir };
    const mine = await attachEmbedded({ dataDir });
    try {
      const status = await dvault(env, ["db", "status"]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(`data folder: ${folder()} (PostgreSQL 18)`);
      expect(status.stdout).toMatch(new RegExp(`running: +yes, pid \\d+, port ${mine.port} `));
      expect(status.stdout).toContain(`leases:      processes ${process.pid} `);
      const refused = await dvault(env, ["db", "stop"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split("\n")).toEqual([
        `dvault: the embedded server is in use by process ${process.pid}: end it (the last to end stops the server), or run dvault db stop --force to stop it under it`,
      ]);
      expect(runningServer(folder())).toBeDefined();
      const forced = await dvault(env, ["db", "stop", "--force"]);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout.trim()).toBe(`stopped the embedded server in ${folder()}; processes ${process.pid} lost their connections`);
      expect(runningServer(folder())).toBeUndefined();
    } finally {
      mine.release();
    }
    const after = await dvault(env, ["db", "status"]);
    expect(after.stdout).toContain(`running:     no (it starts on port ${mine.port} with the next command)`);
    expect(after.stdout).toContain("leases:      none");
    const nothing = await dvault(env, ["db", "stop"]);
    expect(nothing.stdout.trim()).toBe(`the embedded server in ${folder()} is not running: nothing to stop`);
  });

  it("serves dvault's commands with DATABASE_URL=embedded: migrate makes the database dvault's, status opens it, and each leaves it stopped", async () => {
    const env = {
      DATABASE_URL: "embedded",
      DVAULT_DATA_DIR: dataDir,
      REDIS_URL: TEST_REDIS_URL,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: `embedded-${process.pid}`,
    };
    const migrated = await dvault(env, ["migrate"]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(
      /(applied \d+ migration\(s\) to |nothing to apply: )postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/dvault \(the embedded server\)/,
    );
    expect(runningServer(folder())).toBeUndefined();
    const status = await dvault(env, ["status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toHaveProperty("accounts", []);
    expect(runningServer(folder())).toBeUndefined();
    expect(liveHolders(embeddedLayout(dataDir))).toEqual([]);
  });

  it("is made by a restore into a data folder that holds none (a new machine after a disaster), as by migrate", async () => {
    // A backup of a migrated database of the test server, restored where no embedded server was ever made.
    const source = await createTestDatabase();
    const fresh = embeddedDataDir();
    const work = mkdtempSync(path.join(os.tmpdir(), "dvault-embedded-restore-"));
    const base = { REDIS_URL: TEST_REDIS_URL, DVAULT_ENGINE: TEST_ENGINE, DVAULT_REDIS_PREFIX: `embedded-restore-${process.pid}` };
    try {
      const backup = await dvault({ ...base, DATABASE_URL: source.url, DVAULT_SECRET_KEY: "ab".repeat(32) }, [
        "backup",
        "--out",
        path.join(work, "backup"),
        "--no-archive",
      ]);
      expect(backup.code, backup.stderr).toBe(0);
      const env = { ...base, DATABASE_URL: "embedded", DVAULT_DATA_DIR: fresh.dataDir, DVAULT_ARCHIVE_DIR: path.join(work, "archive") };
      const restored = await dvault(env, ["restore", "--from", path.join(work, "backup")]);
      expect(restored.code, restored.stderr).toBe(0);
      // Said, so a DVAULT_DATA_DIR typed wrong is seen.
      expect(restored.stderr.trim()).toBe(
        `dvault: made a new embedded PostgreSQL server in ${readState(embeddedLayout(fresh.dataDir))?.folder} for this restore (DVAULT_DATA_DIR)`,
      );
      const status = await dvault(env, ["status", "--json"]);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toHaveProperty("accounts", []);
    } finally {
      fresh.remove();
      rmSync(work, { recursive: true, force: true });
      await source.drop();
    }
  }, 120_000);

  it("starts on another free port when a program took its port while it was stopped, and remembers that one", async () => {
    const remembered = readState(embeddedLayout(dataDir))?.port ?? 0;
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(remembered, "127.0.0.1", resolve));
    try {
      const mine = await attachEmbedded({ dataDir });
      try {
        expect(mine.started).toBe(true);
        expect(mine.port).not.toBe(remembered);
        expect(readState(embeddedLayout(dataDir))?.port).toBe(mine.port);
        await answers(mine.url);
      } finally {
        mine.release();
      }
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it("takes over the lock of a process that died holding it", async () => {
    const layout = embeddedLayout(dataDir);
    const dead = await startHolder(dataDir);
    await dead.send("exit");
    writeFileSync(layout.lockFile, `${dead.pid} 1`);
    const mine = await attachEmbedded({ dataDir });
    mine.release();
    expect(existsSync(layout.lockFile)).toBe(false);
    expect(runningServer(folder())).toBeUndefined();
  });
});
