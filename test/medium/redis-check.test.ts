// The one-line check of a Redis server every command on the Redis engine makes first (src/queue/redis.ts checkRedis):
// a server that does not answer is a ServiceUnavailableError (exit 3), and the check leaves nothing behind that would
// keep the process alive: a command stopping on an unreachable Redis exits at once, not when a timer of ioredis's
// own (2 s, waiting for a socket that had already closed) runs out. What is left is read in a process of its own
// (redis-check-child.ts), where nothing else runs. The same timer met a connection whose server went away mid-run
// (redis-close-child.ts).
import { execFile, spawn } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { EXIT_UNAVAILABLE, ServiceUnavailableError } from "../../src/errors.ts";
import { freePort } from "../../src/free-port.ts";
import { checkRedis, redisAnswers } from "../../src/queue/redis.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";

it("refuses a Redis that does not answer in one line, exit 3, and leaves nothing holding the process", async () => {
  // A port nothing listens on: taken from the kernel and closed again.
  const url = `redis://127.0.0.1:${await freePort()}`;
  const failed = await checkRedis(url).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failed).toBeInstanceOf(ServiceUnavailableError);
  expect((failed as ServiceUnavailableError).exitCode).toBe(EXIT_UNAVAILABLE);
  expect((failed as Error).message).toMatch(/^cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)\./);

  const child = path.resolve("test/medium/redis-check-child.ts");
  // Without its cache on disk: on Node 22 and 24 tsx compiles the child's modules on the main thread and writes each
  // to its cache after, so a first run (a fresh /tmp) left those writes (FSReqPromise) among what the check left.
  const env = { ...process.env, TSX_DISABLE_CACHE: "1" };
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", child, url], { env });
  expect(JSON.parse(stdout)).toEqual({ ended: "ServiceUnavailableError", left: [] });
}, 30_000);

// A Redis that goes away while a command runs: the command's end closes (closeRedis) a connection whose socket has
// already closed. ioredis's own disconnect timer (2 s) waited for that close all the same, and kept the process alive;
// createRedis gives it 200 ms.
itNeedingRedis(
  "lets a process whose Redis went away exit within 0.2 s of closing its connection",
  async () => {
    const port = await freePort();
    const server = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    const failed = new Promise<never>((_, reject) => server.once("error", reject));
    failed.catch(() => undefined);
    try {
      await Promise.race([failed, expect.poll(() => redisAnswers(`redis://127.0.0.1:${port}`), { timeout: 10_000, interval: 50 }).toBe(true)]);
      const child = path.resolve("test/medium/redis-close-child.ts");
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", child, `redis://127.0.0.1:${port}`, String(server.pid)]);
      const { status, exitMs } = JSON.parse(stdout) as { status: string; exitMs: number };
      expect(status).not.toBe("ready"); // the server was gone when the connection was closed
      // The connection's own timer is 200 ms (src/queue/redis.ts); ioredis's default, 2 000, fails this.
      expect(exitMs).toBeLessThan(1_000);
    } finally {
      server.kill("SIGKILL");
    }
  },
  30_000,
);

// A server that answers and refuses the URL's credentials is running: "cannot reach Redis … Start it" sent the person
// to start a server already there, and `dvault init` (redisAnswers) took it for no Redis at all and chose PostgreSQL alone.
itNeedingRedis(
  "says a Redis that wants a password, or refuses the one given, refused the URL's credentials: exit 1, and it answers",
  async () => {
    const port = await freePort();
    const server = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--requirepass", "sekrit"], {
      stdio: "ignore",
    });
    try {
      const noPassword = `redis://127.0.0.1:${port}`;
      await expect.poll(() => checkRedis(noPassword).catch((err: Error) => err.message), { timeout: 10_000, interval: 50 }).toMatch(/NOAUTH/);
      const [unasked, wrong] = await Promise.all([noPassword, `redis://:wrong@127.0.0.1:${port}`].map((url) => checkRedis(url).catch((err: unknown) => err)));
      expect(unasked).toMatchObject({
        exitCode: 1,
        message: `Redis at ${noPassword} asks for a password REDIS_URL does not give (NOAUTH): write it in (redis://:<password>@host:port)`,
      });
      expect(wrong).toMatchObject({
        exitCode: 1,
        message: `Redis at redis://:***@127.0.0.1:${port} refused REDIS_URL's user and password (WRONGPASS): correct them`,
      });
      expect(await redisAnswers(noPassword)).toBe(true);
      await expect(checkRedis(`redis://:sekrit@127.0.0.1:${port}`)).resolves.toBeUndefined();
    } finally {
      server.kill("SIGKILL");
    }
  },
  30_000,
);
