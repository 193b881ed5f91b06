// Full-text search over a mirror synced from the simulator: titles, tags, notes, journal text, comments
// and messages are found through the tsvector columns the database maintains (a metadata edit is
// searchable at once, with no code involved), filters by kind and user work, and an archived file's local
// path comes back.
import { execFile } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatHits, hitToJson } from "../../src/cli/search.ts";
import { HIGHLIGHT_START, type SearchOptions, searchPage } from "../../src/search/search.ts";
import { archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
const archiveDir = path.join(os.tmpdir(), `dvault-search-${process.pid}`);

beforeAll(async () => {
  h = await createSyncHarness({
    sim: { seed: 8, dataset: { deviations: 80, notes: 30, messages: 30, favourites: 10, trackedUsers: 1, trackedUserDeviations: 5 } },
  });
  for (const source of ["gallery", "notes", "messages", "comments"] as const) {
    const result = await h.runSource(source);
    expect(result.status, `${source}: ${result.reason ?? ""}`).not.toBe("skipped");
  }
});
afterAll(async () => {
  await h?.close();
});

const search = async (text: string, extra: Partial<SearchOptions> = {}) => (await searchPage(h.pool, { text, archiveDir, limit: 500, ...extra })).hits;

async function mirroredDeviation(where: string) {
  const { rows } = await h.pool.query<{ deviationid: string; title: string; tags: string[] | null; html: string | null; type: string }>(
    `SELECT d.deviationid, d.title, m.tags, t.html, d.type::text AS type FROM deviations d
     LEFT JOIN deviation_metadata m ON m.deviationid = d.deviationid
     LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
     WHERE ${where} ORDER BY d.deviationid LIMIT 1`,
  );
  const row = rows[0];
  if (!row) throw new Error(`no mirrored deviation where ${where}`);
  return row;
}

describe(searchPage.name, () => {
  it("finds a deviation by the words of its title, ranked first for the exact title", async () => {
    const d = await mirroredDeviation(`d.type = 'image' AND d.title ~ '^[A-Z][a-z]+ [A-Z][a-z]+ [0-9]+$'`);
    const hits = await search(d.title);
    expect(hits[0]).toMatchObject({ kind: "deviation", id: d.deviationid, title: d.title, artist: "SimArtist" });
    expect(hits[0]?.date).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("finds a deviation by a tag", async () => {
    const d = await mirroredDeviation(`cardinality(m.tags) > 0 AND d.type = 'image'`);
    const tag = d.tags![0]!;
    const hits = await search(tag, { type: "deviation" });
    expect(hits.map((x) => x.id)).toContain(d.deviationid);
    expect(hits.every((x) => x.kind === "deviation")).toBe(true);
  });

  it("finds journal text by a phrase and highlights it", async () => {
    const d = await mirroredDeviation(`d.type = 'journal' AND t.html IS NOT NULL`);
    const words = d
      .html!.replace(/<[^>]+>/g, " ")
      .trim()
      .split(/\s+/)
      .slice(3, 7);
    const hits = await search(`"${words.join(" ")}"`, { type: "journal" });
    expect(hits.map((x) => x.id)).toContain(d.deviationid);
    const hit = hits.find((x) => x.id === d.deviationid)!;
    expect(hit.kind).toBe("journal");
    expect(hit.snippet).toContain(HIGHLIGHT_START);
    expect(hit.snippet).not.toMatch(/<p>/);
  });

  it("finds a note by its subject and its body, filtered by sender", async () => {
    const { rows } = await h.pool.query<{ noteid: string; subject: string; body: string; sender: string }>(
      `SELECT n.noteid, n.subject, n.body, u.username AS sender FROM notes n JOIN users u ON u.userid = n.sender_userid
       WHERE n.subject LIKE 'Re: %' AND NOT n.sent ORDER BY n.noteid LIMIT 1`,
    );
    const note = rows[0]!;
    const subjectWord = note.subject.slice(4);
    const bySubject = await search(subjectWord, { type: "note" });
    expect(bySubject.map((x) => x.id)).toContain(note.noteid);
    const bodyWord = /about the (\w+)/.exec(note.body)![1]!;
    const byBody = await search(`hello ${bodyWord}`, { type: "note", user: note.sender.toUpperCase() });
    expect(byBody.map((x) => x.id)).toContain(note.noteid);
    expect(byBody.every((x) => x.kind === "note" && x.artist === note.sender)).toBe(true);
  });

  it("finds comments and messages", async () => {
    const comments = await search("lovely", { type: "comment" });
    expect(comments.length).toBeGreaterThan(0);
    expect(comments.every((c) => c.kind === "comment")).toBe(true);
    const messages = await search("favourites", { type: "message" });
    expect(messages.length).toBeGreaterThan(0);
    expect(messages[0]?.kind).toBe("message");
  });

  it("keeps the index current inside the database: an edited tag is searchable at once", async () => {
    const d = await mirroredDeviation(`d.type = 'image'`);
    expect(await search("zanzibarquokka")).toEqual([]);
    await h.pool.query(`UPDATE deviation_metadata SET tags = array_append(tags, 'zanzibarquokka') WHERE deviationid = $1`, [d.deviationid]);
    const hits = await search("zanzibarquokka");
    expect(hits.map((x) => x.id)).toEqual([d.deviationid]);
    await h.pool.query(`UPDATE deviations SET title = 'Renamed Axolotlwave' WHERE deviationid = $1`, [d.deviationid]);
    expect((await search("axolotlwave zanzibarquokka")).map((x) => x.id)).toEqual([d.deviationid]);
  });

  it("reads -word as excluded and OR as either (search --help)", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>(
      "SELECT deviationid FROM deviations d JOIN deviation_metadata m USING (deviationid) WHERE d.type = 'image' ORDER BY deviationid LIMIT 2",
    );
    const [one, two] = rows as [{ deviationid: string }, { deviationid: string }];
    const tag = (d: { deviationid: string }, word: string) =>
      h.pool.query(`UPDATE deviation_metadata SET tags = array_append(tags, $2) WHERE deviationid = $1`, [d.deviationid, word]);
    await tag(one, "wombatlantern");
    await tag(one, "heronquilt");
    await tag(two, "wombatlantern");
    const ids = async (q: string) => (await search(q)).map((x) => x.id).sort();
    expect(await ids("wombatlantern")).toEqual([one.deviationid, two.deviationid].sort());
    expect(await ids("wombatlantern -heronquilt")).toEqual([two.deviationid]);
    expect(await ids("heronquilt OR nowhereword")).toEqual([one.deviationid]);
    expect(await ids("heronquilt nowhereword")).toEqual([]);
  });

  it("returns the local path of an archived file", async () => {
    const d = await mirroredDeviation(`d.type = 'image' AND d.title ~ '^[A-Z][a-z]+ [A-Z][a-z]+$'`);
    const before = await search(d.title);
    expect(before.find((x) => x.id === d.deviationid)?.localPath).toBeNull();
    const file = await archiveFile(h.pool, archiveDir, d.deviationid, artworkPng(1, 8, 8));
    const after = await search(d.title);
    expect(after.find((x) => x.id === d.deviationid)?.localPath).toBe(file.absPath);
    expect(formatHits(after, undefined)).toContain(`file: ${file.absPath}`);
  });

  it("treats hostile titles as data and the query as words, not syntax", async () => {
    const hits = await search("study", { type: "deviation" });
    expect(hits.some((x) => x.title === `<script>alert("x")</script> Study`)).toBe(true);
    expect(await search("   ")).toEqual([]);
    expect(await search("the of and")).toEqual([]);
    await expect(search(`'); DROP TABLE deviations; --`)).resolves.toBeInstanceOf(Array);
  });

  it("gives JSON with the plain snippet and the matched words", async () => {
    const [hit] = await search("lovely", { type: "comment", limit: 1 });
    const json = hitToJson(hit!);
    expect(json.snippet).not.toContain(HIGHLIGHT_START);
    expect(json.matches.map((m) => m.toLowerCase())).toContain("lovely");
  });
});

describe("dvault search", () => {
  it("prints matches with the local file, and JSON with --json", async () => {
    const env = { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", DATABASE_URL: h.db.url, DVAULT_ARCHIVE_DIR: archiveDir, LOG_LEVEL: "silent" };
    const run = promisify(execFile);
    // An archived file of its own (not the one the test of the local path stores, whichever runs first).
    const d = await mirroredDeviation(`d.type = 'image' AND d.title ~ '^[A-Z][a-z]+ [A-Z][a-z]+ [0-9]+$'`);
    await archiveFile(h.pool, archiveDir, d.deviationid, artworkPng(2, 8, 8));
    const { rows } = await h.pool.query<{ title: string; path: string }>(
      "SELECT d.title, dl.path FROM downloads dl JOIN deviations d ON d.deviationid = dl.deviationid WHERE dl.status = 'done' AND dl.deviationid = $1",
      [d.deviationid],
    );
    const archived = rows[0]!;
    const text = await run(process.execPath, ["bin/dvault.js", "search", ...archived.title.split(" "), "--type", "deviation", "--user", "simartist"], {
      env,
      timeout: 30_000,
    });
    expect(text.stdout).toContain(`deviation  ${JSON.stringify(archived.title)} by SimArtist`);
    expect(text.stdout).toContain(`file: ${path.join(archiveDir, archived.path)}`);
    const json = await run(process.execPath, ["bin/dvault.js", "search", "lovely", "--type", "comment", "--limit", "3", "--json"], { env, timeout: 30_000 });
    const hits = JSON.parse(json.stdout) as Array<{ kind: string; matches: string[] }>;
    expect(hits).toHaveLength(3);
    expect(hits.every((x) => x.kind === "comment")).toBe(true);
    // A page shorter than the hits says how many there are; stop-words are named, not silently dropped.
    const page = await run(process.execPath, ["bin/dvault.js", "search", "lovely", "--type", "comment", "--limit", "3"], { env, timeout: 30_000 });
    expect(page.stdout).toMatch(/\n3 of (\d+) matches; see more with --limit \d+\n$/);
    expect(Number(/3 of (\d+)/.exec(page.stdout)?.[1])).toBeGreaterThan(3);
    const stop = await run(process.execPath, ["bin/dvault.js", "search", "the"], { env, timeout: 30_000 });
    expect(stop.stdout).toBe('no matches (ignored "the": too common a word to search for)\n');
    const bad = await run(process.execPath, ["bin/dvault.js", "search", "x", "--type", "forum"], { env, timeout: 30_000 }).catch(
      (err: { stderr: string }) => err,
    );
    expect("stderr" in bad && bad.stderr).toMatch(/--type <kind>.*forum.*is invalid/);
  });
});
