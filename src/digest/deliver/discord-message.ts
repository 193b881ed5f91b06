// What a Discord webhook receives: a digest as one embed (the subject as its title, each count as a field,
// the top items as links, a thumbnail when DVAULT_PUBLIC_URL says where the dashboard is: a signed link
// that loads without the dashboard's token, src/storage/thumb-link.ts), an alert as a short content message.
// Discord refuses a message past its limits (docs/img/discord-embed.json shows one), so every text is cut
// to its field's size and the embed's total kept under 6000 characters. Mentions are switched off: a
// title or comment from the service must never ping a channel.
import { countEntries, healthLines, name, safeUrl, title } from "../render-common.ts";
import { NOT_ARCHIVABLE_WORDS } from "../../text/not-archivable.ts";
import { plural } from "../../text/plural.ts";
import type { DeviationRef, DigestData, OutgoingMessage } from "../types.ts";

/** discord.com/developers/docs/resources/message#embed-object-embed-limits, as Discord enforces them. */
export const DISCORD_LIMITS = {
  embeds: 10,
  fields: 25,
  total: 6000,
  content: 2000,
  title: 256,
  description: 4096,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
} as const;

export type DiscordEmbed = {
  title: string;
  url?: string;
  description: string;
  color: number;
  fields: Array<{ name: string; value: string; inline: boolean }>;
  thumbnail?: { url: string };
  timestamp: string;
  footer: { text: string };
};

export type DiscordMessage = {
  username: string;
  content?: string;
  embeds?: DiscordEmbed[];
  allowed_mentions: { parse: [] };
};

const GREEN = 0x36b37e;
const RED = 0xa4271b;
/** How many of each kind of item the description lists. */
const TOP = { faves: 3, deviations: 5, comments: 3 } as const;

/**
 * At most `max` UTF-16 units (a string's length, as the limits are counted), with an ellipsis when cut; never between
 * the two halves of an emoji or another character past U+FFFF, which would send a lone half, no character at all.
 */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max - 1;
  const code = text.charCodeAt(end - 1);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end)}…`;
}

/** Text shown as is: Discord's markdown characters escaped, so a title cannot format or fake a link. */
const md = (text: string) => text.replace(/([\\*_~`|[\]()<>])/g, "\\$1");

/** The dashboard's page of the item when DVAULT_PUBLIC_URL is set, else the deviation's page on the service. */
function linkOf(d: DeviationRef, publicUrl: string | undefined): string | null {
  if (publicUrl && d.deviationid) return `${publicUrl}/item/${encodeURIComponent(d.deviationid)}`;
  return safeUrl(d.url);
}

const linked = (d: DeviationRef, publicUrl: string | undefined) => {
  const url = linkOf(d, publicUrl);
  const text = `“${md(title(d))}”`;
  return url ? `[${text}](${url})` : text;
};

/** The top items, one line each, most-faved first; what does not fit is counted, not dropped silently. */
function topLines(data: DigestData, publicUrl: string | undefined): string[] {
  const lines: string[] = [];
  const faves = [...data.feedback.faves].sort((a, b) => b.people - a.people);
  for (const g of faves.slice(0, TOP.faves)) lines.push(`♥ ${linked(g.deviation, publicUrl)}: ${plural(g.people, "fave")}`);
  for (const n of data.deviations.items.slice(0, TOP.deviations)) lines.push(`✦ ${linked(n.deviation, publicUrl)} by ${md(name(n.artist))}`);
  for (const c of data.feedback.comments.slice(0, TOP.comments)) {
    const on = c.deviation ? ` on ${linked(c.deviation, publicUrl)}` : "";
    lines.push(`✎ ${md(name(c.author))}${on}: ${md(cut(c.body.replace(/\s+/g, " ").trim(), 140))}`);
  }
  const shown =
    Math.min(faves.length, TOP.faves) + Math.min(data.deviations.items.length, TOP.deviations) + Math.min(data.feedback.comments.length, TOP.comments);
  const more = data.feedback.favedWorks + data.deviations.total + data.feedback.commentsTotal - shown;
  if (more > 0) lines.push(`…and ${plural(more, "more item")}${publicUrl ? ` in the [dashboard](${publicUrl}/)` : ""}.`);
  return lines;
}

