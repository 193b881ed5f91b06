// Which failures the worker host treats as a PostgreSQL/Redis outage or a deadlock (retried soon, no attempt
// spent), and which stay ordinary failures: the API's and the CDN's own network errors never count.
import { EventEmitter } from "node:events";
import { RequestError } from "got";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { networkError } from "../../src/api/errors.ts";
import { TokenRefreshDeferredError } from "../../src/api/token-errors.ts";
import { DatabaseRefusesWritesError } from "../../src/db/account.repository.ts";
import { ServiceUnavailableError } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { outageOf } from "../../src/queue/outage.ts";
import { watchRedisLoss } from "../../src/queue/redis-loss-guard.ts";

const withFields = (message: string, fields: Record<string, unknown>, name = "Error") => Object.assign(new Error(message), fields, { name });

describe(outageOf.name, () => {
  it("recognises PostgreSQL going away, however the driver reports it", () => {
    const shapes = [
      withFields("terminating connection due to administrator command", { code: "57P01", severity: "FATAL" }, "error"),
      withFields("the database system is starting up", { code: "57P03", severity: "FATAL" }, "error"),
      new Error("Connection terminated unexpectedly"),
      withFields("connect ECONNREFUSED 127.0.0.1:5432", { code: "ECONNREFUSED", syscall: "connect" }),
      withFields("Can't reach database server at 127.0.0.1:5432", { code: "P1001" }, "PrismaClientKnownRequestError"),
      withFields("the database system is not yet accepting connections", { cause: { kind: "postgres", code: "57P03" } }, "DriverAdapterError"),
      withFields("closed", { cause: { kind: "ConnectionClosed" } }, "DriverAdapterError"),
      new ServiceUnavailableError("PostgreSQL", "postgresql://127.0.0.1:5432/x", "ECONNREFUSED", "start it"),
      new Error("page failed", { cause: new Error("Connection terminated unexpectedly") }),
    ];
    for (const err of shapes) expect(outageOf(err), err.message).toMatchObject({ kind: "outage" });
  });

  it("recognises Redis going away", () => {
    expect(outageOf(withFields("Reached the max retries per request limit", {}, "MaxRetriesPerRequestError"))).toMatchObject({
      kind: "outage",
      service: "Redis",
    });
    expect(outageOf(new Error("Connection is closed."))).toMatchObject({ kind: "outage", service: "Redis" });
  });

  it("calls a write a read-only or full server refused a refusal, through the errors that carry it", () => {
    const readOnly = withFields("cannot execute UPDATE in a read-only transaction", { code: "25006", severity: "ERROR" }, "error");
    const shapes = [
      readOnly,
      withFields("could not extend file: No space left on device", { code: "53100", severity: "ERROR" }, "error"),
      withFields("read-only", { cause: { kind: "postgres", code: "25006", originalCode: "25006" } }, "DriverAdapterError"),
      new TokenRefreshDeferredError("alice", readOnly.message, true, new DatabaseRefusesWritesError(readOnly.message, readOnly)),
    ];
    for (const err of shapes) expect(outageOf(err), err.message).toMatchObject({ kind: "refused", service: "PostgreSQL" });
    // A missing privilege is the install's to fix, not a spell that passes.
    const denied = withFields("permission denied for table accounts", { code: "42501", severity: "ERROR" }, "error");
    expect(outageOf(new DatabaseRefusesWritesError(denied.message, denied))).toBeUndefined();
  });

  it("calls a deadlock victim a conflict", () => {
    expect(outageOf(withFields("deadlock detected", { code: "40P01", severity: "ERROR" }, "error"))).toMatchObject({ kind: "conflict" });
    expect(outageOf(withFields("write conflict", { cause: { kind: "TransactionWriteConflict" } }, "DriverAdapterError"))).toMatchObject({ kind: "conflict" });
  });

  it("leaves the API's, the CDN's and the job's own failures alone", () => {
    const got = new RequestError("connect ECONNREFUSED 127.0.0.1:443", Object.assign(new Error("x"), { code: "ECONNREFUSED" }), {} as never);
    const others = [
      networkError({ operation: "gallery.folder", code: "ECONNRESET" }),
      got,
      new Error("wrapped", { cause: got }),
      withFields("duplicate key value violates unique constraint", { code: "23505", severity: "ERROR" }, "error"),
      new Error("unexpected end of JSON input"),
    ];
    for (const err of others) expect(outageOf(err), err.message).toBeUndefined();
  });
});

