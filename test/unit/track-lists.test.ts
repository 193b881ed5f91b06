// Track lists as other tools write them (src/track-lists): usernames one a line, OPML from feed readers and
// archivers with the service's profile, gallery and RSS URLs in their variants, dvault's JSON; and what export
// writes reads back as the same list.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.ts";
import { openTrackList } from "../../src/track-lists/files.ts";
import { formatTrackList, type ExportedUser } from "../../src/track-lists/format.ts";
import { detectFormat, parseTrackList, TxtLines, type TrackList } from "../../src/track-lists/parse.ts";
import { formatImportReport } from "../../src/track-lists/report-text.ts";
import { userFromText } from "../../src/track-lists/username.ts";

const names = (text: string, file = "list") => parseTrackList(file, text).entries.map((e) => e.username);

describe(userFromText.name, () => {
  it.each([
    ["alice", "alice"],
    ["~bob", "bob"],
    ["@carol", "carol"],
    ["https://www.deviantart.com/dave", "dave"],
    ["https://www.deviantart.com/dave/gallery/all", "dave"],
    ["https://www.deviantart.com/dave/gallery/12345/sketches?page=2", "dave"],
    ["https://www.deviantart.com/dave/favourites", "dave"],
    ["https://www.deviantart.com/dave/art/A-title-123456#comments", "dave"],
    ["http://deviantart.com/eve", "eve"],
    ["deviantart.com/frank/", "frank"],
    ["www.deviantart.com/gina-g", "gina-g"],
    ["https://hank.deviantart.com/", "hank"],
    ["http://ivan_x.deviantart.com/gallery/?catpath=/", "ivan_x"],
    ["https://backend.deviantart.com/rss.xml?q=gallery:jo&type=deviation", "jo"],
    ["https://backend.deviantart.com/rss.xml?type=deviation&q=gallery%3Akim%2F98765", "kim"],
    ["https://backend.deviantart.com/rss.xml?type=deviation&q=by%3Alu+sort%3Atime+meta%3Aall", "lu"],
    ["https://backend.deviantart.com/rss.xml?q=sort:time by:mo", "mo"],
    ["https://backend.deviantart.com/rss.xml?type=journal&q=by:ned", "ned"],
    ["https://backend.deviantart.com/rss.xml?q=favby:olga/1234", "olga"],
    ["feed://backend.deviantart.com/rss.xml?q=gallery:pat", "pat"],
    ["https://www.deviantart.com/rss.xml?q=gallery:quinn", "quinn"],
  ])("reads %s as %s", (input, username) => {
    expect(userFromText(input)).toEqual({ username });
  });

  it.each([
    ["bad name!", /not a valid username/],
    ["https://example.com/alice", /not a DeviantArt URL \(example\.com\)/],
    ["https://www.deviantart.com/", /names no user/],
    ["https://www.deviantart.com/tag/cats", /names no user/],
    ["https://www.deviantart.com/daily-deviations", /names no user/],
    ["https://backend.deviantart.com/oembed?url=x", /names no user/],
    ["https://sta.sh.deviantart.com/", /names no user/],
    ["https://backend.deviantart.com/rss.xml?q=boost:popular+cats", /RSS URL names no user/],
    ["https://www.deviantart.com/way-too-long-a-name-for-the-service-to-accept-at-all", /not a valid username/],
    ["javascript:alert(1)", /nor a URL/],
  ])("names nobody in %s", (input, reason) => {
    const r = userFromText(input);
    expect("unresolved" in r && r.unresolved).toMatch(reason);
  });
});

describe(detectFormat.name, () => {
  it("goes by --format, then the extension, then the content", () => {
    expect(detectFormat("a.txt", "<opml/>", "JSON")).toBe("json");
    expect(detectFormat("a.OPML", "alice")).toBe("opml");
    expect(detectFormat("subs.xml", "")).toBe("opml");
    expect(detectFormat("a.json", "alice")).toBe("json");
    expect(detectFormat("a.txt", "{")).toBe("txt");
    expect(detectFormat("export", "  <?xml version='1.0'?><opml/>")).toBe("opml");
    expect(detectFormat("export", '\n["a"]')).toBe("json");
    expect(detectFormat("export", "alice\nbob")).toBe("txt");
  });

  it("refuses an unknown --format in one line naming the ones there are", () => {
    expect(() => detectFormat("a", "", "csv")).toThrow(new UserError('unknown format "csv": use --format opml, txt or json'));
  });
});

