// The shapes a digest is made of: what collect.ts reads from the mirror, render.ts turns into a message
// and the webhook sends as JSON. Service-provided strings are kept raw here; render.ts escapes them.
import type { DownloadsPause } from "../coord/downloads-pause.ts";
import type { DeliveryProblem, DeliveryReceipt, DigestCounts } from "../db/digest.repository.ts";
import type { NotArchivable } from "../text/not-archivable.ts";
import type { DigestChannel } from "../config/digest.ts";

export type { DigestChannel };
// The shapes the digests table keeps are the repository's own (src/db/digest.repository.ts).
export type { DeliveryProblem, DeliveryReceipt, DigestCounts };

/** (start, end]: what dvault first saw after `start` and up to `end`. */
export type DigestWindow = { start: Date; end: Date };

export type DeviationRef = {
  deviationid: string | null;
  title: string | null;
  /** The deviation's page on the service (never a signed CDN URL). */
  url: string | null;
  /** sha256 of the stored file the thumbnail is made from; null when the archive holds none. */
  sha256: string | null;
  /**
   * The thumbnail as the channel shows it (digest-images.ts): `cid:` for SMTP, a file beside the HTML for the
   * file channel, the dashboard's /thumb/s/ URL for the webhook. Never the service's signed CDN URL, which
   * stops working within hours; null shows a quiet placeholder.
   */
  thumbUrl: string | null;
  /** A stored file: "original" (downloads row done) or "reduced" (a degraded rendition); null when not archived. */
  archived: "original" | "reduced" | null;
  isMature: boolean;
  /** Set when the service reports it gone. */
  removedReason: string | null;
};

export type FaveGroup = { account: string; deviation: DeviationRef; people: number; names: string[]; latestAt: Date | null };

export type CommentItem = {
  account: string;
  kind: "comment" | "reply";
  author: string | null;
  /** Plain text (the service's HTML reduced to text). */
  body: string;
  postedAt: Date | null;
  deviation: DeviationRef | null;
};

export type WatcherItem = { account: string; username: string; usericon: string | null; at: Date };

export type MentionItem = { account: string; type: string | null; by: string | null; body: string | null; deviation: DeviationRef | null; at: Date | null };

/** Notifications of other kinds (badges, collections, journals...), counted by type. */
export type NotificationGroup = { account: string; box: string; type: string; count: number; latestAt: Date | null };

export type NoteItem = { account: string; noteid: string; sender: string | null; subject: string | null; preview: string | null; sentAt: Date | null };

export type NewDeviation = { account: string; artist: string | null; deviation: DeviationRef; publishedAt: Date | null; type: string | null };

export type ChangeItem = {
  account: string;
  /**
   * artist_unavailable: the service answers the artist as suspended, deactivated or not found (`reason`);
   * favourite_removed: a favourite gone upstream; work_removed: one of the account's own works, or a tracked
   * artist's, found deleted or unavailable upstream (docs/service-behaviour.md#deleted-deviation-lookup).
   */
  kind: "artist_unavailable" | "favourite_removed" | "work_removed";
  /** The unavailable artist, or the removed work's artist. */
  username: string | null;
  deviation: DeviationRef | null;
  /** removed_reason: artist_suspended | artist_deactivated | artist_not_found, or deleted | unavailable | access_lost. */
  reason: string | null;
  at: Date;
  /**
   * For an artist: how the account knows them, and how many of their works the archive keeps. For a removed
   * work: whose it is ("own", or "tracked").
   */
  relation?: "watching" | "tracked" | "favourites" | "own" | null;
  works?: number | null;
};

export type AccountHealth = {
  name: string;
  state: string;
  reason: string | null;
  since: Date | null;
  /** Age of the refresh token in days, when known. */
  refreshAgeDays: number | null;
  /** What to run: always `dvault auth login --account <name>`. */
  command: string;
  problem: "needs_reauth" | "revoked" | "refresh_token_old" | "expiring";
};

export type SourceHealth = {
  account: string;
  source: string;
  key: string;
  result: string | null;
  error: string | null;
  unavailable: string | null;
  lastRunAt: Date | null;
  /** For an incomplete source: what its gaps say is missing, and why. */
  missing: string[];
};

export type DiskHealth = { path: string; freeBytes: number; totalBytes: number; low: boolean } | { path: string; error: string };

/**
 * cause: "disk" (almost full), "archive_link" (a folder of the archive leads outside it) or "storage" (a folder or
 * the bucket refuses files: src/storage/storage-fault.ts); absent = disk.
 */