describe(watchRedisLoss.name, () => {
  it("repairs after a reconnect, rebuilds once per loss, and never rejects", async () => {
    const redis = new EventEmitter() as unknown as Redis;
    let intact = true;
    let rebuilds = 0;
    let failNext = false;
    let repairs = 0;
    const guard = watchRedisLoss({
      redis,
      isIntact: async () => intact,
      rebuild: async () => {
        if (failNext) {
          failNext = false;
          throw new Error("Connection is closed.");
        }
        rebuilds++;
        intact = true;
      },
      afterReconnect: async () => void repairs++,
      everyMs: 60_000,
      log: createLogger({ level: "silent" }),
    });
    await guard.check();
    expect(rebuilds).toBe(0);
    // A reconnect to a Redis that kept its data: the repair only, and only once.
    (redis as unknown as EventEmitter).emit("ready");
    await expect.poll(() => repairs).toBe(1);
    await guard.check();
    expect({ rebuilds, repairs }).toEqual({ rebuilds: 0, repairs: 1 });
    intact = false;
    // A reconnect alone triggers the check.
    (redis as unknown as EventEmitter).emit("ready");
    await expect.poll(() => rebuilds).toBe(1);
    // A failed rebuild is logged, and the next check tries again.
    intact = false;
    failNext = true;
    await expect(guard.check()).resolves.toBeUndefined();
    expect(rebuilds).toBe(1);
    await guard.check();
    expect(rebuilds).toBe(2);
    guard.stop();
    expect((redis as unknown as EventEmitter).listenerCount("ready")).toBe(0);
  });

  it("warns once while the store stays away, however many checks fail, and once more after it answered again", async () => {
    const lines: { level: number; msg: string }[] = [];
    let away = true;
    const guard = watchRedisLoss({
      isIntact: async () => {
        if (away) throw new Error("Connection is closed.");
        return true;
      },
      rebuild: async () => undefined,
      everyMs: 60_000,
      log: createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }),
    });
    try {
      // An hour away is 120 checks at the worker's 30 s; three stand for them.
      for (let i = 0; i < 3; i++) await guard.check();
      away = false;
      await guard.check();
      away = true;
      await guard.check();
      expect(lines.map((l) => l.level)).toEqual([40, 20, 20, 40]);
    } finally {
      guard.stop();
    }
  });

  it("warns of a check failing otherwise than the store being away at once, though the outage was warned of already", async () => {
    const lines: { level: number; msg: string; err?: { message?: string } }[] = [];
    let away = true;
    const guard = watchRedisLoss({
      isIntact: async () => {
        if (away) throw new Error("Connection is closed.");
        return false;
      },
      // Redis came back empty and the rebuild fails for a reason of its own: a person must see it.
      rebuild: async () => {
        throw new Error("permission denied for table downloads");
      },
      everyMs: 60_000,
      log: createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }),
    });
    try {
      await guard.check();
      await guard.check();
      away = false;
      await guard.check();
      await guard.check();
      const failed = lines.filter((l) => l.err);
      expect(failed.map((l) => [l.level, l.err?.message])).toEqual([
        [40, "Connection is closed."],
        [20, "Connection is closed."],
        [40, "permission denied for table downloads"],
        [20, "permission denied for table downloads"],
      ]);
    } finally {
      guard.stop();
    }
  });
});