describe(`${parseTrackList.name} (txt)`, () => {
  it("skips blank lines and comments, keeps URL fragments, reads CRLF and a BOM", () => {
    const text =
      "\uFEFF# my list\r\nalice\r\n\r\n  bob   # met at a con\r\nhttps://www.deviantart.com/carol/art/x-1#comments\r\n-filename = {title}\r\n~dave\n";
    expect(names(text, "list.txt")).toEqual(["alice", "bob", "carol", "dave"]);
  });

  it("keeps what names no user with its line", () => {
    const list = parseTrackList("l.txt", "alice\nnot a name\nhttps://example.com/x\n");
    expect(list.unresolved).toEqual([
      { input: "not a name", where: "line 2", reason: "not a valid username (letters, digits, - and _) nor a URL" },
      { input: "https://example.com/x", where: "line 3", reason: "not a DeviantArt URL (example.com)" },
    ]);
  });

  it("quotes at most 200 characters of a 10 MB line, in the list and in the report", () => {
    const huge = "x".repeat(10_000_000);
    const list = parseTrackList("l.txt", `alice\n${huge}\nhttps://www.deviantart.com/${huge}\n`);
    expect(list.entries.map((e) => e.username)).toEqual(["alice"]);
    expect(list.unresolved.map((u) => u.where)).toEqual(["line 2", "line 3"]);
    for (const u of list.unresolved) {
      expect(u.input.length).toBeLessThanOrEqual(230);
      expect(u.reason.length).toBeLessThanOrEqual(230);
      expect(u.input).toMatch(/… \(\d+ characters\)$/);
    }
    const counts = { added: 0, skipped: 0, unresolved: list.unresolved.length };
    const report = formatImportReport("l.txt", { ...list, counts, dryRun: true, resolved: false, added: [], skipped: [] });
    expect(report.length).toBeLessThan(2000);
  });

  it("reads a list piece by piece as it reads it whole: a CRLF or a long line split anywhere", () => {
    const text = `alice\r\nbob\r\n# a comment\r\n${"x".repeat(20_000)}\ncarol\rdave\r\n\r\neve`;
    for (const size of [1, 2, 3, 7, 1000, text.length]) {
      const list: TrackList = { format: "txt", entries: [], unresolved: [] };
      const lines = new TxtLines(list);
      for (let i = 0; i < text.length; i += size) lines.push(text.slice(i, i + size));
      lines.end();
      expect(
        list.entries.map((e) => [e.username, e.where]),
        `pieces of ${size}`,
      ).toEqual([
        ["alice", "line 1"],
        ["bob", "line 2"],
        ["carol", "line 5"],
        ["dave", "line 6"],
        ["eve", "line 8"],
      ]);
      expect(list.unresolved, `pieces of ${size}`).toEqual([
        { input: `${"x".repeat(199)}… (20000 characters)`, where: "line 4", reason: "longer than any username or URL" },
      ]);
    }
  });

  it("reads a list saved as UTF-16 with a BOM (PowerShell's > and Notepad's Unicode), either byte order", async () => {
    const text = "alice\r\n~bob\r\nhttps://www.deviantart.com/carol\r\n";
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, "utf16le").swap16()]);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-list-"));
    try {
      for (const [i, bytes] of [le, be, Buffer.from(`\uFEFF${text}`)].entries()) {
        const file = path.join(dir, `list${i}.txt`);
        await fs.writeFile(file, bytes);
        const batches = (await openTrackList(file)).batches;
        const read: string[] = [];
        for await (const batch of batches) read.push(...batch.entries.map((e) => e.username));
        expect(read).toEqual(["alice", "bob", "carol"]);
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a binary file in one line", () => {
    expect(() => parseTrackList("x.bin", "PK\u0003\u0004\u0000\u0000")).toThrow(/^x\.bin is not a text file: give a list of usernames/);
  });
});

