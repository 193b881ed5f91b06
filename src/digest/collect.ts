// What a digest says, read from the mirror with one query per section (src/db/digest-sections.repository.ts
// decides what is new in a window). The service's own timestamps are shown, never used to decide what is
// new (a late message or a fave on an old work is still news).
import { statfs } from "node:fs/promises";
import path from "node:path";
import { ImportedFileRepository } from "../db/imported-file.repository.ts";
import type { InstallKey } from "../crypto/install-key.ts";
import type { Queryable } from "../db/with-transaction.ts";
import {
  DigestSectionsRepository,
  type AccountHealthRowDb,
  type ChangeRowDb,
  type CommentRowDb,
  type DevColumns,
  type FaveRowDb,
  type MentionRowDb,
  type NewDeviationRowDb,
  type NoteRowDb,
  type SourceHealthRowDb,
} from "../db/digest-sections.repository.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import { collectNotArchivable } from "../db/not-archivable.repository.ts";
import { unreadableAccounts } from "./unreadable-accounts.ts";
import { shorten } from "./text.ts";
import { htmlToText } from "../text/html-to-text.ts";
import type {
  AccountHealth,
  ChangeItem,
  CommentItem,
  DeviationRef,
  DigestCounts,
  DigestData,
  DigestWindow,
  DiskHealth,
  DownloadsPaused,
  FaveGroup,
  Health,
  MentionItem,
  NewDeviation,
  NoteItem,
  NotificationGroup,
  OpenAlert,
  SourceHealth,
  WatcherItem,
} from "./types.ts";

const DAY_MS = 86_400_000;
/** The service ends refresh tokens at about 90 days; dvault warns from 80. */
export const REFRESH_TOKEN_WARN_DAYS = 80;
/** Below this much free space (or 5% of the disk) the archive's disk is reported as low. */
export const LOW_DISK_BYTES = 5 * 2 ** 30;

export type CollectOptions = {
  db: Queryable;
  window: DigestWindow;
  now: Date;
  archiveDir: string;
  /** Whether downloads are paused for disk space (see alerts.ts: downloadsPausedProbe). */
  downloadsPaused?: () => Promise<DownloadsPaused>;
  /** The idempotency key of the digest being built: its own failed attempts are not reported in it. */
  digestKey?: string | null;
  /** Record baselines first (default true); a preview may read without writing. */
  recordBaselines?: boolean;
  /** The key the accounts' tokens are read with (Services.installKey): accounts it cannot read need a login. */
  installKey?: InstallKey;
};

export async function collectDigest(opts: CollectOptions): Promise<DigestData> {
  const { db, window, now } = opts;
  const repo = new DigestRepository(db);
  if (opts.recordBaselines !== false) await repo.recordBaselines(now);
  const sections = new DigestSectionsRepository(db);
  const [accounts, faves, comments, watchers, other, mentions, notes, olderUnread, deviations, changes, health, notArchivable] = await Promise.all([
    sections.listAccounts(),
    sections.listFaves(window),
    sections.listComments(window),
    sections.listWatchers(window),
    sections.listOtherNotifications(window),
    sections.listMentions(window),
    sections.listUnreadNotes(window),
    sections.countOlderUnread(window.start),
    sections.listNewDeviations(window),
    sections.listChanges(window),
    collectHealth(opts, repo, sections),
    collectNotArchivable(db),
  ]);

  const data: Omit<DigestData, "counts"> = {
    window,
    generatedAt: now,
    accounts: accounts.map((a) => ({ name: a.name, username: a.username, baselineComplete: a.baselines >= a.sources && a.sources > 0 })),
    feedback: {
      faves: faves.map(toFave),
      favesTotal: faves[0]?.total_people ?? 0,
      favedWorks: faves[0]?.total_works ?? 0,
      comments: comments.map(toComment),
      commentsTotal: comments[0]?.total ?? 0,
      watchers: watchers.map((r): WatcherItem => ({ account: r.account, username: r.username, usericon: r.usericon, at: r.at })),
      watchersTotal: watchers[0]?.total ?? 0,
      other: other.map((r): NotificationGroup => ({ account: r.account, box: r.box, type: r.type, count: r.count, latestAt: r.latest_at })),
    },
    mentions: mentions.map(toMention),
    mentionsTotal: mentions[0]?.total ?? 0,
    notes: {
      unread: notes.map(
        (r): NoteItem => ({ account: r.account, noteid: r.noteid, sender: r.sender, subject: r.subject, preview: notePreview(r), sentAt: r.ts }),
      ),
      total: notes[0]?.total ?? 0,
      olderUnread,
    },
    deviations: { items: deviations.map(toNewDeviation), total: deviations[0]?.total ?? 0 },
    changes: changes.map(toChange),
    health,
    notArchivable,
  };
  return { ...data, counts: countDigest(data) };
}

