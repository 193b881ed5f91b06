// The terminal a person watches (issue #17): `dvault sync --once` and `dvault download --once` in a pseudo-terminal
// (util-linux `script`) draw live progress lines and a coloured summary; the same commands into a pipe print plain
// text with no escape code; `--json` prints a document a script can read. Real Postgres, Redis and the simulator.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault, runDvaultIntoClosedPipe } from "../helpers/dvault-cli.ts";
import { runDvaultInTty } from "../helpers/dvault-tty.ts";

let h: DownloadHarness;

const ESC = /\u001b\[/;
const GREEN_OK = /\u001b\[32mok\b/;
/** What a person reads: escapes dropped, and a move to the first column (a redraw, the view's last clear) starting a line. */
const plain = (s: string) => s.replace(/\u001b\[1?G/g, "\n").replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "");

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 12, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 0 }, startTime: new Date() },
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("dvault in a terminal and in a pipe", () => {
  it("sync --once in a TTY shows a live line per source and a coloured summary; in a pipe, plain text", async () => {
    const tty = await runDvaultInTty(h, ["sync", "--once", "--only", "gallery,collections"]);
    expect(tty.code, tty.stdout).toBe(0);
    // A live line for a running source (label, items, calls), then a finished line, then the table's header in bold
    // and a green "ok" in the result column.
    expect(plain(tty.stdout)).toMatch(/\/gallery\s+\d+ items?\s+\d+ calls?/);
    expect(plain(tty.stdout)).toMatch(/ok\s.*\/collections/);
    expect(tty.stdout).toContain("\u001b[1maccount");
    expect(tty.stdout).toMatch(GREEN_OK);
    // Logs at warn in a terminal: no info line about each source.
    expect(tty.stdout).not.toContain("source synced");

    const piped = await runDvault(h, ["sync", "--once", "--only", "gallery"]);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^account\s+source\s+result/m);
    expect(piped.stdout).not.toMatch(ESC);
    expect(piped.stderr).not.toMatch(ESC);
  }, 120_000);

  it("sync --once in a dumb terminal (TERM=dumb) draws no live lines: their cursor moves would show as text", async () => {
    const tty = await runDvaultInTty(h, ["sync", "--once", "--only", "gallery"], { TERM: "dumb" });
    expect(tty.code, tty.stdout).toBe(0);
    expect(tty.stdout).toMatch(/^account\s+source\s+result/m);
    expect(tty.stdout).not.toMatch(ESC);
  }, 120_000);

  it("sync --json prints one object per run, and -v brings the info logs back", async () => {
    const run = await runDvault(h, ["sync", "--once", "--only", "gallery", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const rows = JSON.parse(run.stdout) as Array<{ source: string; result: string; apiCalls: number }>;
    expect(rows).toEqual([expect.objectContaining({ source: "gallery", result: "ok" })]);
    expect(rows[0]!.apiCalls).toBeGreaterThan(0);

    const verbose = await runDvaultInTty(h, ["-v", "sync", "--once", "--only", "gallery"], { LOG_LEVEL: "info" });
    expect(verbose.code).toBe(0);
    expect(verbose.stdout).toContain("source synced");
  }, 120_000);

  it("archive --once in a TTY draws one view for both steps: the sources' lines, the files line, then both summaries", async () => {
    // An account of its own: nothing another test synced or downloaded is in its way.
    const own = await createDownloadHarness({
      sim: { dataset: { deviations: 12, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, startTime: new Date() },
    });
    try {
      const tty = await runDvaultInTty(own, ["archive", "--once", "--only", "gallery"]);
      expect(tty.code, tty.stdout).toBe(0);
      const shown = plain(tty.stdout);
      expect(shown).toMatch(/\/gallery\s+\d+ items?\s+\d+ calls?/);
      expect(shown).toMatch(/files\s+\S+ \d+\/\d+\s+[\d.]+ (B|KiB|MiB)/);
      expect(shown).toMatch(/^account\s+source\s+result/m);
      expect(tty.stdout).toMatch(/\u001b\[32mdone/);
      expect(shown).toMatch(/^left\s+nothing: every due file was handled/m);
    } finally {
      await own.close();
    }
  }, 120_000);

  it("download --once in a TTY shows the files line with a rate and an ETA", async () => {
    await h.syncAll(["gallery"]);
    const tty = await runDvaultInTty(h, ["download", "--once"]);
    expect(tty.code, tty.stdout).toBe(0);
    expect(plain(tty.stdout)).toMatch(/files\s+\S+ \d+\/\d+\s+[\d.]+ (B|KiB|MiB)\s+[\d.]+ (B|KiB|MiB)\/s\s+ETA/);
    expect(tty.stdout).toMatch(/\u001b\[32mdone/);
  }, 120_000);
});

describe("a reader that closes the pipe", () => {
  it("digest --preview into a closed pipe exits quietly, with no EPIPE stack trace", async () => {
    // The reader is gone before the command writes anything: its first line meets EPIPE, as `| head` does after a line.
    const run = await runDvaultIntoClosedPipe(h, ["digest", "--preview"]);
    expect(run.stderr).not.toMatch(/EPIPE|Error|at /);
    expect(run.code).toBe(0);
  }, 60_000);
});
