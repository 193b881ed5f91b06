// `dvault track import|export` on real Postgres (and the simulator for --resolve): a 500-user OPML list goes in,
// comes out as OPML 2.0 and goes into a fresh database as the same set; importing again adds nothing; dry runs
// change nothing; the service's answer decides which names exist.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { XMLValidator } from "fast-xml-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccountRow } from "../../src/db/account.repository.ts";
import { TrackedUserRepository } from "../../src/db/tracked-user.repository.ts";
import { UserError } from "../../src/errors.ts";
import { importTrackList, type ImportListOptions } from "../../src/track-lists/import-list.ts";
import { parseTrackList } from "../../src/track-lists/parse.ts";
import { formatImportReport } from "../../src/track-lists/report-text.ts";
import { createDownloadHarness, type DownloadHarness, type DownloadHarnessOptions } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { createMirrorDb, insertAccount, type MirrorDb } from "../helpers/mirror-fixtures.ts";

const HARNESS = {
  sim: { dataset: { deviations: 2, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 3 }, startTime: new Date() },
  sources: [],
} satisfies DownloadHarnessOptions;

let h: DownloadHarness;
let fresh: MirrorDb;
let freshAccountId: number;
let dir: string;

beforeAll(async () => {
  h = await createDownloadHarness(HARNESS);
  fresh = await createMirrorDb();
  freshAccountId = await insertAccount(fresh.pool, "elsewhere");
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-track-"));
}, 120_000);

