// How a digest and an alert are laid out for Discord and ntfy: links to the dashboard's item pages, text
// from the service shown as text (no markdown, no pings), Discord's limits kept however big the digest, a
// count added by a later section still shown, and ntfy's body kept under its 4096-byte limit.
import { describe, expect, it } from "vitest";
import { digestEmbed, discordMessage } from "../../src/digest/deliver/discord-message.ts";
import { fitText, ntfyBody, ntfyEndpoint } from "../../src/digest/deliver/ntfy.ts";
import { renderDigest } from "../../src/digest/render.ts";
import type { DeviationRef, DigestData, OutgoingMessage } from "../../src/digest/types.ts";
import { SAMPLE_DIGEST } from "../../scripts/sample-digest.ts";
import { discordProblems } from "../helpers/channel-stand-ins.ts";

const PUBLIC_URL = "https://dvault.example.org";

function digestMessage(data: DigestData): OutgoingMessage {
  const key = "dvault-digest-discord-20261102T070000Z-20261103T070000Z";
  const rendered = renderDigest(data, { timezone: "UTC", idempotencyKey: key });
  return {
    kind: "digest",
    idempotencyKey: key,
    messageId: `<${key}@example.org>`,
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
    payload: {},
    fileBase: key,
    date: data.generatedAt,
    digest: data,
  };
}

/** A digest far past every limit: 200 faved works with long titles, 40 counts, 300 new works. */
function hugeDigest(): DigestData {
  const dev = (i: number): DeviationRef => ({
    deviationid: `dev-${i}`,
    title: `A very long title that goes on and on ${"and on ".repeat(40)}${i}`,
    url: `https://www.deviantart.com/a/art/x-${i}`,
    sha256: null,
    thumbUrl: `${PUBLIC_URL}/thumb/s/${String(i).padStart(64, "0")}.webp`,
    archived: "original",
    isMature: false,
    removedReason: null,
  });
  const faves = Array.from({ length: 200 }, (_, i) => ({ account: "mira", deviation: dev(i), people: 200 - i, names: [], latestAt: null }));
  const items = Array.from({ length: 300 }, (_, i) => ({ account: "mira", artist: "artist", deviation: dev(1000 + i), publishedAt: null, type: "image" }));
  const extra = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`laterSection${i}`, i + 1]));
  return {
    ...SAMPLE_DIGEST,
    feedback: { ...SAMPLE_DIGEST.feedback, faves, favedWorks: faves.length },
    deviations: { items, total: 300 },
    counts: { ...SAMPLE_DIGEST.counts, ...extra },
  };
}

