// The CLI's output layer (src/cli/output/): tables padded before they are painted, the log level each global
// flag gives, a log entry as the plain line a pipe shows, and durations as a person reads them.
import pc from "picocolors";
import { afterEach, describe, expect, it } from "vitest";
import { setGlobalOutput } from "../../src/cli/output/global.ts";
import { plainLogLine } from "../../src/cli/output/log-lines.ts";
import { cliLogLevel } from "../../src/cli/output/mode.ts";
import { formatDuration } from "../../src/cli/output/progress.ts";
import { formatTable, paintOutcome } from "../../src/cli/output/table.ts";

const plain = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "");

describe(formatTable.name, () => {
  const header = ["account", "user", "note"];
  const rows = [
    ["me", "someone-long", ""],
    ["other", "x", "client token"],
  ];

  it("pads columns to their widest cell, with a header and no trailing spaces", () => {
    expect(formatTable(header, rows)).toBe(["account  user          note", "me       someone-long", "other    x             client token"].join("\n"));
  });

  it("paints only the text: the same columns with colour as without", () => {
    const colors = pc.createColors(true);
    const painted = formatTable(header, rows, { colors, paint: (cell, _r, column) => (column === 1 ? colors.green(cell) : cell) });
    expect(painted).toContain("\u001b[1maccount\u001b[22m");
    expect(painted).toContain("\u001b[32msomeone-long\u001b[39m");
    expect(plain(painted)).toBe(formatTable(header, rows));
  });

  it("colours outcomes by what they mean", () => {
    const colors = pc.createColors(true);
    expect(paintOutcome(colors, "ok (full)")).toBe(colors.green("ok (full)"));
    expect(paintOutcome(colors, "FAILED")).toBe(colors.red("FAILED"));
    expect(paintOutcome(colors, "degraded")).toBe(colors.yellow("degraded"));
  });
});

describe(cliLogLevel.name, () => {
  afterEach(() => setGlobalOutput({}));

  it("is warn by default whatever LOG_LEVEL's default info says, info with -v and error with --quiet", () => {
    // No terminal argument: a pipe (cron) and a terminal get the same level (issue #26).
    expect(cliLogLevel("info")).toBe("warn");
    expect(cliLogLevel("warn")).toBe("warn");
    setGlobalOutput({ verbose: true });
    expect(cliLogLevel("info")).toBe("info");
    expect(cliLogLevel("warn")).toBe("info");
    setGlobalOutput({ quiet: true });
    expect(cliLogLevel("info")).toBe("error");
    expect(cliLogLevel("warn")).toBe("error");
  });

  it("lets a configured debug or trace win over every flag, and a quieter level win unless -v asks for more", () => {
    for (const flags of [{}, { verbose: true }, { quiet: true }]) {
      setGlobalOutput(flags);
      expect(cliLogLevel("debug")).toBe("debug");
      expect(cliLogLevel("trace")).toBe("trace");
    }
    setGlobalOutput({});
    expect(cliLogLevel("error")).toBe("error");
    expect(cliLogLevel("silent")).toBe("silent");
    setGlobalOutput({ quiet: true });
    expect(cliLogLevel("fatal")).toBe("fatal");
    setGlobalOutput({ verbose: true });
    expect(cliLogLevel("silent")).toBe("info");
  });
});

describe(plainLogLine.name, () => {
  const entry = {
    level: 40,
    time: 1,
    pid: 7,
    msg: "could not queue the thumbnails",
    account: "me",
    detail: "two words",
    n: 3,
    err: { type: "Error", message: "disk full", stack: "Error: disk full\n    at write (x.js:1:1)" },
  };

  it("is one line: the level's word, the message, then key=value, a value of several words quoted, an error as its type and message", () => {
    expect(plainLogLine(entry, false)).toBe('dvault: warning: could not queue the thumbnails (account=me detail="two words" n=3 err="Error: disk full")');
    expect(plainLogLine({ level: 30, time: 1, msg: "source synced" }, false)).toBe("dvault: source synced");
  });

  it("keeps a message with a newline on its one line: text from outside cannot forge a line of dvault's", () => {
    expect(plainLogLine({ level: 40, msg: "tracked\ndvault: error: forged", user: "a\nb" }, false)).toBe(
      'dvault: warning: tracked\\x0advault: error: forged (user="a\\nb")',
    );
  });

  it("adds the error's stack, indented, only when asked (LOG_LEVEL=debug or trace)", () => {
    expect(plainLogLine(entry, true).split("\n")).toEqual([plainLogLine(entry, false), "    Error: disk full", "        at write (x.js:1:1)"]);
  });
});

describe(formatDuration.name, () => {
  it("reads as seconds, minutes or hours", () => {
    expect(formatDuration(3_200)).toBe("3s");
    expect(formatDuration(75_000)).toBe("1m15s");
    expect(formatDuration(2 * 3600_000 + 5 * 60_000)).toBe("2h05m");
  });
});
