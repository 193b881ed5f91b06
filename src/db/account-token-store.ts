// The accounts table as the token owner's store: the methods src/api/token-store.ts declares, served by
// the account repository. src/db may not import src/api (docs/ARCHITECTURE.md#what-each-folder-may-import),
// so the shapes match structurally and src/services.ts, which sees both, is where the compiler checks them.
import type { AccountRepository } from "./account.repository.ts";

type StoreMethods =
  | "findByName"
  | "findById"
  | "proveWritable"
  | "createOrUpdateFromGrant"
  | "saveRotatedToken"
  | "saveClientToken"
  | "markNeedsReauth"
  | "markExpiring"
  | "markRevoked";

export type AccountTokenStore = Pick<AccountRepository, StoreMethods>;

/** Only the token methods of `accounts`, bound, so the token owner cannot reach the rest of the table. */
export function accountTokenStore(accounts: AccountRepository): AccountTokenStore {
  return {
    findByName: (name) => accounts.findByName(name),
    findById: (id) => accounts.findById(id),
    proveWritable: () => accounts.proveWritable(),
    createOrUpdateFromGrant: (grant) => accounts.createOrUpdateFromGrant(grant),
    saveRotatedToken: (id, oldFingerprint, rotated) => accounts.saveRotatedToken(id, oldFingerprint, rotated),
    saveClientToken: (id, sealed) => accounts.saveClientToken(id, sealed),
    markNeedsReauth: (args) => accounts.markNeedsReauth(args),
    markExpiring: (args) => accounts.markExpiring(args),
    markRevoked: (args) => accounts.markRevoked(args),
  };
}
