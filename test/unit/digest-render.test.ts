// The digest's rendering: every string the service provided is escaped (titles, names, comments, notes),
// only http(s) pages are linked, bidirectional controls are shown rather than applied, and the subject
// line carries the counts.
import { describe, expect, it } from "vitest";
import { countDigest } from "../../src/digest/collect.ts";
import { digestSubject } from "../../src/digest/render-common.ts";
import { renderDigest } from "../../src/digest/render.ts";
import { renderAlert } from "../../src/digest/render-alert.ts";
import { shorten } from "../../src/digest/text.ts";
import { htmlToText } from "../../src/text/html-to-text.ts";
import type { DeviationRef, DigestData } from "../../src/digest/types.ts";

const EVIL = `<img src=x onerror="alert(1)">"'&`;

function dev(extra: Partial<DeviationRef> = {}): DeviationRef {
  return {
    deviationid: "D1",
    title: EVIL,
    url: "https://www.deviantart.com/a/art/x-1",
    sha256: null,
    thumbUrl: "https://images.example/t.jpg?token=abc",
    archived: null,
    isMature: false,
    removedReason: null,
    ...extra,
  };
}

function digest(overrides: Partial<Omit<DigestData, "counts">> = {}): DigestData {
  const base: Omit<DigestData, "counts"> = {
    window: { start: new Date("2026-11-02T08:00:00Z"), end: new Date("2026-11-03T08:00:00Z") },
    generatedAt: new Date("2026-11-03T08:00:01Z"),
    accounts: [{ name: "me", username: "me", baselineComplete: true }],
    feedback: {
      faves: [{ account: "me", deviation: dev(), people: 3, names: [EVIL, "b", "c"], latestAt: null }],
      favesTotal: 3,
      favedWorks: 1,
      comments: [
        { account: "me", kind: "comment", author: EVIL, body: `${EVIL}\nsecond line`, postedAt: null, deviation: dev({ url: "javascript:alert(1)" }) },
      ],
      commentsTotal: 1,
      watchers: [{ account: "me", username: EVIL, usericon: null, at: new Date() }],
      watchersTotal: 1,
      other: [{ account: "me", box: "feed", type: EVIL, count: 2, latestAt: null }],
    },
    mentions: [{ account: "me", type: "mention.comment", by: EVIL, body: EVIL, deviation: null, at: null }],
    mentionsTotal: 1,
    notes: { unread: [{ account: "me", noteid: "1", sender: EVIL, subject: EVIL, preview: EVIL, sentAt: null }], total: 1, olderUnread: 0 },
    deviations: { items: [{ account: "me", artist: EVIL, deviation: dev({ thumbUrl: "javascript:alert(2)" }), publishedAt: null, type: "image" }], total: 1 },
    changes: [
      {
        account: "me",
        kind: "favourite_removed",
        username: EVIL,
        deviation: dev({ title: "Evil \u202Egnp.exe" }),
        reason: "deleted",
        at: new Date("2026-11-02T09:00:00Z"),
      },
    ],
    health: {
      accounts: [
        {
          name: EVIL,
          state: "needs_reauth",
          reason: EVIL,
          since: null,
          refreshAgeDays: null,
          command: `dvault auth login --account ${EVIL}`,
          problem: "needs_reauth",
        },
      ],
      failingSources: [{ account: "me", source: "messages", key: "", result: "failed", error: EVIL, unavailable: null, lastRunAt: null, missing: [] }],
      unavailableSources: [],
      incompleteSources: [
        { account: "me", source: "gallery", key: "", result: "incomplete", error: null, unavailable: null, lastRunAt: null, missing: [EVIL] },
      ],
      unreadable: { count: 2, lastSeenAt: null },
      deferredDownloads: { count: 0, oldest: null },
      importedOriginals: 0,
      downloadsPaused: { paused: false },
      deliveries: [],
      disk: { path: "/archive", freeBytes: 10 * 2 ** 30, totalBytes: 100 * 2 ** 30, low: false },
      alerts: [],
    },
    ...overrides,
  };
  return { ...base, counts: countDigest(base) };
}

/** The feedback of the test digest with one comment, by `author`, saying `body`, on a work titled `title`. */
function withComment(c: { author: string; body: string; title: string }): DigestData["feedback"] {
  return {
    ...digest().feedback,
    comments: [{ account: "me", kind: "comment", author: c.author, body: c.body, postedAt: null, deviation: dev({ title: c.title }) }],
  };
}

