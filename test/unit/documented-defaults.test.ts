// What the README and .env.example say a setting or a schedule is when nobody sets it, held to what the code
// does: the defaults of the configuration table (README "Configuration", with DVAULT_HTTP_TOKEN's least length),
// the sources' schedules (README "What gets archived, and where") and their weekly full sweep, and .env.example
// naming every variable dvault reads without changing a default when copied as it is (docs/RELIABILITY.md#promises).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../../src/config.ts";
import type { SourceState } from "../../src/db/sync-state.repository.ts";
import { isSweepDue } from "../../src/sync/run-source.ts";
import { SOURCE_NAMES } from "../../src/config-defaults.ts";
import { DEFAULT_EVERY_MS } from "../../src/sync/source.ts";

const REPO = path.resolve(import.meta.dirname, "..", "..");
const README = readFileSync(path.join(REPO, "README.md"), "utf8");
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The rows of the README table whose header row starts with `firstHeader`: each row's cells, trimmed. */
function readmeTable(firstHeader: string): string[][] {
  const lines = README.split("\n");
  const start = lines.findIndex((l) => new RegExp(`^\\|\\s*${firstHeader}\\s*\\|`).test(l));
  expect(start, `a README table headed "${firstHeader}"`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** A config without what only says whether a variable was set (the prefix's, which decides an older install's). */
function settled(config: Config): Omit<Config, "redisPrefixSet"> {
  const { redisPrefixSet: _set, ...rest } = config;
  return rest;
}

/** The variables dvault reads: the keys of the environment schemas (src/config.ts and src/config/*.ts). */
function variablesRead(): string[] {
  const files = ["src/config.ts", ...readdirSync(path.join(REPO, "src/config")).map((f) => `src/config/${f}`)];
  const names = new Set<string>();
  for (const file of files) {
    for (const m of readFileSync(path.join(REPO, file), "utf8").matchAll(/^\s+((?:DVAULT_[A-Z0-9_]+|LOG_LEVEL|DATABASE_URL|REDIS_URL)):/gm)) names.add(m[1]!);
  }
  return [...names].sort();
}

describe("README's configuration table", () => {
  const HOME = { HOME: "/home/alice" };
  const unset = settled(loadConfig(HOME, "/srv/dvault"));

  it("gives each variable the default dvault applies when it is unset", () => {
    const rows = readmeTable("variable").map(([name, value]) => ({ name: name!.replace(/`/g, ""), value: value! }));
    const literal = rows.filter((r) => /^`[^`]+`$/.test(r.value));
    // Most rows give one value; "—" means no default, and two rows say more than a value (below).
    expect(literal.length).toBeGreaterThan(30);
    for (const { name, value } of literal) {
      const written = value.slice(1, -1);
      expect({ name, config: settled(loadConfig({ ...HOME, [name]: written }, "/srv/dvault")) }).toEqual({ name, config: unset });
    }
    const worded = rows.filter((r) => !literal.includes(r) && r.value !== "—").map((r) => r.name);
    expect(worded.sort()).toEqual(["DVAULT_CONFIG_DIR", "DVAULT_S3_FORCE_PATH_STYLE", "DVAULT_SMTP_PORT"]);
  });

  it("DVAULT_CONFIG_DIR: $XDG_CONFIG_HOME/dvault or ~/.config/dvault", () => {
    expect(unset.configDir).toBe("/home/alice/.config/dvault");
    expect(loadConfig({ ...HOME, XDG_CONFIG_HOME: "/xdg" }).configDir).toBe("/xdg/dvault");
  });

  it("DVAULT_HTTP_TOKEN: at least 16 characters", () => {
    expect(() => loadConfig({ DVAULT_HTTP_TOKEN: "x".repeat(15) })).toThrow(/DVAULT_HTTP_TOKEN expects at least 16 characters/);
    expect(loadConfig({ DVAULT_HTTP_TOKEN: "x".repeat(16) }).httpToken).toBe("x".repeat(16));
  });

  it("DVAULT_SMTP_PORT: 587, or 465 when secure", () => {
    const smtp = { DVAULT_DIGEST_CHANNELS: "smtp", DVAULT_SMTP_HOST: "mail.example", DVAULT_SMTP_FROM: "d@example.org", DVAULT_SMTP_TO: "me@example.org" };
    expect(loadConfig(smtp).digest.smtp?.port).toBe(587);
    expect(loadConfig({ ...smtp, DVAULT_SMTP_SECURE: "true" }).digest.smtp?.port).toBe(465);
  });
});

describe(".env.example", () => {
  const example = readFileSync(path.join(REPO, ".env.example"), "utf8");

  it("names every variable dvault reads", () => {
    const read = variablesRead();
    expect(read.length).toBeGreaterThan(50);
    expect(read.filter((name) => !new RegExp(`^#? ?${name}=`, "m").test(example))).toEqual([]);
  });

  it("changes no default when copied as it is, nor with every setting uncommented", () => {
    expect(Object.keys(parseEnv(example))).toEqual([]);
    const set = parseEnv(example.replace(/^# ([A-Z][A-Z0-9_]*=)/gm, "$1"));
    expect(Object.keys(set).length).toBeGreaterThan(50);
    expect(settled(loadConfig({ HOME: "/h", ...set }, "/srv"))).toEqual(settled(loadConfig({ HOME: "/h" }, "/srv")));
  });
});

describe("README's table of sources", () => {
  it("schedules each source as often as its default schedule column says", () => {
    const every = (words: string): number => {
      if (words === "daily") return DAY;
      if (words === "weekly") return 7 * DAY;
      const m = /^(\d+) (min|h)$/.exec(words);
      if (!m) throw new Error(`a schedule the test cannot read: ${words}`);
      return Number(m[1]) * (m[2] === "h" ? HOUR : MINUTE);
    };
    const documented = Object.fromEntries(readmeTable("source").map((cells) => [cells[0]!.replace(/`/g, ""), every(cells.at(-1)!)]));
    expect(documented).toEqual({ ...DEFAULT_EVERY_MS });
    expect(Object.keys(documented).sort()).toEqual([...SOURCE_NAMES].sort());
  });

  it("sweeps each source in full on its first run, then weekly, shifted by up to a day so they do not all sweep at once", () => {
    const now = Date.UTC(2026, 10, 23, 12);
    const swept = (daysAgo: number): SourceState => ({ lastCompleteSweepAt: new Date(now - daysAgo * DAY) }) as SourceState;
    const firstDue: number[] = [];
    for (const source of SOURCE_NAMES) {
      const req = { accountId: 1, source };
      expect(isSweepDue(null, req, now)).toBe(true);
      expect(isSweepDue(swept(6), req, now)).toBe(false);
      expect(isSweepDue(swept(7), req, now)).toBe(true);
      let hours = 6 * 24;
      while (!isSweepDue(swept(hours / 24), req, now)) hours++;
      firstDue.push(hours);
    }
    expect(new Set(firstDue).size).toBeGreaterThan(SOURCE_NAMES.length / 2);
  });
});
