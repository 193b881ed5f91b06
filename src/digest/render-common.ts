// What the digest's HTML, its plain-text twin and the alerts share: the palette, the subject and summary
// lines, times in the reader's zone, which links are allowed, and the sentences for changes and health.
import { formatBytes } from "../text/bytes.ts";
import { raw, type SafeHtml } from "../text/html.ts";
import { clean } from "./text.ts";
import { plural } from "../text/plural.ts";
import { type ChangeItem, type DeviationRef, type DigestCounts, type DigestData, type Health, pausedHeadline } from "./types.ts";

export type RenderedMessage = { subject: string; html: string; text: string; preheader: string };

export type RenderOptions = {
  /** IANA zone for the times shown (DVAULT_DIGEST_TZ). */
  timezone: string;
  /** Shown small in the footer, so a duplicate delivery can be recognised. */
  idempotencyKey?: string;
  /** "preview": says that nothing was sent. */
  mode?: "send" | "preview";
};

// ---- palette and type (inline styles: what survives Gmail, Outlook and Apple Mail) -----------------------

const FONT = `-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif`;
export const C = {
  page: "#eceee9",
  card: "#ffffff",
  border: "#dde2da",
  ink: "#1d2b26",
  muted: "#68766f",
  faint: "#98a39d",
  band: "#17312b",
  bandInk: "#e6f2ec",
  bandMuted: "#9fc2b3",
  accent: "#36b37e",
  accentSoft: "#e7f5ee",
  quote: "#f5f7f4",
  okInk: "#1e7a46",
  okBg: "#e6f5ec",
  warnInk: "#8a5a00",
  warnBg: "#fff3d6",
  badInk: "#a4271b",
  badBg: "#fdecea",
  link: "#1f6f55",
};

/** The inline style of a run of text: dvault's own CSS, so markup (not text) inside html``. */
export const text = (size: number, color: string, weight = 400, extra = ""): SafeHtml =>
  raw(`font-family:${FONT};font-size:${size}px;line-height:1.45;color:${color};font-weight:${weight};${extra}`);

// ---- counts, subject, times --------------------------------------------------------------------------

const COUNT_LABELS: Array<[keyof DigestCounts, string, string]> = [
  ["faves", "fave", "faves"],
  ["comments", "comment", "comments"],
  ["watchers", "new watcher", "new watchers"],
  ["mentions", "mention", "mentions"],
  ["notifications", "notification", "notifications"],
  ["notes", "unread note", "unread notes"],
  ["deviations", "new deviation", "new deviations"],
  ["changes", "change", "changes"],
];

function summaryParts(counts: DigestCounts): string[] {
  const parts = COUNT_LABELS.filter(([key]) => counts[key] > 0).map(([key, one, many]) => plural(counts[key], one, many));
  if (counts.problems > 0) parts.push(`${counts.problems} ${counts.problems === 1 ? "needs" : "need"} attention`);
  return parts;
}

/**
 * Every count above zero with a label ("Faves", "Need attention"), in the subject's order; a count this list
 * does not know yet (a section added later) still shows, under its key in words.
 */
export function countEntries(counts: DigestCounts): Array<{ key: string; count: number; label: string }> {
  const known = new Map<string, string>(COUNT_LABELS.map(([key, , many]) => [key, many]));
  known.set("problems", "need attention");
  const keys = [...known.keys(), ...Object.keys(counts).filter((k) => !known.has(k))];
  return keys.flatMap((key) => {
    const count = (counts as Record<string, unknown>)[key];
    if (typeof count !== "number" || count <= 0) return [];
    const label =
      known.get(key) ??
      key
        .replace(/[_-]+/g, " ")
        .replace(/([a-z])([A-Z])/g, "$1 $2")
        .toLowerCase();
    return [{ key, count, label: label.charAt(0).toUpperCase() + label.slice(1) }];
  });
}

export function summaryLine(counts: DigestCounts): string {
  return summaryParts(counts).join(", ");
}

export function digestSubject(counts: DigestCounts, end: Date, timezone: string): string {
  const day = new Intl.DateTimeFormat("en-GB", { timeZone: timezone, day: "numeric", month: "short" }).format(end);
  const parts = summaryParts(counts);
  return `dvault digest ${day}: ${parts.length ? parts.join(", ") : "nothing new"}`;
}

export function formatTime(at: Date | null | undefined, tz: string, withYear = false): string {
  if (!at) return "";
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: tz,
    day: "numeric",
    month: "short",
    ...(withYear ? { year: "numeric" } : {}),
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).format(at);
}

export function windowLabel(data: DigestData, tz: string): string {
  return `${formatTime(data.window.start, tz)} – ${formatTime(data.window.end, tz, true)} (${tz})`;
}

