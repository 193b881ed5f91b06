// `dvault track import`: decides for every entry of a list whether it is added, skipped (already tracked, named
// twice in the file, or the account's own user) or could not be resolved, optionally asks the service whether the
// new users exist, and adds the rest in one transaction, batch by batch as the list is read. Running it again adds
// nothing.
import type { DaClient } from "../api/client.ts";
import type { AccountRow } from "../db/account.repository.ts";
import type { PgPool } from "../db/connect.ts";
import { mentionKey, TrackedUserRepository, type TrackUserInput } from "../db/tracked-user.repository.ts";
import { withTransaction } from "../db/with-transaction.ts";
import type { TrackListSource } from "./files.ts";
import { quoted, type TrackEntry, type TrackList, type TrackListFormat, type Unresolved } from "./parse.ts";

export type AddedUser = { account: string; username: string; where: string };
export type SkippedUser = { account: string; username: string; where: string; reason: "already tracked" | "duplicate in file" | "the account's own user" };
export type ImportReport = {
  format: TrackListFormat;
  dryRun: boolean;
  resolved: boolean;
  /** How many entries went each way: the lists below hold the first LISTED_MAX of each. */
  counts: { added: number; skipped: number; unresolved: number };
  added: AddedUser[];
  skipped: SkippedUser[];
  unresolved: Unresolved[];
};

/** Entries of each kind a report lists (the counts are of all): a list of millions is reported in bounded memory. */
export const LISTED_MAX = 1000;

export type ImportListOptions = {
  pool: PgPool;
  /** A parsed list, or one being read batch by batch (src/track-lists/files.ts). */
  list: TrackList | TrackListSource;
  /** The user accounts (kind "user"). */
  accounts: readonly AccountRow[];
  /** --account: every entry goes to it, whatever a JSON entry says. */
  forcedAccount?: AccountRow;
  /** The account of entries that name none (track add's rule); throws a UserError when there is no single one. */
  defaultAccount: () => Promise<AccountRow>;
  /** When given, new users are looked up (user.whois) with the account's client; unknown ones are not added. */
  clientFor?: (account: AccountRow) => Promise<DaClient>;
  dryRun: boolean;
  at: Date;
  signal?: AbortSignal;
};

type Planned = { account: AccountRow; entry: TrackEntry; userid: string | null };

/** Names per user.whois call (a user token only: docs/service-behaviour.md); small requests keep a refusal cheap. */
const WHOIS_BATCH = 50;
/** Rows per INSERT: a few hundred keeps each statement's parameter arrays small. */
const INSERT_BATCH = 500;

/**
 * Batch by batch, in one transaction (a dry run's holds only the temporary table of names met): each entry is
 * resolved to its account, skipped when the file named it before or the account tracks it, checked with the
 * service when asked, and added. Memory stays bounded whatever the list's length: the names met are in PostgreSQL.
 */
export async function importTrackList(o: ImportListOptions): Promise<ImportReport> {
  const report: ImportReport = {
    format: o.list.format,
    dryRun: o.dryRun,
    resolved: !!o.clientFor,
    counts: { added: 0, skipped: 0, unresolved: 0 },
    added: [],
    skipped: [],
    unresolved: [],
  };
  const batches = "batches" in o.list ? o.list.batches : [o.list];
  await withTransaction(o.pool, async (tx) => {
    const repo = new TrackedUserRepository(tx);
    const step = batchStep(o, repo, report);
    for await (const batch of batches) {
      o.signal?.throwIfAborted();
      for (const u of batch.unresolved) note(report, "unresolved", u);
      let planned = await step(batch.entries);
      if (o.clientFor) planned = await keepExisting(planned, o.clientFor, report);
      for (const p of planned) note(report, "added", { account: p.account.name, username: p.entry.username, where: p.entry.where });
      if (!o.dryRun) await insert(repo, planned, o.at);
    }
  });
  return report;
}

