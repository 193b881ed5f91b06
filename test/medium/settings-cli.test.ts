// Settings in one file, as a person meets them at the command line (README "Configuration"): ./.env or --config
// under the environment under a flag, `dvault config` saying where each value came from with secrets masked, and
// the values that cannot work refused at start in one line, before anything runs.
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectRun, type CliRun } from "../helpers/dvault-cli.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";

const BIN = path.resolve("bin/dvault.js");
const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-settings-"));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function dvault(args: readonly string[], env: Record<string, string> = {}, cwd = dir): Promise<CliRun> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child, Date.now());
}

type Shown = { file: string | null; settings: { name: string; value: string | null; from: string }[] };
const shown = (run: CliRun, name: string) => (JSON.parse(run.stdout) as Shown).settings.find((s) => s.name === name);

/** One line on stderr, no stack, and the exit code of a UserError (1). */
function refusedInOneLine(run: CliRun, says: RegExp): void {
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(says);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  expect(run.stderr).not.toMatch(/unexpected error/);
  expect(
    run.stderr
      .trim()
      .split("\n")
      .filter((l) => !/run with --help/.test(l)),
  ).toHaveLength(1);
}

describe("dvault config", () => {
  it("shows the effective value of each setting and where it came from: ./.env, the environment over it, a flag over both", async () => {
    writeFileSync(
      path.join(dir, ".env"),
      [
        "DVAULT_HTTP_PORT=9000",
        "DVAULT_DOWNLOAD_QUOTA=150",
        'DVAULT_SCHEDULE_GALLERY="0 * * * *"',
        "DVAULT_HTTP_TOKEN=0123456789abcdef0123",
        "DVAULT_ARCHIVE_DIR=/from/file",
        "DVAULT_NTFY_URL=https://ntfy.sh/dvault-topic-nobody-guesses",
        "DVAULT_WEBHOOK_URL=https://hooks.zapier.com/hooks/catch/123456/webhook-key-nobody-guesses/?auth=query-nobody-guesses",
      ].join("\n"),
    );
    const run = await dvault(["--archive-dir", "/from/flag", "config", "--json"], { DVAULT_HTTP_PORT: "9100" });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const file = path.join(dir, ".env");
    expect(JSON.parse(run.stdout).file).toBe(file);
    expect(shown(run, "DVAULT_HTTP_PORT")).toMatchObject({ value: "9100", from: "environment" });
    expect(shown(run, "DVAULT_DOWNLOAD_QUOTA")).toMatchObject({ value: "150", from: `file ${file}` });
    expect(shown(run, "DVAULT_SCHEDULE_GALLERY")).toMatchObject({ value: "0 * * * *", from: `file ${file}` });
    expect(shown(run, "DVAULT_ARCHIVE_DIR")).toMatchObject({ value: "/from/flag", from: "flag --archive-dir" });
    expect(shown(run, "DVAULT_HTTP_HOST")).toMatchObject({ value: "127.0.0.1", from: "default" });
    expect(shown(run, "DVAULT_HTTP_TOKEN")).toMatchObject({ value: "***" });
    expect(run.stdout).not.toContain("0123456789abcdef0123");
    // An ntfy topic is the password of a topic on a public server: its server shown, its name not.
    expect(shown(run, "DVAULT_NTFY_URL")).toMatchObject({ value: "https://ntfy.sh/***", from: `file ${file}` });
    // So is a webhook's path (and its query): its origin shown, the rest not.
    expect(shown(run, "DVAULT_WEBHOOK_URL")).toMatchObject({ value: "https://hooks.zapier.com/***", from: `file ${file}` });
    expect(run.stdout).not.toContain("nobody-guesses");
  });

  it("reads the file --config names instead, and refuses one that does not exist in one line", async () => {
    const other = path.join(dir, "other.env");
    writeFileSync(other, "DVAULT_DOWNLOAD_QUOTA=300\nDVAULT_DOWNLOAD_CONCURRENCY=8\n");
    const [named, missing, gone, help, blank] = await Promise.all([
      dvault(["config", "--json", "--config", other], { DVAULT_DOWNLOAD_CONCURRENCY: "", DVAULT_DOWNLOAD_QUOTA: " " }),
      dvault(["--config", path.join(dir, "missing.env"), "config"]),
      dvault(["config"], { DVAULT_CONFIG: path.join(dir, "gone.env") }),
      dvault(["config", "--help"]),
      dvault(["config"], { DVAULT_CONFIG: " " }),
    ]);
    // A blank DVAULT_CONFIG names no file, as an empty one: not a file called " ".
    expect(blank.stderr).toBe("");
    expect(blank.code).toBe(0);
    expect(help.stdout).toMatch(/DATABASE_URL DVAULT_ENGINE DVAULT_DATA_DIR REDIS_URL/);
    expect(help.stdout).toContain("DVAULT_SCHEDULE_GALLERY");
    expect(named.stderr).toBe("");
    // An empty or blank variable is unset (docker compose's `X: ${X:-}`): the file's value stands, shown and in use
    // (a blank one took the environment's place and was read as 0, while this said "10, default").
    expect(shown(named, "DVAULT_DOWNLOAD_QUOTA")).toMatchObject({ value: "300", from: `file ${other}` });
    expect(shown(named, "DVAULT_DOWNLOAD_CONCURRENCY")).toMatchObject({ value: "8", from: `file ${other}` });
    refusedInOneLine(missing, /settings file .*missing\.env \(named by --config\) does not exist/);
    refusedInOneLine(gone, /named by DVAULT_CONFIG\) does not exist/);
  });

  it("refuses an option given an empty value, which was taken as not given: ./archive over the environment's folder, ./.env, every account", async () => {
    // A script's `--archive-dir "$ARCHIVE"` with ARCHIVE unset: the environment's DVAULT_ARCHIVE_DIR gave way to ./archive.
    // Each is refused before anything opens (no database or Redis is named here).
    const [archive, config, account, out] = await Promise.all([
      dvault(["--archive-dir", "", "config"], { DVAULT_ARCHIVE_DIR: "/srv/archive" }),
      dvault(["--config=", "config"]),
      dvault(["sync", "--once", "--account", ""]),
      dvault(["digest", "--preview", "--out", " "]),
    ]);
    const line = (option: string) =>
      new RegExp(`^dvault: ${option} was given an empty value \\(a variable left unset\\?\\): give one, or leave the option out\n$`);
    refusedInOneLine(archive, line("--archive-dir"));
    refusedInOneLine(config, line("--config"));
    refusedInOneLine(account, line("--account"));
    refusedInOneLine(out, line("--out"));
    // An argument too: `import gallery-dl "$DIR"` with DIR unset read the folder it ran in.
    refusedInOneLine(await dvault(["import", "gallery-dl", ""]), /^dvault: <dir> was given an empty value \(a variable left unset\?\): give one\n$/);
  });
});