/** Only the service's own pages are linked: http(s) URLs, escaped. */
export function safeUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.toString() : null;
  } catch {
    return null;
  }
}

export const title = (d: DeviationRef | null | undefined) => (d?.title ? clean(d.title) : "an untitled deviation");
export const name = (s: string | null | undefined) => (s ? clean(s) : "someone");

const multiCache = new WeakMap<DigestData, boolean>();

/** Items are labelled with their account only when the news comes from more than one account. */
export function multiAccount(data: DigestData): boolean {
  let multi = multiCache.get(data);
  if (multi === undefined) {
    const f = data.feedback;
    const accounts = new Set(
      [...f.faves, ...f.comments, ...f.watchers, ...f.other, ...data.mentions, ...data.notes.unread, ...data.deviations.items, ...data.changes].map(
        (i) => i.account,
      ),
    );
    multi = accounts.size > 1;
    multiCache.set(data, multi);
  }
  return multi;
}

/** Watchers by account (one group when the digest is about one account). */
export function watchersByAccount(data: DigestData): Array<[string | null, string[]]> {
  if (!multiAccount(data)) return data.feedback.watchers.length ? [[null, data.feedback.watchers.map((w) => clean(w.username))]] : [];
  const groups = new Map<string, string[]>();
  for (const w of data.feedback.watchers) groups.set(w.account, [...(groups.get(w.account) ?? []), clean(w.username)]);
  return [...groups.entries()];
}

export function namesList(names: string[], total: number): string {
  const shown = names.slice(0, 4).map(name);
  const rest = total - shown.length;
  return rest > 0 ? `${shown.join(", ")} and ${plural(rest, "other")}` : shown.join(", ").replace(/, ([^,]*)$/, " and $1");
}

const REMOVED_WORDS: Record<string, string> = {
  deleted: "was deleted by its artist",
  unavailable: "is no longer available on DeviantArt (refused without being said deleted)",
  access_lost: "is no longer visible to you",
};

/** The account's own works, as the service answered about them (docs/service-behaviour.md#deleted-deviation-lookup). */
const OWN_REMOVED_WORDS: Record<string, string> = {
  deleted: "was deleted on DeviantArt",
  unavailable: "is no longer available on DeviantArt (refused without being said deleted)",
};

/** What the service answered about an artist (docs/service-behaviour.md#user-error-codes). */
const ARTIST_WORDS: Record<string, string> = {
  artist_suspended: "is suspended",
  artist_deactivated: "deactivated their account",
  artist_not_found: "is no longer found under that name (renamed, deactivated or deleted)",
};

const RELATION_WORDS: Record<string, string> = {
  watching: "You were watching them.",
  tracked: "You track them.",
  favourites: "Some of your favourites are theirs.",
};

export function changeSentence(c: ChangeItem): { lead: string; rest: string } {
  if (c.kind === "artist_unavailable") {
    const keeps = c.works ? ` Your archive keeps ${plural(c.works, "work")} of theirs; they come back if the account does.` : "";
    const what = ARTIST_WORDS[c.reason ?? ""] ?? "is unavailable";
    return { lead: name(c.username), rest: `${what}. ${RELATION_WORDS[c.relation ?? ""] ?? ""}${keeps}`.replace(/\s+/g, " ").trim() };
  }
  if (c.kind === "work_removed" && c.relation === "own") {
    return { lead: `“${title(c.deviation)}”,`, rest: `one of your works, ${OWN_REMOVED_WORDS[c.reason ?? ""] ?? "was removed"}.` };
  }
  const what = REMOVED_WORDS[c.reason ?? ""] ?? "was removed";
  const whose = c.kind === "work_removed" ? "an artist you track" : "one of your favourites";
  return { lead: `“${title(c.deviation)}”`, rest: `by ${name(c.username)}, ${whose}, ${what}.` };
}

/** Whether a change is about a work, whose line says if the archive keeps it. */
export function changeKeepsWork(c: ChangeItem): boolean {
  return c.kind !== "artist_unavailable";
}

export type HealthLine = { level: "bad" | "warn" | "info" | "ok"; head: string; detail?: string; command?: string };