describe(renderDigest.name, () => {
  it("escapes every service-provided string: no markup from the service reaches the HTML", () => {
    const { html } = renderDigest(digest(), { timezone: "UTC" });
    expect(html).not.toContain("<img src=x");
    expect(html).not.toContain('onerror="');
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&quot;&#39;&amp;");
    expect(html).not.toMatch(/href="javascript:/i);
    expect(html).not.toMatch(/src="javascript:/i);
    // Signed thumbnail URLs are attribute-escaped, not broken.
    expect(html).toContain('src="https://images.example/t.jpg?token=abc"');
  });

  it("shows bidirectional overrides instead of applying them", () => {
    const { html, text } = renderDigest(digest(), { timezone: "UTC" });
    expect(html).toContain("Evil [U+202E]gnp.exe");
    expect(text).toContain("Evil [U+202E]gnp.exe");
    expect(html).not.toContain("\u202E");
  });

  it("shows an override in every field the same way: a comment's quote and a mention as well as titles (issue 27), Hebrew kept", () => {
    const d = digest({
      feedback: withComment({ author: "Ann\u202Ennb", body: "Open \u202Efdp.exe first\nשלום\u200F.", title: "Invoice \u202Efdp.exe" }),
      mentions: [{ account: "me", type: "mention.comment", by: "b", body: "a \u2066mention\u2069", deviation: null, at: null }],
    });
    const { html, text } = renderDigest(d, { timezone: "UTC" });
    for (const out of [html, text]) {
      expect(out).toContain("Invoice [U+202E]fdp.exe");
      expect(out).toContain("Open [U+202E]fdp.exe first");
      expect(out).toContain("Ann[U+202E]nnb");
      expect(out).toContain("a [U+2066]mention[U+2069]");
      expect(out).toContain("שלום\u200F.");
      expect(out).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/u);
    }
  });

  it("writes no control character of the service's into the plain-text twin: a terminal showing the file would obey it", () => {
    const sequences = "\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u0000";
    const d = digest({ feedback: withComment({ author: `Ann${sequences}`, body: `Nice${sequences} work`, title: `T${sequences}` }) });
    const { text } = renderDigest(d, { timezone: "UTC" });
    // ESC (a clipboard write, a cleared screen), BEL and NUL shown as escapes; newlines kept.
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain("Nice\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x00 work");
    expect(text).toContain("Ann\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x00");
    expect(text.split("\n").length).toBeGreaterThan(10);
    // An alert quoting a source's last error (the service's words) likewise, in its text and its subject.
    const alert = renderAlert(
      {
        id: "1",
        kind: "source_failing",
        subject: "s",
        title: `me: gallery (x${sequences}) keeps failing`,
        body: `Last error: ${sequences}.`,
        openedAt: new Date(0),
        reminder: false,
      },
      { timezone: "UTC" },
    );
    for (const out of [alert.text, alert.subject]) expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(alert.text).toContain("Last error: \\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x00.");
  });

  it("writes a plain-text twin with the same sections", () => {
    const { text } = renderDigest(digest(), { timezone: "UTC" });
    for (const heading of ["FEEDBACK", "MENTIONS", "UNREAD NOTES", "NEW FROM ARTISTS YOU WATCH", "CHANGES WORTH KNOWING", "ARCHIVE HEALTH"])
      expect(text).toContain(heading);
    expect(text).toContain(`    > ${EVIL}\n    > second line`);
  });

  it("puts the counts in the subject, and says so when nothing happened", () => {
    const d = digest();
    expect(renderDigest(d, { timezone: "UTC" }).subject).toBe(
      "dvault digest 3 Nov: 3 faves, 1 comment, 1 new watcher, 1 mention, 2 notifications, 1 unread note, 1 new deviation, 1 change, 2 need attention",
    );
    const zero = { faves: 0, comments: 0, watchers: 0, mentions: 0, notifications: 0, notes: 0, deviations: 0, changes: 0, problems: 0 };
    expect(digestSubject(zero, new Date("2026-11-03T08:00:00Z"), "Pacific/Auckland")).toBe("dvault digest 3 Nov: nothing new");
  });

  it("says a preview is a preview", () => {
    const { html, text } = renderDigest(digest(), { timezone: "UTC", mode: "preview" });
    expect(html).toContain("Preview: nothing was sent and the digest window did not move.");
    expect(text).toContain("(Preview: nothing was sent and the digest window did not move.)");
  });
});

describe(htmlToText.name, () => {
  it("keeps line breaks, drops tags and scripts, decodes entities", () => {
    expect(htmlToText("Love the <b>colours</b> &amp; light!<br>Really&#33;<script>x()</script>")).toBe("Love the colours & light!\nReally!");
    expect(htmlToText("<p>one</p><p>two &lt;3</p>")).toBe("one\ntwo <3");
    expect(htmlToText(null)).toBe("");
  });

  it("shortens by characters, not bytes or UTF-16 units", () => {
    expect(shorten("🦊🦊🦊🦊", 3)).toBe("🦊🦊…");
    expect(shorten("short", 10)).toBe("short");
  });
});
