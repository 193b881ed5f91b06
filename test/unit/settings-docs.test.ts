// One schema, three copies (README "Configuration"): the settings file's template (.env.example), the README's
// settings table and `dvault config --help`'s list are rendered from src/config/catalogue.ts, and the check of
// `npm run check` (scripts/checks/settings-docs.ts) fails when a committed copy drifts from it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { settingsDrift } from "../../scripts/checks/settings-docs.ts";
import { EnvSchema } from "../../src/config.ts";
import { renderHelpList, renderReadmeTable, renderTemplate, SETTINGS } from "../../src/config/catalogue.ts";
import { readSchedule } from "../../src/config/schedules.ts";

const REPO = path.resolve(import.meta.dirname, "..", "..");
const committed = { envExample: readFileSync(path.join(REPO, ".env.example"), "utf8"), readme: readFileSync(path.join(REPO, "README.md"), "utf8") };

describe(settingsDrift.name, () => {
  it("finds nothing in the committed .env.example and README", () => {
    expect(settingsDrift(committed)).toEqual([]);
  });

  it("fails on a default changed by hand in .env.example, a row edited in the README, or a table without its markers", () => {
    const envExample = committed.envExample.replace("# DVAULT_HTTP_PORT=8787", "# DVAULT_HTTP_PORT=8080");
    expect(envExample).not.toBe(committed.envExample);
    expect(settingsDrift({ ...committed, envExample })).toEqual([".env.example differs from dvault config --template"]);
    const readme = committed.readme.replace(/(\| `DVAULT_HTTP_PORT` +\| )`8787`/, "$1`8080`");
    expect(readme).not.toBe(committed.readme);
    expect(settingsDrift({ ...committed, readme })).toEqual(["README.md's settings table differs from the settings' schema"]);
    const unmarked = committed.readme.replace(/<!-- end of the settings table -->/, "");
    expect(settingsDrift({ ...committed, readme: unmarked })[0]).toMatch(/lacks the settings table's markers/);
  });
});

describe("the settings' catalogue", () => {
  it("documents every setting of the schema once, in the template, the README table and the help's list", () => {
    const names = Object.keys(EnvSchema.shape).sort();
    expect(SETTINGS.map((s) => s.name).sort()).toEqual(names);
    const template = renderTemplate();
    const table = renderReadmeTable();
    const help = renderHelpList();
    for (const name of names) {
      expect(template).toMatch(new RegExp(`^# ${name}=`, "m"));
      expect(table).toMatch(new RegExp(`^\\| \`${name}\` +\\|`, "m"));
      expect(help).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });
});

describe("the README's settings table", () => {
  it("is padded as Biome formats a Markdown table, so npm run lint and npm run check agree on it", () => {
    const lines = renderReadmeTable().split("\n");
    expect(new Set(lines.map((l) => l.length)).size).toBe(1);
    expect(lines[1]).toMatch(/^\| -+ \| -+ \| -+ \|$/);
  });
});

describe("the settings file's template", () => {
  it('has a line for every variable docker-compose.yml reads from .env (README "Running with Docker": cp .env.example .env)', () => {
    const compose = readFileSync(path.join(REPO, "docker-compose.yml"), "utf8");
    const names = [...new Set([...compose.matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((m) => m[1] ?? ""))];
    expect(names.length).toBeGreaterThan(5);
    const template = renderTemplate();
    expect(names.filter((name) => !new RegExp(`^# ${name}=`, "m").test(template))).toEqual([]);
  });
});

describe("the schedules' descriptions", () => {
  it("say what the static source syncs, as the README's sources table does: the countries and the policy texts", () => {
    // src/sync/sources/static.ts walks countries, privacy, submission and tos; no badges, no categories.
    const text = SETTINGS.find((s) => s.name === "DVAULT_SCHEDULE_STATIC")?.text ?? "";
    expect(text).toMatch(/countries/);
    expect(text).toMatch(/policy texts/);
    expect(committed.readme).toMatch(/\| `static` +\| countries and the policy texts/);
  });
});

describe(readSchedule.name, () => {
  it("reads an interval or a cron for every account, and an account's own after ';'", () => {
    const read = readSchedule("6h; Alice=30 7 * * *; my bob = 10min", { every: 1 }, "Europe/Berlin");
    expect(read).toEqual({
      all: { every: 6 * 3_600_000 },
      accounts: new Map([
        ["alice", { pattern: "30 7 * * *", tz: "Europe/Berlin" }],
        ["my bob", { every: 600_000 }],
      ]),
    });
    expect(readSchedule(undefined, { every: 5 }, "UTC")).toEqual({ all: { every: 5 }, accounts: new Map() });
    expect(readSchedule("30s", { every: 1 }, "UTC")).toMatch(/shorter than 1min/);
    // A next run that is no date would throw in each run's bookkeeping, after the worker started.
    expect(readSchedule("99999999999d", { every: 1 }, "UTC")).toMatch(/longer than 366d/);
    expect(readSchedule("366d", { every: 1 }, "UTC")).toEqual({ all: { every: 366 * 86_400_000 }, accounts: new Map() });
    expect(readSchedule("0 * * *", { every: 1 }, "UTC")).toMatch(/neither an interval/);
    expect(readSchedule("0 0 30 2 *", { every: 1 }, "UTC")).toMatch(/not a cron expression/);
    // Read by cron-parser, yet no date has it: its next run would throw in the worker instead.
    expect(readSchedule("0 0 31 2,4 *", { every: 1 }, "UTC")).toMatch(/not a cron expression that a date satisfies/);
    expect(readSchedule("6h; alice=0 0 31 2,4,6,9,11 *", { every: 1 }, "UTC")).toMatch(/not a cron expression that a date satisfies/);
  });
});
