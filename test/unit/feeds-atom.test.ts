// The Atom renderer on hostile text (markup, quotes, characters XML 1.0 cannot carry): the document stays
// well-formed and a real Atom parser reads back the text as given, minus what XML forbids; and feed tokens
// are scrubbed from log text whatever their shape.
import { parseFeed } from "@rowanmanning/feed-parser";
import { XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { renderAtom, xmlText } from "../../src/http/feeds/atom.ts";
import { arrivalsFeed, feedPath } from "../../src/http/feeds/feed-documents.ts";
import { FEED_TOKEN_RE, feedToken, feedTokenHash, rowToken } from "../../src/http/feeds/feed-token.ts";
import { scrubString } from "../../src/redact.ts";

const HOSTILE = `<script>alert("x")</script> & 'quoted' \u0001\u0008bell\u000b \ud800lone ]]> done`;
const AT = { base: "https://archive.example.org", token: "dvf_TOKEN" };

describe(renderAtom.name, () => {
  it("keeps hostile titles, authors and descriptions as text in a well-formed document", () => {
    const seen = new Date("2026-11-20T10:00:00.000Z");
    const xml = renderAtom(
      arrivalsFeed(
        AT,
        [
          {
            deviationid: "A1B2-<&>",
            title: HOSTILE,
            type: "image",
            artist: `O'Brien "the <b>"`,
            publishedAt: null,
            firstSeenAt: seen,
            summary: `<p>${HOSTILE}</p>`,
            file: null,
          },
        ],
        new Date("2026-11-21T00:00:00.000Z"),
      ),
    );
    expect(XMLValidator.validate(xml)).toBe(true);
    const feed = parseFeed(xml);
    expect(feed.updated?.toISOString()).toBe(seen.toISOString());
    const [item] = feed.items;
    expect(item?.title).toBe(`<script>alert("x")</script> & 'quoted' bell lone ]]> done`);
    expect(item?.authors[0]?.name).toBe(`O'Brien "the <b>"`);
    expect(item?.id).toBe("tag:dvault,2026:deviation:A1B2-%3C%26%3E");
    expect(item?.url).toBe("https://archive.example.org/item/A1B2-%3C%26%3E");
    // The content is HTML dvault wrote, escaped once more as Atom text: the service's markup is text in it
    // (the description's script dropped, the artist's <b> escaped twice), never markup.
    expect(item?.content).not.toContain("alert");
    expect(xml).not.toMatch(/<script|<b>/);
    expect(xml).toContain("the &amp;lt;b&amp;gt;");
  });

  it("dates an empty feed with the clock, and escapes every attribute", () => {
    const now = new Date("2026-11-21T00:00:00.000Z");
    const xml = renderAtom(arrivalsFeed(AT, [], now));
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(parseFeed(xml).updated?.toISOString()).toBe(now.toISOString());
    expect(xmlText(`a"b<c>&'`)).toBe("a&quot;b&lt;c&gt;&amp;&apos;");
  });
});

describe("feed tokens", () => {
  it("derive the same token from the same key and nonce, another from another, and scrub out of log text", () => {
    const key = Buffer.alloc(32, 7);
    const token = feedToken(key, Buffer.from("nonce-1"));
    expect(token).toMatch(FEED_TOKEN_RE);
    expect(feedToken(key, Buffer.from("nonce-1"))).toBe(token);
    expect(feedToken(key, Buffer.from("nonce-2"))).not.toBe(token);
    expect(feedToken(Buffer.alloc(32, 8), Buffer.from("nonce-1"))).not.toBe(token);
    expect(feedTokenHash(token).length).toBe(32);
    // A row made under another secret key still opens (by its hash) but its URL cannot be shown again.
    const row = { nonce: Buffer.from("nonce-1"), tokenSha256: feedTokenHash(token) };
    expect(rowToken(key, row)).toBe(token);
    expect(rowToken(Buffer.alloc(32, 9), row)).toBeUndefined();
    const url = `https://archive.example.org${feedPath(token, { kind: "artist", username: "someone" })}`;
    expect(scrubString(`GET ${url} 200`)).toBe("GET https://archive.example.org/feeds/[redacted]/artists/someone.atom 200");
    expect(scrubString(`token ${token} in prose`)).toBe("token [redacted] in prose");
    expect(scrubString(`{"path":"/feeds/not-a-token-shape/arrivals.atom"}`)).toBe(`{"path":"/feeds/[redacted]/arrivals.atom"}`);
  });
});