export function countDigest(d: Omit<DigestData, "counts">): DigestCounts {
  const h = d.health;
  const problems =
    h.accounts.length +
    h.failingSources.length +
    h.deliveries.length +
    h.alerts.length +
    (h.downloadsPaused.paused ? 1 : 0) +
    ("low" in h.disk && h.disk.low ? 1 : 0);
  return {
    faves: d.feedback.favesTotal,
    comments: d.feedback.commentsTotal,
    watchers: d.feedback.watchersTotal,
    mentions: d.mentionsTotal,
    notifications: d.feedback.other.reduce((n, o) => n + o.count, 0),
    notes: d.notes.total,
    deviations: d.deviations.total,
    changes: d.changes.length,
    problems,
  };
}

/** Nothing new and nothing that needs the owner: such a window sends nothing unless configured to. */
export function isEmptyDigest(counts: DigestCounts): boolean {
  return Object.values(counts).every((n) => n === 0);
}

async function collectHealth(opts: CollectOptions, repo: DigestRepository, sections: DigestSectionsRepository): Promise<Health> {
  const { db, now, window } = opts;
  const [accounts, sources, deferredDownloads, deliveries, alerts, disk, paused, unreadable, importedOriginals] = await Promise.all([
    sections.listAccountHealth(new Date(now.getTime() - REFRESH_TOKEN_WARN_DAYS * DAY_MS)),
    sections.listSourceHealth(),
    sections.countDeferredDownloads(),
    repo.listDeliveryProblems(window.start, opts.digestKey ?? null),
    sections.listOpenAlerts(),
    diskHealth(opts.archiveDir),
    opts.downloadsPaused ? opts.downloadsPaused().catch((): DownloadsPaused => ({ paused: false })) : Promise.resolve<DownloadsPaused>({ paused: false }),
    sections.countUnreadable(window),
    new ImportedFileRepository(db).countImportedOriginals(),
  ]);
  const toSource = (r: SourceHealthRowDb): SourceHealth => ({
    account: r.account,
    source: r.source,
    key: r.key,
    result: r.last_result,
    error: r.last_error,
    unavailable: r.unavailable_reason,
    lastRunAt: r.last_run_at,
    missing: missingOf(r.gaps),
  });
  return {
    accounts: withUnreadable(
      accounts.map((r) => toAccountHealth(r, now)),
      opts.installKey ? await unreadableAccounts(opts.db, opts.installKey) : [],
    ),
    failingSources: sources.filter((r) => r.last_result === "failed").map(toSource),
    unavailableSources: sources.filter((r) => r.last_result !== "failed" && r.unavailable_reason).map(toSource),
    incompleteSources: sources.filter((r) => r.last_result === "incomplete").map(toSource),
    unreadable,
    deferredDownloads,
    importedOriginals,
    downloadsPaused: paused,
    deliveries,
    disk,
    alerts: alerts.map((r): OpenAlert => ({ kind: r.kind, subject: r.subject, title: r.title, openedAt: r.opened_at })),
  };
}