describe(`${parseTrackList.name} (OPML)`, () => {
  const opml = (body: string) => `<?xml version="1.0" encoding="utf-8"?><opml version="1.0"><head><title>subs</title></head><body>${body}</body></opml>`;

  it("reads nested outlines, either URL attribute in any case, and prefers a URL that names a user", () => {
    const text = opml(`
      <outline text="Art" title="Art">
        <outline type="rss" text="A" xmlUrl="https://backend.deviantart.com/rss.xml?type=deviation&amp;q=gallery%3Aanna"/>
        <outline text="Deeper"><outline type="rss" text="B" XMLURL="https://backend.deviantart.com/rss.xml?q=by:bea"/></outline>
        <outline title="C" htmlurl="https://cid.deviantart.com/"/>
      </outline>
      <outline type="rss" text="bridge" xmlUrl="https://rss-bridge.example/?action=display&amp;bridge=X" htmlUrl="https://www.deviantart.com/dora"/>
      <outline type="link" text="link" url="https://www.deviantart.com/emil/gallery"/>
      <outline text="Empty folder"/>
    `);
    expect(names(text, "subs.opml")).toEqual(["anna", "bea", "cid", "dora", "emil"]);
  });

  it("reports outlines that name no user, with their position and title", () => {
    const list = parseTrackList(
      "subs.opml",
      opml(
        `<outline type="rss" text="News" xmlUrl="https://news.example/feed"/><outline type="rss" text="No URL"/><outline type="rss" text="x" xmlUrl="https://www.deviantart.com/tag/cats"/>`,
      ),
    );
    expect(list.entries).toEqual([]);
    expect(list.unresolved).toEqual([
      { input: "https://news.example/feed", where: 'outline 1 "News"', reason: "not a DeviantArt URL (news.example)" },
      { input: "No URL", where: 'outline 2 "No URL"', reason: "the outline has no xmlUrl or htmlUrl" },
      { input: "https://www.deviantart.com/tag/cats", where: 'outline 3 "x"', reason: "the URL names no user" },
    ]);
  });

  it("quotes at most 200 characters of an outline's huge title", () => {
    const list = parseTrackList("subs.opml", opml(`<outline type="rss" text="${"t".repeat(1_000_000)}" xmlUrl="https://news.example/feed"/>`));
    expect(list.unresolved).toHaveLength(1);
    expect(list.unresolved[0]?.where.length).toBeLessThan(250);
  });

  it("refuses broken XML and XML that is not OPML in one line each", () => {
    expect(() => parseTrackList("a.opml", "<opml><body><outline></body></opml>")).toThrow(/^a\.opml is not valid OPML \(line 1: .+\): fix the file/);
    expect(() => parseTrackList("a.xml", "<rss><channel/></rss>")).toThrow(/^a\.xml has no <opml><body>: it is not an OPML file/);
    // Well-formed but past the parser's limits: folders nested 150 deep.
    const deep = opml(`${'<outline text="f">'.repeat(150)}<outline type="rss" xmlUrl="https://www.deviantart.com/alice"/>${"</outline>".repeat(150)}`);
    expect(() => parseTrackList("deep.opml", deep)).toThrow(UserError);
    expect(() => parseTrackList("deep.opml", deep)).toThrow(/^deep\.opml could not be read as OPML \(.+\): fix the file or give --format txt$/);
  });
});