afterAll(async () => {
  await fresh?.drop();
  await h?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

/** How the 500 users are written: every URL form the parser accepts appears about as often as the others. */
const FORMS = [
  (u: string) => `xmlUrl="https://backend.deviantart.com/rss.xml?type=deviation&amp;q=gallery%3A${u}"`,
  (u: string) => `htmlUrl="https://www.deviantart.com/${u}"`,
  (u: string) => `xmlUrl="https://backend.deviantart.com/rss.xml?q=by:${u}+sort:time" htmlUrl="https://www.deviantart.com/${u}/gallery"`,
  (u: string) => `htmlUrl="http://${u}.deviantart.com/"`,
  (u: string) => `xmlurl="https://rss-bridge.example/?u=${u}" HTMLURL="https://www.deviantart.com/${u}/favourites"`,
];

function bigOpml(users: readonly string[]): string {
  const groups = Array.from({ length: 5 }, (_, g) => users.filter((_u, i) => i % 5 === g));
  const outlines = groups.map(
    (group, g) =>
      `<outline text="Group ${g}">${group.map((u, i) => `<outline type="rss" text="${u}" ${FORMS[(i + g) % FORMS.length]?.(u)}/>`).join("\n")}</outline>`,
  );
  const extras = [
    // Named twice: another case, another form.
    `<outline type="rss" text="again" htmlUrl="https://www.deviantart.com/${users[0]?.toUpperCase()}"/>`,
    `<outline type="rss" text="again" htmlUrl="https://${users[1]}.deviantart.com/gallery/"/>`,
    `<outline type="rss" text="again" xmlUrl="https://backend.deviantart.com/rss.xml?q=favby:${users[2]}"/>`,
    '<outline type="rss" text="A news site" xmlUrl="https://news.example/feed.xml"/>',
    '<outline type="rss" text="Daily deviations" htmlUrl="https://www.deviantart.com/daily-deviations"/>',
  ];
  return `<?xml version="1.0"?>\n<opml version="1.0"><head><title>reader export</title></head><body>\n${outlines.join("\n")}\n<outline text="Misc">${extras.join("\n")}</outline></body></opml>\n`;
}

const trackedNames = async (pool: DownloadHarness["pool"], accountId: number) =>
  (await new TrackedUserRepository(pool).listTrackedUsers(accountId)).map((t) => t.username.toLowerCase()).sort();

describe("dvault track import / export", () => {
  it("takes a 500-user OPML list, exports it as OPML 2.0, and a fresh database imports the same set, twice without change", async () => {
    const users = Array.from({ length: 500 }, (_, i) => `artist-${String(i).padStart(3, "0")}${i % 7 === 0 ? "_x" : ""}`);
    const source = path.join(dir, "reader.opml");
    await fs.writeFile(source, bigOpml(users));

    const first = await runDvault(h, ["track", "import", source, "--json"]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.format).toBe("opml");
    expect(report.added).toHaveLength(500);
    expect(report.skipped.map((s: { reason: string }) => s.reason)).toEqual(["duplicate in file", "duplicate in file", "duplicate in file"]);
    expect(report.unresolved.map((u: { where: string; reason: string }) => [u.where, u.reason])).toEqual([
      ['outline 510 "A news site"', "not a DeviantArt URL (news.example)"],
      ['outline 511 "Daily deviations"', "the URL names no user"],
    ]);
    expect(await trackedNames(h.pool, h.account.id)).toEqual([...users].sort());

    const out = path.join(dir, "dvault.opml");
    const exported = await runDvault(h, ["track", "export", "--output", out]);
    expect(exported.stderr).toBe("");
    expect(exported.code).toBe(0);
    const text = await fs.readFile(out, "utf8");
    expect(XMLValidator.validate(text)).toBe(true);
    expect(
      text.match(/<outline type="rss" [^>]*xmlUrl="https:\/\/backend\.deviantart\.com\/rss\.xml[^"]+" htmlUrl="https:\/\/www\.deviantart\.com\/[^"]+"\/>/g),
    ).toHaveLength(500);

    const elsewhere = { ...h.env, DATABASE_URL: fresh.db.url };
    const into = await runDvault({ redis: h.redis, env: elsewhere }, ["track", "import", out, "--json"]);
    expect(into.stderr).toBe("");
    const intoReport = JSON.parse(into.stdout);
    expect([intoReport.added.length, intoReport.skipped.length, intoReport.unresolved.length]).toEqual([500, 0, 0]);
    expect(await trackedNames(fresh.pool, freshAccountId)).toEqual([...users].sort());

    // Again, in this process (the command's start-up is already covered above): everything is skipped.
    const freshAccount = { id: freshAccountId, name: "elsewhere" } as AccountRow;
    const again = await importTrackList({
      pool: fresh.pool,
      list: parseTrackList(out, await fs.readFile(out, "utf8")),
      accounts: [freshAccount],
      defaultAccount: async () => freshAccount,
      dryRun: false,
      at: new Date(),
    });
    const text2 = formatImportReport(out, again);
    expect(text2.split("\n")[0]).toBe(`${out} (opml): added 0, skipped 500, could not resolve 0`);
    expect(text2).toContain('  skipped    artist-000_x: already tracked (outline 1 "artist-000_x")');
    expect(await trackedNames(fresh.pool, freshAccountId)).toHaveLength(500);
  }, 60_000);

  it("asks the service from the command line with --resolve, and a dry run changes nothing", async () => {
    const known = [...h.sim.truth.users.values()].find((u) => u.userid !== h.sim.truth.ownerId);
    if (!known) throw new Error("the simulator has no user besides the owner");
    const file = path.join(dir, "two.txt");
    await fs.writeFile(file, `${known.username.toUpperCase()}\nnobody-by-this-name\n`);
    const run = await runDvault(h, ["track", "import", file, "--resolve", "--dry-run", "--json"]);
    expect(run.stderr).toBe("");
    const report = JSON.parse(run.stdout);
    expect(report.added.map((a: { username: string }) => a.username)).toEqual([known.username]);
    expect(report.unresolved.map((u: { input: string; reason: string }) => [u.input, u.reason])).toEqual([
      ["nobody-by-this-name", "the service knows no such user"],
    ]);
    expect(await trackedNames(h.pool, h.account.id)).not.toContain(known.username.toLowerCase());
  });

  it("refuses a file it cannot read in one line", async () => {
    const missing = await runDvault(h, ["track", "import", path.join(dir, "nope.opml")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split("\n")).toEqual([expect.stringMatching(/cannot read .*nope\.opml: no such file or folder$/)]);
  });
});

describe(importTrackList.name, () => {
  // A database of its own: these tests track names (and the service's known users) that the command-line
  // tests above must find untracked, whichever runs first.
  let h: DownloadHarness;
  let account: AccountRow;
  beforeAll(async () => {
    h = await createDownloadHarness(HARNESS);
    account = (await h.services.accounts.list()).find((a) => a.id === h.account.id) as AccountRow;
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });
  const run = (text: string, file: string, o: Partial<ImportListOptions> = {}) =>
    importTrackList({
      pool: h.pool,
      list: parseTrackList(file, text),
      accounts: [account],
      defaultAccount: async () => account,
      dryRun: false,
      at: new Date(),
      ...o,
    });

  it("changes nothing in a dry run, adds once, skips what is tracked, and tracks a removed user again", async () => {
    const text = "dry-one\ndry-two\nDRY-ONE\n";
    const dry = await run(text, "l.txt", { dryRun: true });
    expect(dry.added.map((a) => a.username)).toEqual(["dry-one", "dry-two"]);
    expect(dry.skipped).toEqual([{ account: account.name, username: "DRY-ONE", where: "line 3", reason: "duplicate in file" }]);
    expect(await trackedNames(h.pool, account.id)).not.toContain("dry-one");

    expect((await run(text, "l.txt")).added).toHaveLength(2);
    const again = await run(text, "l.txt");
    expect([again.added.length, again.skipped.map((s) => s.reason)]).toEqual([0, ["already tracked", "already tracked", "duplicate in file"]]);

    await new TrackedUserRepository(h.pool).removeTrackedUser(account.id, "dry-two", new Date());
    expect((await run(text, "l.txt")).added.map((a) => a.username)).toEqual(["dry-two"]);
  });

  it("keeps a JSON list's per-user options and reports an account that does not exist", async () => {
    const doc = {
      version: 1,
      users: [
        { username: "json-client", account: account.name, tokenKind: "client", userid: "U-77", limitation: "client token: mature hidden" },
        { username: "json-lost", account: "nobody-here" },
      ],
    };
    const report = await run(JSON.stringify(doc), "t.json");
    expect(report.added.map((a) => a.username)).toEqual(["json-client"]);
    expect(report.unresolved).toEqual([{ input: "json-lost", where: "users[1]", reason: 'no account named "nobody-here" (give --account <name>)' }]);
    const row = (await new TrackedUserRepository(h.pool).listTrackedUsers(account.id)).find((t) => t.username === "json-client");
    expect(row).toMatchObject({ tokenKind: "client", userid: "U-77", limitation: "client token: mature hidden" });
  });

  it("asks the service with --resolve: unknown names are not added, known ones get the service's spelling and id", async () => {
    const known = [...h.sim.truth.users.values()].filter((u) => u.userid !== h.sim.truth.ownerId).slice(0, 2);
    expect(known).toHaveLength(2);
    const [a, b] = known as [(typeof known)[number], (typeof known)[number]];
    const clientFor = async () => (await h.services.apiFor(account.id)).client;
    const report = await run(`${a.username.toUpperCase()}\nno-such-artist-here\nhttps://www.deviantart.com/${b.username}\n`, "l.txt", { clientFor });
    expect(report.resolved).toBe(true);
    expect(report.added.map((x) => x.username)).toEqual([a.username, b.username]);
    expect(report.unresolved).toEqual([{ input: "no-such-artist-here", where: "line 2", reason: "the service knows no such user" }]);
    const rows = await new TrackedUserRepository(h.pool).listTrackedUsers(account.id);
    expect(rows.find((t) => t.username === a.username)?.userid).toBe(a.userid);
    expect(rows.some((t) => t.username === "no-such-artist-here")).toBe(false);
  });

  it("skips the account's own user, by name in any case or by a JSON entry's id: its own sources archive them already", async () => {
    expect(account.username && account.userId).toBeTruthy();
    const text = `${account.username!.toUpperCase()}\nown-skip-other\n`;
    const report = await run(text, "l.txt");
    expect(report.added.map((a) => a.username)).toEqual(["own-skip-other"]);
    expect(report.skipped).toEqual([{ account: account.name, username: account.username!.toUpperCase(), where: "line 1", reason: "the account's own user" }]);
    const renamed = await run(JSON.stringify({ version: 1, users: [{ username: "old-name-of-me", userid: account.userId }] }), "t.json");
    expect([renamed.added, renamed.skipped.map((x) => x.reason)]).toEqual([[], ["the account's own user"]]);
    expect(await trackedNames(h.pool, account.id)).not.toContain(account.username!.toLowerCase());
  });

  it("passes on the default account's refusal when several accounts could be meant", async () => {
    const refusal = new UserError("several accounts exist (a, b): choose one with --account <name>");
    await expect(
      run("someone\n", "l.txt", {
        defaultAccount: async () => {
          throw refusal;
        },
      }),
    ).rejects.toBe(refusal);
  });
});