export function healthLines(h: Health, tz: string): HealthLine[] {
  const lines: HealthLine[] = [];
  for (const a of h.accounts) {
    if (a.problem === "needs_reauth" || a.problem === "revoked") {
      lines.push({
        level: "bad",
        head: `Account “${clean(a.name)}” needs re-authorization; its sync is paused.`,
        ...(a.reason ? { detail: clean(a.reason) } : {}),
        command: a.command,
      });
    } else if (a.problem === "refresh_token_old") {
      lines.push({
        level: "warn",
        head: `Account “${clean(a.name)}”: its refresh token is ${a.refreshAgeDays} days old; the service ends it at about 90.`,
        detail: "Log in again before then to keep syncing without a gap.",
        command: a.command,
      });
    } else {
      lines.push({
        level: "warn",
        head: `Account “${clean(a.name)}” will need a new login soon.`,
        ...(a.reason ? { detail: clean(a.reason) } : {}),
        command: a.command,
      });
    }
  }
  for (const s of h.failingSources) {
    lines.push({
      level: "bad",
      head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is failing.`,
      detail: `${s.error ? clean(s.error) : "no reason recorded"}${s.lastRunAt ? ` · last run ${formatTime(s.lastRunAt, tz)}` : ""}`,
    });
  }
  for (const d of h.deliveries) {
    lines.push({
      level: "bad",
      head: `The ${d.channel} digest for ${formatTime(d.windowStart, tz)} – ${formatTime(d.windowEnd, tz)} could not be delivered (${plural(d.attempts, "attempt")}).`,
      detail: `${d.error ? clean(d.error) : "unknown error"} · this digest covers that period too.`,
    });
  }
  if (h.downloadsPaused.paused) {
    lines.push({
      level: "bad",
      head: `${capitalise(pausedHeadline(h.downloadsPaused.cause))}.`,
      ...(h.downloadsPaused.reason ? { detail: clean(h.downloadsPaused.reason) } : {}),
    });
  }
  if ("error" in h.disk) lines.push({ level: "warn", head: `Could not read the free space of ${h.disk.path}.`, detail: h.disk.error });
  else if (h.disk.low)
    lines.push({ level: "bad", head: `Low disk space: ${formatBytes(h.disk.freeBytes)} free of ${formatBytes(h.disk.totalBytes)}.`, detail: h.disk.path });
  for (const a of h.alerts) lines.push({ level: "bad", head: clean(a.title), detail: `since ${formatTime(a.openedAt, tz)}` });
  if (h.deferredDownloads.count > 0) {
    lines.push({
      level: "info",
      head: `${plural(h.deferredDownloads.count, "original download")} deferred by the weekly quota.`,
      detail: "They continue on their own when the next allowance starts.",
    });
  }
  if (h.importedOriginals > 0) {
    lines.push({
      level: "info",
      head: `${plural(h.importedOriginals, "original")} came from an import.`,
      detail: "Adopted from a folder on disk (dvault import gallery-dl): no download allowance was spent on them.",
    });
  }
  for (const s of h.unavailableSources) {
    lines.push({
      level: "info",
      head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is partly unavailable upstream.`,
      detail: clean(s.unavailable ?? ""),
    });
  }
  for (const s of h.incompleteSources) {
    lines.push({
      level: "warn",
      head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is incomplete: some of it could not be reached.`,
      ...(s.missing.length ? { detail: s.missing.map(clean).join(" · ") } : {}),
    });
  }
  if (h.unreadable.count > 0) {
    lines.push({
      level: "warn",
      head: `${plural(h.unreadable.count, "answer")} of the service could not be read and ${h.unreadable.count === 1 ? "was" : "were"} skipped.`,
      detail: "Each is kept with its raw JSON; dvault status lists them. Everything else was archived.",
      command: "dvault status",
    });
  }
  if (!("error" in h.disk) && !h.disk.low)
    lines.push({ level: "ok", head: `Disk: ${formatBytes(h.disk.freeBytes)} free of ${formatBytes(h.disk.totalBytes)}.`, detail: h.disk.path });
  return lines;
}

export function zero(): DigestCounts {
  return { faves: 0, comments: 0, watchers: 0, mentions: 0, notifications: 0, notes: 0, deviations: 0, changes: 0, problems: 0 };
}

export function headline(c: DigestCounts): string {
  const news = c.faves + c.comments + c.watchers + c.mentions + c.notifications + c.notes + c.deviations + c.changes;
  if (news === 0 && c.problems === 0) return "A quiet day in your archive";
  if (news === 0) return `Your archive needs you: ${plural(c.problems, "thing")} to look at`;
  const bits: string[] = [];
  if (c.faves) bits.push(plural(c.faves, "fave"));
  if (c.comments) bits.push(plural(c.comments, "comment"));
  if (c.deviations) bits.push(plural(c.deviations, "new work"));
  if (c.notes && bits.length < 3) bits.push(plural(c.notes, "unread note"));
  if (c.watchers && bits.length < 3) bits.push(plural(c.watchers, "new watcher"));
  if (bits.length === 0) bits.push(summaryLine({ ...c, problems: 0 }));
  return `${bits.slice(0, 3).join(", ")} since last time`;
}

export function archivedText(d: DeviationRef | null | undefined): string {
  return d?.archived === "original" ? " [archived]" : d?.archived === "reduced" ? " [archived, reduced]" : "";
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