describe("values that cannot work, refused at start", () => {
  const empty = mkdtempSync(path.join(dir, "empty-"));
  // Started together (each child loads the command's modules): each test reads its own.
  const runs: Record<string, Promise<CliRun>> = {};
  beforeAll(() => {
    const redis99 = TEST_REDIS_URL.replace(/\/\d*$/, "").replace(/\/?$/, "/99");
    runs.redis = dvault(["worker"], { REDIS_URL: redis99 }, empty);
    runs.port = dvault(["worker", "--http-port", "99999"], { REDIS_URL: TEST_REDIS_URL }, empty);
    runs.values = dvault(
      ["config"],
      { DVAULT_HTTP_PORT: "70000", DVAULT_RUN_PATIENCE: "soon", DVAULT_SCHEDULE_GALLERY: "61 * * * *", DVAULT_SCHEDULE_TZ: "Mars/Olympus" },
      empty,
    );
    runs.cron = dvault(["config"], { DVAULT_SCHEDULE_GALLERY: "6h; alice=61 * * * *" }, empty);
  });

  itNeedingRedis("a REDIS_URL naming a database the server does not have", async () => {
    const run = await runs.redis!;
    refusedInOneLine(run, /REDIS_URL names database 99, which the Redis server at .* does not have .*: use 0 to \d+/);
  });

  it("--http-port 99999, before the worker starts", async () => {
    const run = await runs.port!;
    refusedInOneLine(run, /--http-port.*expects a port from 0 to 65535/);
  });

  it("a port, a duration, a cron expression or a time zone that does not read", async () => {
    const run = await runs.values!;
    refusedInOneLine(run, /^dvault: invalid configuration: /);
    expect(run.stderr).toMatch(/DVAULT_HTTP_PORT expects a port from 0 to 65535/);
    expect(run.stderr).toMatch(/DVAULT_RUN_PATIENCE expects a duration such as 500ms/);
    expect(run.stderr).toMatch(/DVAULT_SCHEDULE_TZ expects an IANA time zone/);
    const cron = await runs.cron!;
    refusedInOneLine(cron, /DVAULT_SCHEDULE_GALLERY: "61 \* \* \* \*" is not a cron expression/);
  });
});