/** Free space of the filesystem holding the archive (its nearest existing parent when not created yet). */
export async function diskHealth(dir: string): Promise<DiskHealth> {
  let probe = path.resolve(dir);
  for (;;) {
    try {
      const s = await statfs(probe);
      const freeBytes = Number(s.bavail) * Number(s.bsize);
      const totalBytes = Number(s.blocks) * Number(s.bsize);
      return { path: dir, freeBytes, totalBytes, low: freeBytes < LOW_DISK_BYTES || (totalBytes > 0 && freeBytes / totalBytes < 0.05) };
    } catch (err) {
      const parent = path.dirname(probe);
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || parent === probe) return { path: dir, error: (err as Error).message };
      probe = parent;
    }
  }
}

function notePreview(r: NoteRowDb): string | null {
  // The body when known (the service's preview is cut short), else the preview.
  const text = htmlToText(r.body) || htmlToText(r.preview);
  return text ? shorten(text.replace(/\s+/g, " "), 200) : null;
}

// ---- rows ---------------------------------------------------------------------------------------------

function devRef(r: DevColumns): DeviationRef {
  return {
    deviationid: r.dev_id,
    title: r.dev_title,
    url: r.dev_url,
    sha256: r.dev_sha256,
    thumbUrl: null,
    archived: r.dev_archived,
    isMature: r.dev_mature ?? false,
    removedReason: r.dev_removed,
  };
}

const toFave = (r: FaveRowDb): FaveGroup => ({ account: r.account, deviation: devRef(r), people: r.people, names: r.names ?? [], latestAt: r.latest_at });

const toComment = (r: CommentRowDb): CommentItem => ({
  account: r.account,
  kind: /^repl/i.test(r.type ?? "") ? "reply" : "comment",
  author: r.author,
  body: shorten(htmlToText(r.body), 400),
  postedAt: r.ts,
  deviation: r.dev_id ? devRef(r) : null,
});

const toMention = (r: MentionRowDb): MentionItem => ({
  account: r.account,
  type: r.type,
  by: r.by,
  body: r.body ? shorten(htmlToText(r.body), 300) : null,
  deviation: r.dev_id ? devRef(r) : null,
  at: r.ts,
});

const toNewDeviation = (r: NewDeviationRowDb): NewDeviation => ({
  account: r.account,
  artist: r.artist,
  deviation: devRef(r),
  publishedAt: r.published_at,
  type: r.type,
});

const toChange = (r: ChangeRowDb): ChangeItem => ({
  account: r.account,
  kind: r.kind,
  username: r.username,
  deviation: r.dev_id ? devRef(r) : null,
  reason: r.reason,
  at: r.at,
  relation: r.relation,
  works: r.works,
});

/** What a source's gaps say is missing, one reason per gap. */
function missingOf(gaps: Record<string, { reason?: string }> | null): string[] {
  return Object.values(gaps ?? {})
    .map((g) => g.reason)
    .filter((r): r is string => typeof r === "string" && r.length > 0);
}

/** The accounts' health with those whose tokens the install's key cannot read as needing a login (in place of a lesser problem). */
function withUnreadable(health: AccountHealth[], unreadable: ReadonlyArray<{ name: string; reason: string }>): AccountHealth[] {
  const lost = new Map(unreadable.map((u) => [u.name, u.reason]));
  const kept = health.filter((a) => !lost.has(a.name));
  const added = [...lost].map(([name, reason]): AccountHealth => {
    return { name, state: "needs_reauth", reason, since: null, refreshAgeDays: null, command: `dvault auth login --account ${name}`, problem: "needs_reauth" };
  });
  return [...kept, ...added].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function toAccountHealth(r: AccountHealthRowDb, now: Date): AccountHealth {
  const refreshAgeDays = r.refresh_issued_at ? Math.floor((now.getTime() - r.refresh_issued_at.getTime()) / DAY_MS) : null;
  const problem: AccountHealth["problem"] =
    r.state === "needs_reauth"
      ? "needs_reauth"
      : r.state === "revoked"
        ? "revoked"
        : refreshAgeDays !== null && refreshAgeDays >= REFRESH_TOKEN_WARN_DAYS
          ? "refresh_token_old"
          : "expiring";
  return {
    name: r.name,
    state: r.state,
    reason: r.state_reason,
    since: r.state_changed_at,
    refreshAgeDays,
    command: `dvault auth login --account ${r.name}`,
    problem,
  };
}