describe(discordMessage.name, () => {
  it("lays a digest out as one embed: subject, counts as fields, top items linking to the dashboard, a thumbnail", () => {
    const body = discordMessage(digestMessage(SAMPLE_DIGEST), { publicUrl: PUBLIC_URL, timezone: "UTC" });
    expect(discordProblems(body)).toEqual([]);
    expect(body.allowed_mentions).toEqual({ parse: [] });
    const embed = body.embeds?.[0];
    expect(embed?.fields.slice(0, 3)).toEqual([
      { name: "Faves", value: "17", inline: true },
      { name: "Comments", value: "2", inline: true },
      { name: "New watchers", value: "3", inline: true },
    ]);
    expect(embed?.description.split("\n")[0]).toBe(`♥ [“Lantern Harbour at Dusk”](${PUBLIC_URL}/item/dev-1): 12 faves`);
    // A title is text: its markdown and markup characters are escaped.
    expect(embed?.description).toContain('“\\<script\\>alert\\("hi"\\)\\</script\\> Night Market”');
    // The sample's thumbnails are data: URIs, which Discord cannot show: none is sent.
    expect(embed?.thumbnail).toBeUndefined();
  });

  it("keeps a huge digest within Discord's limits, and shows counts it does not know by their key", () => {
    const embed = digestEmbed(digestMessage(hugeDigest()), hugeDigest(), { publicUrl: PUBLIC_URL, timezone: "UTC" });
    expect(discordProblems({ embeds: [embed] })).toEqual([]);
    expect(embed.fields).toHaveLength(25);
    expect(embed.fields).toContainEqual({ name: "Later section0", value: "1", inline: true });
    expect(embed.thumbnail?.url).toBe(`${PUBLIC_URL}/thumb/s/${"0".repeat(64)}.webp`);
  });

  it("sends an alert as a short message within 2000 characters, without a service's @everyone pinging anyone", () => {
    const message: OutgoingMessage = {
      ...digestMessage(SAMPLE_DIGEST),
      kind: "alert",
      subject: "dvault alert: account “mira” needs re-authorization",
      alert: { kind: "needs_reauth", title: "t", body: `@everyone ${"x".repeat(3000)}`, command: "dvault auth login --account mira", reminder: false },
    };
    const body = discordMessage(message, { publicUrl: undefined, timezone: "UTC" });
    expect(discordProblems(body)).toEqual([]);
    expect(body.embeds).toBeUndefined();
    expect(body.content?.length).toBeLessThanOrEqual(2000);
    expect(body.allowed_mentions).toEqual({ parse: [] });
  });

  it("cuts text between characters, never inside one: an emoji at a limit is kept whole or left out", () => {
    const emoji = "\u{1F338}".repeat(1200);
    const [first, ...others] = SAMPLE_DIGEST.feedback.comments;
    const data: DigestData = { ...SAMPLE_DIGEST, feedback: { ...SAMPLE_DIGEST.feedback, comments: [{ ...first!, body: emoji }, ...others] } };
    const digest = discordMessage(digestMessage(data), { publicUrl: PUBLIC_URL, timezone: "UTC" });
    expect(digest.embeds?.[0]?.description).toContain(`${"\u{1F338}".repeat(69)}…`);
    // An alert's text cut at 2000 code units, one of the two bodies at an odd place among the emoji.
    const alerts = [emoji, `x${emoji}`].map((body) =>
      discordMessage(
        { ...digestMessage(SAMPLE_DIGEST), kind: "alert", alert: { kind: "source_failing", title: "t", body, command: null, reminder: false } },
        { publicUrl: undefined, timezone: "UTC" },
      ),
    );
    for (const body of [digest, ...alerts]) {
      expect(discordProblems(body)).toEqual([]);
      // A lone half of a surrogate pair is no character: JSON carries it as an escape that strict parsers refuse.
      expect(JSON.stringify(body)).not.toMatch(/\\ud[89a-f][0-9a-f]{2}/);
    }
    for (const alert of alerts) expect(alert.content).toMatch(/\u{1F338}…$/u);
  });
});

describe(ntfyBody.name, () => {
  it("publishes to the topic at the server's root, within ntfy's 4096 bytes, a tap opening the dashboard", () => {
    expect(ntfyEndpoint("https://ntfy.example.org/base/dvault-me")).toEqual({ server: "https://ntfy.example.org/base/", topic: "dvault-me" });
    const body = ntfyBody(digestMessage(hugeDigest()), "dvault-me", PUBLIC_URL);
    expect(body).toMatchObject({ topic: "dvault-me", priority: 3, click: `${PUBLIC_URL}/`, tags: ["inbox_tray", "dvault"] });
    expect(Buffer.byteLength(body.message as string)).toBeLessThanOrEqual(4096);
    expect(body.message as string).toMatch(/\n… the rest is in the dashboard\.\nDigest dvault-digest-discord-20261102T070000Z-20261103T070000Z$/);
    // Cut at a line, counted in UTF-8 bytes (ä is two): 32 lines of 3 bytes, less the last newline, and the note.
    const cut = fitText("ä\n".repeat(3000), 100, "…");
    expect(cut).toBe(`${"ä\n".repeat(32)}…`);
    expect(Buffer.byteLength(cut)).toBe(99);
  });
});
