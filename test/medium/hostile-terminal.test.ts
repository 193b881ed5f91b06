// Issue 27 row 13: escape sequences in text from outside — a title and description (search's hit and snippet), a
// source's last error (status), a gallery-dl user folder's name (the import report) — printed by the real CLI in a
// child process. None reaches the terminal as a control: stdout and stderr hold no C0 control but newline and tab, no
// DEL, no C1 control and no direction override, while the text itself is there, escaped (src/cli/output/terminal.ts).
// JSON stays JSON: the same value, read back whole.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { type CliRun, runDvault } from "../helpers/dvault-cli.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

/** The window title, a screen clear, a clipboard write (OSC 52), a one-character CSI (U+009B), DEL and an override. */
const PAYLOAD = "\u001b]0;pwned\u0007\u001b[2J\u001b]52;c;ZXZpbA==\u0007\u009b2J\u007f\u202Egnp.exe";
/** How the printer shows it. */
const SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\x7f[U+202E]gnp.exe";
/** What a terminal could obey: C0 but newline and tab, DEL, C1, and the direction controls. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

let h: DownloadHarness;
let folder: string;
/** Each command run once, all at the same time (each a child process of a second or more). */
let runs: Record<"search" | "searchJson" | "status" | "import", Promise<CliRun>>;

function expectInert(run: CliRun): void {
  expect(run.stdout).not.toMatch(CONTROL);
  expect(run.stderr).not.toMatch(CONTROL);
}

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { seed: 13, dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
  });
  await h.syncAll(["gallery"]);
  const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations ORDER BY deviationid LIMIT 1");
  await h.pool.query("UPDATE deviations SET title = $2 WHERE deviationid = $1", [rows[0]!.deviationid, `Quokkaterm ${PAYLOAD}`]);
  await h.pool.query("UPDATE deviation_metadata SET description = $2 WHERE deviationid = $1", [rows[0]!.deviationid, `quokkaterm said ${PAYLOAD}`]);
  await h.pool.query("UPDATE sync_sources SET last_result = 'failed', last_error = $1", [`the service said ${PAYLOAD}`]);
  // A gallery-dl folder whose user folder is named with the payload, holding a file of a work nobody knows.
  folder = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-hostile-terminal-"));
  const user = path.join(folder, "deviantart", `evil${PAYLOAD}`);
  await fs.mkdir(user, { recursive: true });
  await fs.writeFile(path.join(user, "deviantart_987654321_Quokka.jpg"), Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]));
  runs = {
    search: runDvault(h, ["search", "quokkaterm"]),
    searchJson: runDvault(h, ["search", "quokkaterm", "--json"]),
    status: runDvault(h, ["status"]),
    import: runDvault(h, ["import", "gallery-dl", folder]),
  };
  await Promise.allSettled(Object.values(runs));
});

afterAll(async () => {
  await h?.close();
  if (folder) await fs.rm(folder, { recursive: true, force: true });
});

describe("text from outside on the terminal", () => {
  it("search shows a hostile title and snippet escaped; --json gives the same value back", async () => {
    const run = await runs.search;
    expect(run.code).toBe(0);
    expectInert(run);
    expect(run.stdout).toContain(SHOWN);
    const json = await runs.searchJson;
    expectInert(json);
    const hits = JSON.parse(json.stdout) as { title: string }[];
    expect(hits.map((x) => x.title)).toContain(`Quokkaterm ${PAYLOAD}`);
  });

  it("status shows a source's last error escaped", async () => {
    const run = await runs.status;
    expectInert(run);
    expect(run.stdout).toContain(`the service said ${SHOWN}`);
  });

  it("the import report shows a user folder's name escaped", async () => {
    const run = await runs.import;
    expectInert(run);
    expect(`${run.stdout}${run.stderr}`).toContain(`evil${SHOWN}`);
  });
});
