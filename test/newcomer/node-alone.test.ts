// The README's commands on a machine with Node alone (issue #31): no PostgreSQL and no Redis server answering.
// `npm run demo` runs as a newcomer runs it, DATABASE_URL and REDIS_URL unset, in a network namespace of its own
// (`unshare -n`, loopback up): the defaults of src/config-defaults.ts are the real ones and nothing answers at them,
// where a test-only switch in the defaults would prove only the switch. Then, with DVAULT_ENGINE=postgres and
// DATABASE_URL=embedded, a worker and commands from other processes share one embedded server, which stops when
// the last of them ends. A configured server that is down stays an error: the demo never falls back from it.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { embeddedLayout, readState } from "../../src/db/embedded/layout.ts";
import { runningServer } from "../../src/db/embedded/server.ts";
import { stopEmbedded } from "../../src/db/embedded/status.ts";
import { DEMO_SERVER_DIR } from "../../src/demo/servers.ts";
import { freePort } from "../../src/free-port.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { type CliRun, collectRun } from "../helpers/dvault-cli.ts";
import { dvault } from "../helpers/embedded-fixture.ts";
import { DVAULT_COMMAND } from "../../src/cli/demo.ts";

const BIN = path.resolve("bin/dvault.js");
/** Folders under /tmp, mode 755: run as root, the embedded server's own user must enter them (src/db/embedded/layout.ts). */
const root = mkdtempSync("/tmp/dvault-node-alone-");
chmodSync(root, 0o755);

/** Whether this machine lets the test make a network namespace (root, or a user namespace allowed). */
const canUnshare = spawnSync("unshare", ["-n", "true"]).status === 0;
if (!canUnshare) console.log("node-alone: `unshare -n` is not allowed here (run as root): the demo without servers is skipped");

/** `node <script> <args>` in a network namespace of its own, where nothing answers but what it starts itself. */
function nodeWithoutServers(script: string, args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  const started = Date.now();
  const child = spawn("unshare", ["-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', process.execPath, script, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child, started);
}

/** `bin/dvault.js <args>` with no server answering. */
const withoutServers = (args: readonly string[], env: Record<string, string>) => nodeWithoutServers(BIN, args, env);

afterAll(() => {
  for (const dataDir of [path.join(root, "demo", DEMO_SERVER_DIR), path.join(root, "stopped-demo", DEMO_SERVER_DIR), path.join(root, "shared")]) {
    if (existsSync(dataDir)) stopEmbedded({ dataDir, force: true });
  }
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!canUnshare)("npm run demo with no server answering", () => {
  const dir = path.join(root, "demo");
  const dataDir = path.join(dir, DEMO_SERVER_DIR);
  let demo: CliRun;

  beforeAll(async () => {
    demo = await withoutServers(["demo", "--deviations", "40", "--dir", dir], {});
  }, 300_000);

  it("says in one line that it runs on an embedded server of its own and on PostgreSQL alone", () => {
    expect(demo.code, demo.stderr).toBe(0);
    const servers = demo.stdout.split("\n").filter((l) => l.startsWith("servers: "));
    expect(servers).toEqual([
      `servers: PostgreSQL on an embedded server of the demo's own, its data in ${dataDir} (none answers at the default postgresql://postgres@127.0.0.1:5432/dvault); queues, locks and the pace on PostgreSQL alone (DVAULT_ENGINE=postgres: no Redis answers at the default redis://127.0.0.1:6379)`,
    ]);
  });

  it("archives the simulator's account end to end", () => {
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/^7\/7 report {2}done in \d+ s\. Archived for /m);
    const deviations = Number(/^ {2}(\d+) deviations?, /m.exec(demo.stdout)?.[1]);
    expect(deviations).toBeGreaterThan(0);
    expect(demo.stdout).toMatch(/^5\/7 pictures [1-9]\d* thumbnails made, \d+ placeholder tile\(s\) for files that are not pictures, 0 failed$/m);
    expect(readdirSync(path.join(dir, "archive")).length).toBeGreaterThan(0);
  });

  it("leaves no server running, and prints no address of the one that stopped", () => {
    const state = readState(embeddedLayout(dataDir));
    expect(state?.folder).toBeDefined();
    expect(runningServer(state?.folder ?? "")).toBeUndefined();
    const beyondServersLine = demo.stdout.split("\n").filter((l) => !l.startsWith("servers: "));
    expect(beyondServersLine.filter((l) => l.includes("postgresql://") || l.includes(`:${state?.port}`))).toEqual([]);
    expect(demo.stdout).toContain(`DATABASE_URL=embedded DVAULT_DATA_DIR=${dataDir} DVAULT_ENGINE=postgres DVAULT_ARCHIVE_DIR=`);
  });

  it("prints a search command that, run as printed, reopens the demo's archive", async () => {
    const line = demo.stdout.split("\n").find((l) => l.includes(`${DVAULT_COMMAND} search `) && !l.includes("--type"));
    expect(line, demo.stdout).toBeDefined();
    const env = Object.fromEntries([...(line ?? "").matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1] ?? "", m[2] ?? ""]));
    const term = line?.split(" ").at(-1) ?? "";
    const search = await withoutServers(["search", term], { LOG_LEVEL: "warn", ...env });
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout.toLowerCase()).toContain(term.toLowerCase());
    expect(runningServer(readState(embeddedLayout(dataDir))?.folder ?? "")).toBeUndefined();
  });
});