/** What a batch's entries come to: the users to add, the others noted in the report as skipped or unresolved. */
function batchStep(o: ImportListOptions, repo: TrackedUserRepository, report: ImportReport): (entries: readonly TrackEntry[]) => Promise<Planned[]> {
  const byName = new Map(o.accounts.map((a) => [a.name, a]));
  let fallback: Promise<AccountRow> | undefined;
  return async (entries) => {
    const named: Array<{ account: AccountRow; entry: TrackEntry; key: string }> = [];
    for (const entry of entries) {
      const account = o.forcedAccount ?? (entry.options.account !== undefined ? byName.get(entry.options.account) : await (fallback ??= o.defaultAccount()));
      if (!account) {
        note(report, "unresolved", {
          input: entry.username,
          where: entry.where,
          reason: `no account named "${quoted(entry.options.account ?? "")}" (give --account <name>)`,
        });
        continue;
      }
      named.push({ account, entry, key: mentionKey(account.id, entry.username.toLowerCase()) });
    }
    // First mentions: of this batch, once each, and then of those the ones no earlier batch had.
    const inBatch = new Map<string, (typeof named)[number]>();
    for (const n of named) if (!inBatch.has(n.key)) inBatch.set(n.key, n);
    const first = await repo.firstMentions([...inBatch.values()].map((n) => ({ accountId: n.account.id, name: n.entry.username.toLowerCase() })));
    const tracked = new Map<number, Set<string>>();
    for (const account of new Set([...inBatch.values()].map((n) => n.account))) {
      const names = [...inBatch.values()].filter((n) => n.account === account && first.has(n.key)).map((n) => n.entry.username.toLowerCase());
      tracked.set(account.id, await repo.trackedAmong(account.id, names));
    }
    const planned: Planned[] = [];
    for (const n of named) {
      const base = { account: n.account.name, username: n.entry.username, where: n.entry.where };
      // The account's own user: its own sources archive them already (track-users.ts ownUserRefusal).
      if (isOwnUser(n.account, n.entry)) note(report, "skipped", { ...base, reason: "the account's own user" });
      else if (inBatch.get(n.key) !== n || !first.has(n.key)) note(report, "skipped", { ...base, reason: "duplicate in file" });
      else if (tracked.get(n.account.id)?.has(n.entry.username.toLowerCase())) note(report, "skipped", { ...base, reason: "already tracked" });
      else planned.push({ account: n.account, entry: n.entry, userid: n.entry.options.userid ?? null });
    }
    return planned;
  };
}

/** The entry names the account's own user, by name (usernames are case-insensitive) or by the id a JSON entry carries. */
function isOwnUser(account: AccountRow, entry: TrackEntry): boolean {
  if (entry.options.userid && account.userId) return entry.options.userid === account.userId;
  return entry.username.toLowerCase() === account.username?.toLowerCase();
}

function note<K extends "added" | "skipped" | "unresolved">(report: ImportReport, kind: K, item: ImportReport[K][number]): void {
  report.counts[kind] += 1;
  if (report[kind].length < LISTED_MAX) (report[kind] as Array<ImportReport[K][number]>).push(item);
}

/** Asks the service about the new users in batches; a name it does not return does not exist (or is gone). */
async function keepExisting(planned: Planned[], clientFor: (a: AccountRow) => Promise<DaClient>, report: ImportReport): Promise<Planned[]> {
  const kept: Planned[] = [];
  const accounts = [...new Map(planned.map((p) => [p.account.id, p.account])).values()];
  for (const account of accounts) {
    const client = await clientFor(account);
    const mine = planned.filter((p) => p.account.id === account.id);
    for (let i = 0; i < mine.length; i += WHOIS_BATCH) {
      const batch = mine.slice(i, i + WHOIS_BATCH);
      const { results } = await client.whois(batch.map((p) => p.entry.username));
      const found = new Map(results.map((u) => [u.username.toLowerCase(), u]));
      for (const p of batch) {
        const user = found.get(p.entry.username.toLowerCase());
        if (!user) {
          note(report, "unresolved", { input: p.entry.username, where: p.entry.where, reason: "the service knows no such user" });
          continue;
        }
        // The service's spelling of the name, and its id, which survives a rename.
        kept.push({ ...p, entry: { ...p.entry, username: user.username }, userid: user.userid });
      }
    }
  }
  return kept;
}

async function insert(repo: TrackedUserRepository, planned: readonly Planned[], at: Date): Promise<void> {
  const rows: TrackUserInput[] = planned.map((p) => ({
    accountId: p.account.id,
    username: p.entry.username,
    userid: p.userid,
    tokenKind: p.entry.options.tokenKind ?? "user",
    limitation: p.entry.options.limitation ?? null,
    at,
  }));
  for (let i = 0; i < rows.length; i += INSERT_BATCH) await repo.addTrackedUsers(rows.slice(i, i + INSERT_BATCH));
}
