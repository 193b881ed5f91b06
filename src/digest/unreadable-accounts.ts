// The user accounts whose stored tokens this install's key cannot read (a key lost in a move, src/crypto/install-key.ts):
// the alerts and the digest tell of them as of accounts that must log in again, which a worker skips as silently.
import { type InstallKey, unreadableTokens } from "../crypto/install-key.ts";
import { AccountRepository } from "../db/account.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";

/** User accounts the row calls usable whose stored tokens `key` cannot read, with why (src/crypto/install-key.ts). */
export async function unreadableAccounts(db: Queryable, key: InstallKey): Promise<Array<{ id: number; name: string; reason: string }>> {
  const rows = await new AccountRepository(db).list();
  return rows.flatMap((a) => {
    const why = a.kind === "user" && a.state !== "needs_reauth" && a.state !== "revoked" ? unreadableTokens(a, key) : undefined;
    return why ? [{ id: a.id, name: a.name, reason: why }] : [];
  });
}