/** The first picture among the items shown: an absolute URL (the dashboard's signed /thumb/ link, src/digest/images.ts). */
function thumbnailOf(data: DigestData): string | undefined {
  const candidates = [...data.feedback.faves.map((f) => f.deviation), ...data.deviations.items.map((n) => n.deviation)];
  return candidates.map((d) => safeUrl(d.thumbUrl)).find((u): u is string => Boolean(u)) ?? undefined;
}

function embedSize(e: DiscordEmbed): number {
  return e.title.length + e.description.length + e.footer.text.length + e.fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
}

export function digestEmbed(message: OutgoingMessage, data: DigestData, opts: { publicUrl: string | undefined; timezone: string }): DiscordEmbed {
  const fields = countEntries(data.counts).map((c) => ({ name: cut(c.label, DISCORD_LIMITS.fieldName), value: String(c.count), inline: true }));
  const attention = healthLines(data.health, opts.timezone)
    .filter((h) => h.level === "bad" || h.level === "warn")
    .map((h) => `• ${md(h.head)}${h.command ? ` \`${h.command.replace(/`/g, "'")}\`` : ""}`);
  if (attention.length) fields.push({ name: "To look at", value: cut(attention.join("\n"), DISCORD_LIMITS.fieldValue), inline: false });
  // What could not be archived stands while it lasts: its counts per reason, the details in status and mail.
  const na = data.notArchivable;
  if (na && na.total > 0) {
    const value = na.byReason.map((r) => `${r.count} ${NOT_ARCHIVABLE_WORDS[r.reason].label}`).join(" · ");
    fields.push({ name: "Not archived in full", value: cut(value, DISCORD_LIMITS.fieldValue), inline: false });
  }
  const lines = topLines(data, opts.publicUrl);
  const embed: DiscordEmbed = {
    title: cut(message.subject, DISCORD_LIMITS.title),
    ...(opts.publicUrl ? { url: `${opts.publicUrl}/` } : {}),
    description: cut(lines.length ? lines.join("\n") : "Nothing new in this window.", DISCORD_LIMITS.description),
    color: data.counts.problems > 0 ? RED : GREEN,
    fields: fields.slice(0, DISCORD_LIMITS.fields),
    timestamp: data.window.end.toISOString(),
    footer: { text: cut(`Digest ${message.idempotencyKey}`, DISCORD_LIMITS.footer) },
  };
  const thumbnail = thumbnailOf(data);
  if (thumbnail) embed.thumbnail = { url: thumbnail };
  // Over the total, the description gives way first (the counts and what needs attention matter more).
  const over = embedSize(embed) - DISCORD_LIMITS.total;
  if (over > 0) embed.description = cut(embed.description, Math.max(1, embed.description.length - over));
  return embed;
}

export function discordMessage(message: OutgoingMessage, opts: { publicUrl: string | undefined; timezone: string }): DiscordMessage {
  const base = { username: "dvault", allowed_mentions: { parse: [] as [] } };
  if (message.kind === "digest" && message.digest) return { ...base, embeds: [digestEmbed(message, message.digest, opts)] };
  const a = message.alert;
  const lines = a
    ? [`**${md(message.subject)}**`, md(a.body), ...(a.command ? [`Run: \`${a.command.replace(/`/g, "'")}\``] : [])]
    : [`**${md(message.subject)}**`, md(message.text)];
  if (opts.publicUrl) lines.push(`<${opts.publicUrl}/>`);
  return { ...base, content: cut(lines.join("\n"), DISCORD_LIMITS.content) };
}