describe.skipIf(!canUnshare)("Ctrl-C while the demo's own server starts", () => {
  it("says in one line what is left, exits 130, and leaves no server running", async () => {
    const dir = path.join(root, "stopped-demo");
    const cluster = path.join(dir, DEMO_SERVER_DIR, "postgres");
    const started = Date.now();
    const child = spawn(
      "unshare",
      ["-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', process.execPath, BIN, "demo", "--deviations", "20", "--dir", dir],
      {
        env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const run = collectRun(child, started);
    // postmaster.opts: written by the server proper as it starts (after initdb), before it answers.
    await expect.poll(() => existsSync(path.join(cluster, "postmaster.opts")), { timeout: 120_000, interval: 10 }).toBe(true);
    child.kill("SIGINT");
    const r = await run;
    expect(r.code, r.stdout + r.stderr).toBe(130);
    expect(r.stderr.trim().split("\n").at(-1)).toBe("dvault demo: stopped; its folder and database are half made: run dvault demo again, which starts over");
    // Stopped as the process ended (src/db/embedded/attach.ts), not left serving the demo's folder.
    expect(runningServer(cluster)).toBeUndefined();
  }, 180_000);
});

describe.skipIf(!canUnshare)("npm test with no server answering", () => {
  it("runs on an embedded server of its own and PostgreSQL alone, skips the tests about Redis itself, and removes the server", async () => {
    // Its temporary folders under this test's own (TMPDIR), to see them go.
    const tmp = path.join(root, "npm-test");
    mkdirSync(tmp, { mode: 0o755 });
    const results = path.join(tmp, "results.json");
    const vitest = path.resolve("node_modules/vitest/vitest.mjs");
    const run = await nodeWithoutServers(vitest, ["run", "test/newcomer/servers-in-run.test.ts", "--maxWorkers", "1", `--outputFile.json=${results}`], {
      TMPDIR: tmp,
    });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const line = run.stdout.split("\n").filter((l) => l.startsWith("test servers: "));
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(
      new RegExp(
        `^test servers: PostgreSQL on an embedded server of this run, in ${tmp}/dvault-test-postgres-\\w+/data/postgres \\(none answers at postgresql://postgres@127\\.0\\.0\\.1:5432/postgres; stopped and removed at the end\\); no Redis answers at redis://127\\.0\\.0\\.1:6379: dvault's engine is PostgreSQL alone \\(DVAULT_TEST_ENGINE=postgres\\) and the tests about Redis itself are skipped$`,
      ),
    );
    const report = JSON.parse(readFileSync(results, "utf8")) as { testResults: { assertionResults: { title: string; status: string }[] }[] };
    const statuses = Object.fromEntries((report.testResults[0]?.assertionResults ?? []).map((t) => [t.title, t.status]));
    expect(statuses).toEqual({
      "copies a database from the run's migrated template": "passed",
      "runs dvault on PostgreSQL alone when the run has no Redis": "passed",
      "answers under a prefix of the test's own": "skipped",
    });
    expect(readdirSync(tmp).filter((name) => name.startsWith("dvault-test-postgres-"))).toEqual([]);
  }, 300_000);
});

describe("npm run demo with a configured server that is down", () => {
  it("stops on a DATABASE_URL that does not answer, and starts no server of its own", async () => {
    const dir = path.join(root, "down-pg");
    const closed = await freePort();
    const run = await dvault({ DATABASE_URL: `postgresql://postgres@127.0.0.1:${closed}/dvault`, DVAULT_ENGINE: "postgres" }, ["demo", "--dir", dir]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`127.0.0.1:${closed}`);
    expect(existsSync(path.join(dir, DEMO_SERVER_DIR))).toBe(false);
  });

  it("stops on a REDIS_URL that does not answer, and does not run on PostgreSQL alone instead", async () => {
    const dir = path.join(root, "down-redis");
    const closed = await freePort();
    const run = await dvault({ DATABASE_URL: "postgresql://postgres@127.0.0.1:1/unused", REDIS_URL: `redis://127.0.0.1:${closed}` }, ["demo", "--dir", dir]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`Redis`);
    expect(run.stderr).toContain(`127.0.0.1:${closed}`);
    expect(run.stdout).not.toContain("servers: ");
  });
});

describe("PostgreSQL alone on the embedded server: a worker and commands from other processes", () => {
  const dataDir = path.join(root, "shared");
  let sim: Simulator;
  let env: Record<string, string>;
  let worker: ChildProcess | undefined;
  let port: number;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 31,
      clockMode: "real",
      startTime: new Date(),
      dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 0 },
      clients: [{ clientId: "3101", clientSecret: "sim-secret-3101", redirectUris: ["http://127.0.0.1:8788/callback"] }],
    });
    port = await freePort();
    env = {
      DVAULT_ENGINE: "postgres",
      DATABASE_URL: "embedded",
      DVAULT_DATA_DIR: dataDir,
      // Nothing answers here: a command that opened Redis would fail.
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: "3101",
      DVAULT_CLIENT_SECRET: "sim-secret-3101",
      DVAULT_SECRET_KEY: randomBytes(32).toString("hex"),
      DVAULT_ARCHIVE_DIR: path.join(root, "shared-archive"),
      DVAULT_HTTP_PORT: String(port),
      DVAULT_API_RATE_START: "1000",
      DVAULT_API_RATE_MAX: "1000",
      DVAULT_MIN_FREE_BYTES: "1MiB",
    };
  }, 60_000);

  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      worker.kill("SIGTERM");
      await new Promise((r) => worker?.once("close", r));
    }
    await sim?.close();
  });

  const serverFolder = () => readState(embeddedLayout(dataDir))?.folder ?? "";

  it("share one server while the worker runs, which stops when the worker, the last of them, ends", async () => {
    // README: migrate makes the server and its database; no other command makes one (a folder typed wrong).
    const migrated = await dvault(env, ["migrate"]);
    expect(migrated.code, migrated.stderr).toBe(0);
    const token = sim.issueUserToken({ clientId: "3101", userId: sim.truth.ownerId }).refresh_token;
    const login = await dvault(env, ["auth", "import", "--refresh-token", token]);
    expect(login.code, login.stderr).toBe(0);
    // The command's lease went with it, and with it the server.
    expect(runningServer(serverFolder())).toBeUndefined();

    const started = spawn(process.execPath, [BIN, "worker", "--http"], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    worker = started;
    let stderr = "";
    started.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    await expect
      .poll(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status ?? stderr, { timeout: 60_000, interval: 200 })
      .toBe(200);
    const running = runningServer(serverFolder());
    expect(running).toBeDefined();

    const sync = await dvault(env, ["sync", "--once"]);
    expect(sync.code, sync.stderr).toBe(0);
    const status = await dvault(env, ["status"]);
    expect(status.code, status.stderr).toBe(0);
    const download = await dvault(env, ["download", "--once"]);
    expect(download.code, download.stderr).toBe(0);
    expect(download.stdout).toMatch(/^done {2,}\d+/m);
    // The originals the sync found are stored, by this command or by the worker's downloads role.
    const archive = env.DVAULT_ARCHIVE_DIR ?? "";
    await expect
      .poll(() => (existsSync(archive) ? (readdirSync(archive, { recursive: true }) as string[]).filter((f) => /\.(png|jpe?g|webp|gif)$/.test(f)).length : 0), {
        timeout: 60_000,
        interval: 250,
      })
      .toBeGreaterThan(0);
    // Each command attached to the worker's server (same pid) and left it running for the worker.
    expect(runningServer(serverFolder())).toEqual(running);
    const db = await dvault(env, ["db", "status"]);
    expect(db.stdout).toContain(`leases:      processes ${started.pid} (the last to end stops the server)`);

    started.kill("SIGTERM");
    await new Promise((r) => started.once("close", r));
    expect(started.exitCode, stderr).toBe(0);
    expect(runningServer(serverFolder())).toBeUndefined();
  }, 240_000);
});
