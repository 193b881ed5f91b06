import { describe, expect, it } from "vitest";
import { ConfigError, EnvSchema, loadConfig, parseDuration, parseSecretKey } from "../../src/config.ts";

describe(loadConfig.name, () => {
  it("applies documented defaults when nothing is set", () => {
    const config = loadConfig({ HOME: "/home/alice" }, "/srv/dvault");
    expect(config.databaseUrl).toBe("postgresql://postgres@127.0.0.1:5432/dvault");
    expect(config.redisUrl).toBe("redis://127.0.0.1:6379");
    expect(config.apiBase).toBe("https://www.deviantart.com");
    expect(config.archiveDir).toBe("/srv/dvault/archive");
    expect(config.configDir).toBe("/home/alice/.config/dvault");
    expect(config.secretKey).toBeUndefined();
    expect(config.logLevel).toBe("info");
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads the --once runs' patience as durations, with their defaults, and refuses one it cannot read", () => {
    expect(loadConfig({}).runPatience).toEqual({ itemMs: 300_000, runMs: 600_000, baseMs: 2000 });
    const config = loadConfig({ DVAULT_RUN_ITEM_PATIENCE: "90s", DVAULT_RUN_PATIENCE: "1h", DVAULT_RUN_RETRY_DELAY: "250ms" });
    expect(config.runPatience).toEqual({ itemMs: 90_000, runMs: 3_600_000, baseMs: 250 });
    expect([parseDuration("30"), parseDuration("1.5min"), parseDuration("soon"), parseDuration("5 days")]).toEqual([30_000, 90_000, undefined, undefined]);
    expect(() => loadConfig({ DVAULT_RUN_PATIENCE: "forever" })).toThrow(/DVAULT_RUN_PATIENCE expects a duration such as 500ms, 30s, 5min or 1h/);
  });

  it("takes a blank variable as unset, as an empty one and as dvault config shows it: never as the number 0", () => {
    // z.coerce.number() reads " " as 0: a weekly allowance of none, the dashboard on a random port, a refusal of a
    // value no one gave, while dvault config said each was at its default.
    const blank = {
      DVAULT_DOWNLOAD_QUOTA: " ",
      DVAULT_HTTP_PORT: "\t",
      DVAULT_DOWNLOAD_CONCURRENCY: " ",
      DVAULT_SYNC_CONCURRENCY: " ",
      DVAULT_HTTP_CONCURRENCY: " ",
    };
    expect(loadConfig(blank)).toMatchObject({ downloadQuota: 10, httpPort: 8787, downloadConcurrency: 4, syncConcurrency: 2 });
    expect(loadConfig(blank).httpLoad).toEqual(loadConfig({}).httpLoad);
  });

  it("says what every setting expects of a value out of range or not a number, never in zod's own words", () => {
    // "DVAULT_DOWNLOAD_CONCURRENCY Too small: expected number to be >=1" named no range, where 65 said "1 to 64".
    const zodWords = /Too small|Too big|Invalid input|expected (number|string|int)/;
    const found: string[] = [];
    for (const name of Object.keys(EnvSchema.shape)) {
      for (const value of ["abc", "0", "-1", "1e9", "1.5"]) {
        try {
          loadConfig({ [name]: value });
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          if (zodWords.test(err.message)) found.push(`${name}=${value}: ${err.problems.join("; ")}`);
        }
      }
    }
    expect(found).toEqual([]);
    expect(() => loadConfig({ DVAULT_DOWNLOAD_CONCURRENCY: "0" })).toThrow(/DVAULT_DOWNLOAD_CONCURRENCY expects 1 to 64 parallel transfers/);
  });

  it("honours XDG_CONFIG_HOME and trims a trailing slash from the API base", () => {
    const config = loadConfig({ XDG_CONFIG_HOME: "/cfg", DVAULT_API_BASE: "http://127.0.0.1:9000/" });
    expect(config.configDir).toBe("/cfg/dvault");
    expect(config.apiBase).toBe("http://127.0.0.1:9000");
  });

  it("lists every bad variable in one error, saying what each expects", () => {
    let caught: unknown;
    try {
      loadConfig({
        DATABASE_URL: "mysql://x",
        REDIS_URL: "not a url",
        DVAULT_CLIENT_ID: "abc",
        DVAULT_SECRET_KEY: "short",
        LOG_LEVEL: "loud",
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const err = caught as ConfigError;
    expect(err.problems.map((p) => p.split(" ")[0])).toEqual(["DATABASE_URL", "REDIS_URL", "DVAULT_CLIENT_ID", "DVAULT_SECRET_KEY", "LOG_LEVEL"]);
    expect(err.message).toContain("expects a PostgreSQL URL");
    expect(err.message).toContain("openssl rand -hex 32");
    expect(err.message).not.toContain("\n");
  });

  it("says what a number setting was given, not zod's raw words", () => {
    expect(() => loadConfig({ DVAULT_DOWNLOAD_QUOTA: "ten", DVAULT_DOWNLOAD_CONCURRENCY: "2.5" })).toThrow(
      'invalid configuration: DVAULT_DOWNLOAD_QUOTA expects a number, not "ten"; DVAULT_DOWNLOAD_CONCURRENCY expects a whole number, not "2.5". Fix',
    );
    expect(() => loadConfig({ DVAULT_HTTP_PORT: "x" })).not.toThrow(/NaN|Invalid input/);
  });

  it("treats empty strings as unset", () => {
    const config = loadConfig({ DATABASE_URL: "", LOG_LEVEL: "", DVAULT_CLIENT_ID: "" });
    expect(config.databaseUrl).toContain("/dvault");
    expect(config.clientId).toBeUndefined();
  });
});

describe("worker roles and the Redis prefix", () => {
  it("runs every job role by default, reads a list of roles in any order, and names an unknown role in one line", () => {
    expect(loadConfig({}).workerRoles).toEqual(["sync", "downloads", "digest", "maintenance"]);
    expect(loadConfig({ DVAULT_WORKER_ROLES: " HTTP, sync " }).workerRoles).toEqual(["sync", "http"]);
    expect(loadConfig({ DVAULT_SYNC_CONCURRENCY: "3" }).syncConcurrency).toBe(3);
    expect(() => loadConfig({ DVAULT_WORKER_ROLES: "sync,download" })).toThrow(
      'invalid configuration: DVAULT_WORKER_ROLES has no role "download": it expects a comma-separated list of sync, downloads, digest, maintenance, http. Fix',
    );
    expect(() => loadConfig({ DVAULT_WORKER_ROLES: " , " })).toThrow(/DVAULT_WORKER_ROLES expects a comma-separated list/);
  });

  it("defaults to the hash tag {dvault} and accepts a prefix with or without one", () => {
    expect(loadConfig({})).toMatchObject({ redisPrefix: "{dvault}", redisPrefixSet: false });
    expect(loadConfig({ DVAULT_REDIS_PREFIX: "{home}:dv" })).toMatchObject({ redisPrefix: "{home}:dv", redisPrefixSet: true });
    expect(loadConfig({ DVAULT_REDIS_PREFIX: "dvault" })).toMatchObject({ redisPrefix: "dvault", redisPrefixSet: true });
    expect(() => loadConfig({ DVAULT_REDIS_PREFIX: "a{b}" })).toThrow(/DVAULT_REDIS_PREFIX expects letters/);
  });
});

describe("the API pace settings", () => {
  it("default to a start of 2/s within 0.1..100/s and take fractions", () => {
    expect(loadConfig({}).apiRate).toEqual({ start: 2, min: 0.1, max: 100 });
    expect(loadConfig({ DVAULT_API_RATE_START: "0.5", DVAULT_API_RATE_MIN: "0.25", DVAULT_API_RATE_MAX: "4" }).apiRate).toEqual({
      start: 0.5,
      min: 0.25,
      max: 4,
    });
  });

  it("refuse a rate that is not a positive number, and bounds that contradict each other, in one line", () => {
    expect(() => loadConfig({ DVAULT_API_RATE_MAX: "0" })).toThrow(/DVAULT_API_RATE_MAX expects requests per second, a positive number/);
    expect(() => loadConfig({ DVAULT_API_RATE_MIN: "5", DVAULT_API_RATE_MAX: "1" })).toThrow(/DVAULT_API_RATE_MIN is above DVAULT_API_RATE_MAX/);
    expect(() => loadConfig({ DVAULT_API_RATE_START: "500" })).toThrow(/DVAULT_API_RATE_START lies outside/);
  });
});

describe(parseSecretKey.name, () => {
  it("accepts 64 hex digits and 32-byte base64, rejects anything else", () => {
    const hex = "ab".repeat(32);
    expect(parseSecretKey(hex)?.length).toBe(32);
    expect(parseSecretKey(Buffer.alloc(32, 7).toString("base64"))?.equals(Buffer.alloc(32, 7))).toBe(true);
    expect(parseSecretKey("ab".repeat(31))).toBeUndefined();
    expect(parseSecretKey(Buffer.alloc(16).toString("base64"))).toBeUndefined();
  });
});