describe(`${parseTrackList.name} (JSON)`, () => {
  it("reads dvault's export with its options, a bare array of names, and URLs in place of names", () => {
    const doc = {
      version: 1,
      users: [
        { username: "alice", account: "main", tokenKind: "client", userid: "U-1", limitation: "client token", future: true },
        { url: "https://www.deviantart.com/bob" },
        "carol",
      ],
    };
    const list = parseTrackList("t.json", JSON.stringify(doc));
    expect(list.entries).toEqual([
      { username: "alice", where: "users[0]", options: { account: "main", tokenKind: "client", userid: "U-1", limitation: "client token" } },
      { username: "bob", where: "users[1]", options: {} },
      { username: "carol", where: "users[2]", options: {} },
    ]);
    expect(names(JSON.stringify(["dave", "https://eve.deviantart.com"]), "t.json")).toEqual(["dave", "eve"]);
  });

  it("keeps entries it cannot read with the reason", () => {
    const list = parseTrackList("t.json", JSON.stringify({ users: [{ username: "a", tokenKind: "robot" }, {}, 42] }));
    expect(list.unresolved.map((u) => [u.where, u.reason])).toEqual([
      ["users[0]", expect.stringMatching(/^tokenKind: /)],
      ["users[1]", "no username or url"],
      ["users[2]", expect.stringMatching(/^entry: /)],
    ]);
  });

  it("refuses JSON that is broken or has no users list in one line each", () => {
    expect(() => parseTrackList("t.json", "{oops")).toThrow(/^t\.json is not valid JSON \(.+\): fix the file/);
    expect(() => parseTrackList("t.json", '{"version":1}')).toThrow(/^t\.json has no "users" list/);
  });
});

describe(formatTrackList.name, () => {
  const at = new Date("2026-11-25T08:00:00Z");
  const user = (username: string, account = "main"): ExportedUser => ({ username, account, userid: null, tokenKind: "user", limitation: null, addedAt: at });
  const users = [user("alice"), user("bob_b"), user("carol-c", "R&D <2>")];

  it("writes valid OPML 2.0 with the profile and the gallery RSS of each user, which import reads back", () => {
    const text = formatTrackList("opml", users, at);
    expect(XMLValidator.validate(text)).toBe(true);
    expect(text).toContain('<opml version="2.0">');
    expect(text).toContain(
      '<outline type="rss" text="alice" title="alice" xmlUrl="https://backend.deviantart.com/rss.xml?type=deviation&amp;q=gallery%3Aalice" htmlUrl="https://www.deviantart.com/alice"/>',
    );
    // Two accounts: an outline per account, its name escaped.
    expect(text).toContain('<outline text="R&amp;D &lt;2&gt;" title="R&amp;D &lt;2&gt;">');
    expect(names(text, "out.opml")).toEqual(["alice", "bob_b", "carol-c"]);
  });

  it("writes txt and JSON that import reads back, JSON with every option", () => {
    expect(formatTrackList("txt", users, at)).toBe("alice\nbob_b\ncarol-c\n");
    const json = formatTrackList("json", [{ ...user("dora"), tokenKind: "client", userid: "U-9", limitation: "mature hidden" }], at);
    expect(JSON.parse(json)).toEqual({
      version: 1,
      exportedAt: at.toISOString(),
      users: [{ username: "dora", account: "main", tokenKind: "client", userid: "U-9", limitation: "mature hidden", addedAt: at.toISOString() }],
    });
    expect(parseTrackList("x.json", json).entries[0]?.options).toEqual({ account: "main", tokenKind: "client", userid: "U-9", limitation: "mature hidden" });
  });
});

describe(formatImportReport.name, () => {
  it("says what was added, skipped and not resolved, and escapes what the file said", () => {
    const text = formatImportReport("subs.opml", {
      format: "opml",
      dryRun: true,
      resolved: false,
      counts: { added: 1, skipped: 1, unresolved: 1 },
      added: [{ account: "main", username: "alice", where: "outline 1" }],
      skipped: [{ account: "main", username: "bob", where: "outline 2", reason: "already tracked" }],
      unresolved: [{ input: "evil\u001b[2J\u202Etxt", where: "line 3", reason: "not a valid username" }],
    });
    expect(text.split("\n")).toEqual([
      "subs.opml (opml): would add 1, skipped 1, could not resolve 1 (dry run: nothing changed)",
      "  would add  alice",
      "  skipped    bob: already tracked (outline 2)",
      "  unresolved line 3: evil\\x1b[2J[U+202E]txt: not a valid username",
      "  (names were not checked with the service: --resolve asks it and leaves out users it does not know)",
    ]);
  });
});