export type DownloadsPaused = DownloadsPause;

/** The headline of a pause, for the alert's title and the digest's health line (without a final period). */
export function pausedHeadline(cause: DownloadsPaused["cause"]): string {
  switch (cause) {
    case "archive_link":
      return "downloads are paused: the archive contains a link that points outside it";
    case "storage":
      return "downloads are paused: the archive refuses files (a folder or the bucket)";
    default:
      return "downloads are paused: the archive's disk is almost full";
  }
}

export type OpenAlert = { kind: string; subject: string; title: string; openedAt: Date };

export type Health = {
  accounts: AccountHealth[];
  /** Sources whose last run failed. */
  failingSources: SourceHealth[];
  /** Sources (or parts) the service no longer offers: dvault works around them; listed for information. */
  unavailableSources: SourceHealth[];
  /** Sources whose listings disagree or could not all be reached or read: what is missing, with counts. */
  incompleteSources: SourceHealth[];
  /** Answers of the service that could not be read and were skipped in the window. */
  unreadable: { count: number; lastSeenAt: Date | null };
  deferredDownloads: { count: number; oldest: Date | null };
  /** Originals in the archive that `dvault import` adopted (each one a download the allowance never paid for). */
  importedOriginals: number;
  downloadsPaused: DownloadsPaused;
  deliveries: DeliveryProblem[];
  disk: DiskHealth;
  /** Open incidents the sections above don't already show (worker heartbeats). */
  alerts: OpenAlert[];
};

export type DigestData = {
  window: DigestWindow;
  generatedAt: Date;
  /** Accounts the digest covers (by local name) and whether their initial sync has completed. */
  accounts: Array<{ name: string; username: string | null; baselineComplete: boolean }>;
  feedback: {
    /** The most faved works of the window (a page of them). */
    faves: FaveGroup[];
    /** Faves of the window in all, on every work, not only those in `faves`. */
    favesTotal: number;
    /** Works faved in the window in all (`faves` shows the first of them). */
    favedWorks: number;
    comments: CommentItem[];
    commentsTotal: number;
    /** New watchers (a page of them); `watchersTotal` counts them all. */
    watchers: WatcherItem[];
    watchersTotal: number;
    other: NotificationGroup[];
  };
  mentions: MentionItem[];
  mentionsTotal: number;
  notes: { unread: NoteItem[]; total: number; olderUnread: number };
  deviations: { items: NewDeviation[]; total: number };
  changes: ChangeItem[];
  health: Health;
  /**
   * What the archive lists but could not archive in full, and why (src/text/not-archivable.ts): a standing
   * count, shown in every digest while nonzero, never news that makes a window worth sending. Absent in
   * digests built without it (a hand-made fixture); renderers then show no section.
   */
  notArchivable?: NotArchivable;
  counts: DigestCounts;
};

/** A thumbnail a message carries: an inline part (`cid`) for SMTP, a file beside the HTML for the file channel. */
export type DigestImage = { cid: string; fileName: string; contentType: string; bytes: Buffer };

/** What a channel sends: one message in every format, with its stable identity. */
export type OutgoingMessage = {
  kind: "digest" | "alert";
  /** Stable per (channel, window) for a digest, per notification for an alert: the same on every retry. */
  idempotencyKey: string;
  /** RFC 5322 Message-ID with angle brackets, derived from the idempotency key. */
  messageId: string;
  subject: string;
  html: string;
  text: string;
  /** The webhook's JSON body (besides type, id and sentAt). */
  payload: Record<string, unknown>;
  /** File name without extension for the file channel. */
  fileBase: string;
  date: Date;
  /** The thumbnails the HTML refers to (`cid:` or relative file names); none for the webhook. */
  images?: DigestImage[];
  /** What the message is about, for the channels that lay it out themselves (ntfy, Discord). */
  digest?: DigestData;
  alert?: AlertSummary;
  /** SMTP recipients an earlier attempt of this message reached while the server deferred the others: not sent it again. */
  reached?: readonly string[];
};

/** An alert as the channels that lay it out themselves show it. */
export type AlertSummary = { kind: string; title: string; body: string; command: string | null; reminder: boolean };

/** What a channel reports after a delivery it considers done. */

export type Deliverer = {
  channel: DigestChannel;
  /** Throws when the message was not accepted; the caller retries with backoff. */
  deliver(message: OutgoingMessage): Promise<DeliveryReceipt>;
  close?(): Promise<void>;
};
