// `dvault track import`: decides for every entry of a parsed list whether it is added, skipped (already tracked,
// or named twice in the file) or could not be resolved, optionally asks the service whether the new users exist,
// and adds the rest in one transaction. Running it again adds nothing.
import type { DaClient } from "../api/client.ts";
import type { AccountRow } from "../db/account.repository.ts";
import type { PgPool } from "../db/connect.ts";
import { TrackedUserRepository, type TrackUserInput } from "../db/tracked-user.repository.ts";
import { withTransaction } from "../db/with-transaction.ts";
import type { TrackEntry, TrackList, TrackListFormat, Unresolved } from "./parse.ts";

export type AddedUser = { account: string; username: string; where: string };
export type SkippedUser = { account: string; username: string; where: string; reason: "already tracked" | "duplicate in file" };
export type ImportReport = {
  format: TrackListFormat;
  dryRun: boolean;
  resolved: boolean;
  added: AddedUser[];
  skipped: SkippedUser[];
  unresolved: Unresolved[];
};

export type ImportListOptions = {
  pool: PgPool;
  list: TrackList;
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
};

type Planned = { account: AccountRow; entry: TrackEntry; userid: string | null };

/** Names per user.whois call (a user token only: docs/service-behaviour.md); small requests keep a refusal cheap. */
const WHOIS_BATCH = 50;
/** Rows per INSERT: a few hundred keeps each statement's parameter arrays small. */
const INSERT_BATCH = 500;

export async function importTrackList(o: ImportListOptions): Promise<ImportReport> {
  const repo = new TrackedUserRepository(o.pool);
  const report: ImportReport = { format: o.list.format, dryRun: o.dryRun, resolved: !!o.clientFor, added: [], skipped: [], unresolved: [...o.list.unresolved] };
  const byName = new Map(o.accounts.map((a) => [a.name, a]));
  const tracked = new Map<number, Set<string>>();
  const seen = new Set<string>();
  let planned: Planned[] = [];
  let fallback: Promise<AccountRow> | undefined;
  for (const entry of o.list.entries) {
    const account = o.forcedAccount ?? (entry.options.account !== undefined ? byName.get(entry.options.account) : await (fallback ??= o.defaultAccount()));
    if (!account) {
      report.unresolved.push({ input: entry.username, where: entry.where, reason: `no account named "${entry.options.account}" (give --account <name>)` });
      continue;
    }
    const key = `${account.id}\u0000${entry.username.toLowerCase()}`;
    const base = { account: account.name, username: entry.username, where: entry.where };
    if (seen.has(key)) {
      report.skipped.push({ ...base, reason: "duplicate in file" });
      continue;
    }
    seen.add(key);
    if ((await trackedBy(repo, tracked, account.id)).has(entry.username.toLowerCase())) {
      report.skipped.push({ ...base, reason: "already tracked" });
      continue;
    }
    planned.push({ account, entry, userid: entry.options.userid ?? null });
  }
  if (o.clientFor) planned = await keepExisting(planned, o.clientFor, report);
  report.added = planned.map((p) => ({ account: p.account.name, username: p.entry.username, where: p.entry.where }));
  if (!o.dryRun) await insert(o.pool, planned, o.at);
  return report;
}

async function trackedBy(repo: TrackedUserRepository, cache: Map<number, Set<string>>, accountId: number): Promise<Set<string>> {
  let names = cache.get(accountId);
  if (!names) {
    names = new Set((await repo.listTrackedUsers(accountId)).map((t) => t.username.toLowerCase()));
    cache.set(accountId, names);
  }
  return names;
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
          report.unresolved.push({ input: p.entry.username, where: p.entry.where, reason: "the service knows no such user" });
          continue;
        }
        // The service's spelling of the name, and its id, which survives a rename.
        kept.push({ ...p, entry: { ...p.entry, username: user.username }, userid: user.userid });
      }
    }
  }
  return kept;
}

async function insert(pool: PgPool, planned: readonly Planned[], at: Date): Promise<void> {
  const rows: TrackUserInput[] = planned.map((p) => ({
    accountId: p.account.id,
    username: p.entry.username,
    userid: p.userid,
    tokenKind: p.entry.options.tokenKind ?? "user",
    limitation: p.entry.options.limitation ?? null,
    at,
  }));
  await withTransaction(pool, async (tx) => {
    const repo = new TrackedUserRepository(tx);
    for (let i = 0; i < rows.length; i += INSERT_BATCH) await repo.addTrackedUsers(rows.slice(i, i + INSERT_BATCH));
  });
}
